"""arrange_weights: the decode-friendly memory layout changes no value, shape or count, and the
engine gives the same results with and without it."""

from __future__ import annotations

import copy
import math
import dataclasses
import pickle

import numpy as np
import pytest
from tests.engine.engine_specs import BASE, VARIANTS, make_spec
from tests.tolerance import assert_close

from tfcli.spec.counts import components, total_parameters
from tfcli.engine.model import ModelInput, forward
from tfcli.engine.init import init_weights
from tfcli.engine.layout import arrange_weights, fuse_columns, fused_array, fused_projection
from tfcli.engine.weights import FFNWeights, MoEWeights, count_parameters, iter_arrays


# Fused and unfused weights (and C or F order) reach BLAS in other call shapes, which may sum in
# another order: about d_model + d_ff roundings a layer (the projections' and the down product's
# sums), for up to 5 layers (t5's), and the head's d_model more.
FORWARD_OPS = 5 * (BASE["d_model"] + BASE["d_ff"]) + BASE["d_model"]


def _plain(obj: object, order: str = "C", memo: dict[int, object] | None = None) -> object:
    """A deep copy with every array a fresh one of its own in `order`: no fusion. What was
    shared stays shared (one block listed by every layer under shared_layers)."""
    memo = {} if memo is None else memo
    if id(obj) in memo:
        return memo[id(obj)]
    if isinstance(obj, np.ndarray):
        out: object = np.array(obj, order=order, copy=True)
    elif isinstance(obj, list):
        out = [_plain(item, order, memo) for item in obj]
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = dataclasses.replace(obj, **{f.name: _plain(getattr(obj, f.name), order, memo)
                                          for f in dataclasses.fields(obj)})
    else:
        return obj
    memo[id(obj)] = out
    return out


def test_fuse_columns_returns_views_of_one_array():
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(4, n)) for n in (3, 2, 2)]
    views = fuse_columns(parts)
    base = fused_array(*views)
    assert base is not None and base.shape == (4, 7)
    for view, part in zip(views, parts):
        np.testing.assert_array_equal(view, part)
        assert view.base is base


def test_fused_array_refuses_other_layouts():
    a, b, c = fuse_columns([np.ones((3, 2)), np.zeros((3, 2)), np.ones((3, 1))])
    assert fused_array(a, b, c) is not None
    assert fused_array(b, a, c) is None  # out of order
    assert fused_array(a, b) is None  # not the whole array
    assert fused_array(a, b, c.copy()) is None  # one of them separate
    assert fused_array(a, None, c) is None
    assert fused_array(np.ones((3, 2)), np.ones((3, 2))) is None


def test_fused_projection_notices_a_reassigned_field():
    spec = make_spec("gpt")
    attn = init_weights(spec, seed=0).decoder.blocks[0].attn
    names, biases = ("wq", "wk", "wv"), ("bq", "bk", "bv")
    fused = fused_projection(attn, names, biases)
    assert fused is not None and fused[0].shape == (spec.d_model, 3 * spec.d_model)
    assert fused_projection(attn, names, biases) is fused  # memoised
    attn.wk = attn.wk.copy()
    assert fused_projection(attn, names, biases) is None


def test_fused_projection_falls_back_when_only_some_fields_have_biases():
    spec = make_spec("gpt")
    attn = init_weights(spec, seed=0).decoder.blocks[0].attn
    attn.bq = None  # bk, bv still set: one fused product would drop them
    assert fused_projection(attn, ("wq", "wk", "wv"), ("bq", "bk", "bv")) is None


@pytest.mark.parametrize("variant", ["gpt", "llama_gqa"])
def test_partial_biases_are_all_applied(variant):
    """Q/K/V and gate/up with biases on only some fields: every bias counts, at decode-step
    sizes (whole products) and prompt sizes (split products) alike."""
    spec = make_spec(variant, bias=True)
    w = init_weights(spec, seed=0)
    rng = np.random.default_rng(1)
    for block in w.decoder.blocks:
        block.attn.bq = None  # (a K bias would not show: it shifts a query's scores equally)
        block.attn.bv = rng.normal(size=block.attn.bv.shape).astype(np.float32)
        if block.ffn.w_gate is not None:
            block.ffn.b_gate = None
            block.ffn.b_up = rng.normal(size=block.ffn.b_up.shape).astype(np.float32)
    # The reference spells the missing biases as zeros: every field then has a bias, so no
    # code path can treat it differently for having some bias missing.
    expected = _plain(w)
    for block in expected.decoder.blocks:
        block.attn.bq = np.zeros(block.attn.wq.shape[1], dtype=block.attn.wq.dtype)
        if block.ffn.w_gate is not None:
            block.ffn.b_gate = np.zeros(block.ffn.w_gate.shape[1], dtype=block.ffn.w_gate.dtype)
    for length in (5, 40):
        tokens = rng.integers(0, spec.vocab_size, size=(1, length))
        assert_close(forward(spec, w, tokens).logits, forward(spec, expected, tokens).logits,
                     ops=FORWARD_OPS)


@pytest.mark.parametrize("duplicate", [copy.deepcopy, lambda w: pickle.loads(pickle.dumps(w))])
def test_copied_weights_do_not_reuse_the_originals_fused_arrays(duplicate):
    spec = make_spec("llama_gqa")
    w = init_weights(spec, seed=0)
    tokens = np.array([[3, 1, 4, 1, 5]])
    before = forward(spec, w, tokens).logits  # memoises the fused Q/K/V and gate/up
    twin = duplicate(w)
    for block in twin.decoder.blocks:
        for name in ("wq", "wk", "wv"):
            getattr(block.attn, name)[...] = 0.0  # in place: the fields' identity is unchanged
    after = forward(spec, twin, tokens).logits
    # Zeroed Q/K/V leave logits near zero: the tolerance scales with the largest, not each one.
    assert_close(after, forward(spec, _plain(twin), tokens).logits, ops=FORWARD_OPS)
    assert np.abs(after - before).max() > 1e-3
    np.testing.assert_array_equal(forward(spec, w, tokens).logits, before)  # original intact


@pytest.mark.parametrize("variant", VARIANTS)
def test_layout_keeps_the_parameter_count(variant):
    spec = make_spec(variant)
    weights = init_weights(spec, seed=1)
    assert count_parameters(weights, spec) == total_parameters(spec)
    assert count_parameters(_plain(weights), spec) == total_parameters(spec)
    # every array held is a counted parameter or one of the buffers params lists (router_bias)
    buffers = sum(math.prod(c.shape) * c.repeat for c in components(spec) if c.buffer)
    assert sum(a.size for a in iter_arrays(_plain(weights))) == total_parameters(spec) + buffers


@pytest.mark.parametrize("order", ["as initialised", "C", "F"])
def test_layout_is_the_documented_one(order):
    """Whatever order the arrays come in (the loader hands over transposed views)."""
    spec = make_spec("llama_gqa")  # gated FFN, untied head
    weights = init_weights(spec, seed=0)
    if order != "as initialised":
        weights = arrange_weights(_plain(weights, order))
    block = weights.decoder.blocks[0]
    assert fused_projection(block.attn, ("wq", "wk", "wv"), ("bq", "bk", "bv")) is not None
    assert isinstance(block.ffn, FFNWeights)
    assert fused_array(block.ffn.w_gate, block.ffn.w_up) is not None
    assert block.ffn.w_down.flags.f_contiguous and block.attn.wo.flags.f_contiguous
    assert weights.lm_head is not None and weights.lm_head.flags.c_contiguous
    tied = init_weights(make_spec("gpt"), seed=0)
    assert tied.lm_head is None
    assert tied.token_embedding.T.flags.c_contiguous  # the tied head's rows are contiguous
    moe = init_weights(make_spec("moe"), seed=0).decoder.blocks[0].ffn
    assert isinstance(moe, MoEWeights) and all(e.w_down.flags.f_contiguous for e in moe.experts)


@pytest.mark.parametrize("variant", VARIANTS)
def test_forward_is_the_same_with_and_without_the_layout(variant):
    spec = make_spec(variant)
    weights = init_weights(spec, seed=2, dtype=np.float64)
    plain = _plain(copy.deepcopy(weights))
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, spec.vocab_size, size=(3, 40))  # 120 rows: the split code paths
    target = None
    if spec.family == "encoder-decoder":
        target = rng.integers(0, spec.vocab_size, size=(3, 30))
    ours = forward(spec, weights, ModelInput(tokens, decoder_tokens=target))
    theirs = forward(spec, plain, ModelInput(tokens, decoder_tokens=target))
    assert_close(ours.hidden, theirs.hidden, ops=FORWARD_OPS)
    if ours.logits is not None:
        assert_close(ours.logits, theirs.logits, ops=FORWARD_OPS)
