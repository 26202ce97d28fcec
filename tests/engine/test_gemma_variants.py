"""The Gemma variants against float64 references of their formulas: soft-capping (scores and
logits), the (1 + weight) RMSNorm (and transformers' GemmaRMSNorm), the sqrt(d_model) embedding
scale, and per-layer attention (layer_pattern expanded over the layers, a window and RoPE base
per block)."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest

from tests.engine.engine_specs import make_spec
from tests.tolerance import assert_close
from tfcli.engine.attention import ScoreMask, attend, attention
from tfcli.engine.init import init_weights
from tfcli.engine.inputs import StackInput
from tfcli.engine.model import embed, forward, layer_specs
from tfcli.engine.ops import apply_norm, softcap_
from tfcli.engine.weights import NormWeights

RNG = np.random.default_rng(13)


def _softcap(x: np.ndarray, cap: float) -> np.ndarray:
    return cap * np.tanh(x / cap)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# --- soft-capping ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softcap_is_c_tanh_x_over_c(dtype) -> None:
    x = (RNG.normal(size=(4, 7)) * 80).astype(dtype)
    expected = _softcap(x.astype(np.float64), 50.0)
    got = softcap_(x.copy(), 50.0)
    assert got.dtype == dtype
    assert_close(got, expected, ops=4)
    assert np.abs(got).max() < 50.0  # bounded by the cap


def _dense_attention(q, k, v, scale, cap, offset, window):
    """softmax(mask(cap tanh(scale q k^T / cap))) v in float64, GQA by repeating K/V."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scores = scale * q @ k.swapaxes(-1, -2)  # (B, H, T, S)
    if cap is not None:
        scores = _softcap(scores, cap)
    query_at = offset + np.arange(q.shape[2])[:, None]
    key_at = np.arange(k.shape[2])[None, :]
    hidden = key_at > query_at
    if window is not None:
        hidden |= key_at <= query_at - window
    scores = np.where(hidden, -np.inf, scores)
    return (_softmax(scores) @ v).transpose(0, 2, 1, 3)  # (B, T, H, dh)


@pytest.mark.parametrize("window", [None, 3])
@pytest.mark.parametrize("offset", [0, 4])
def test_attention_softcap_caps_the_scaled_scores_before_the_mask(window, offset) -> None:
    q = RNG.normal(size=(2, 4, 5, 8)) * 3
    k, v = RNG.normal(size=(2, 2, 5 + offset, 8)) * 3, RNG.normal(size=(2, 2, 5 + offset, 8))
    got = attend(q, k, v, 0.7, ScoreMask(offset, window, softcap=5.0))
    assert_close(got, _dense_attention(q, k, v, 0.7, 5.0, offset, window), ops=64)
    # the cap changes the result (scores of |x| ~ 20 are squeezed into (-5, 5))
    assert not np.allclose(got, _dense_attention(q, k, v, 0.7, None, offset, window))


def test_final_logit_softcap_caps_the_head_output() -> None:
    spec = make_spec("gemma_hybrid")
    weights = init_weights(spec, seed=3, dtype=np.float64)
    tokens = RNG.integers(0, spec.vocab_size, size=(2, 9))
    raw = forward(spec.replace(final_logit_softcap=None), weights, tokens).logits
    capped = forward(spec, weights, tokens).logits
    assert_close(capped, _softcap(raw, spec.final_logit_softcap), ops=8)


# --- the (1 + weight) norm -------------------------------------------------------------------


def test_unit_offset_rmsnorm_matches_gemma_rmsnorm(torch: ModuleType) -> None:
    from transformers.models.gemma.modeling_gemma import GemmaRMSNorm

    x, w = RNG.normal(size=(3, 5, 16)), RNG.normal(size=16) * 0.3
    expected = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * (1 + w)
    got = apply_norm("rmsnorm", NormWeights(w, None), x, 1e-6, unit_offset=True)
    assert_close(got, expected, ops=16)
    hf = GemmaRMSNorm(16, eps=1e-6).double()
    with torch.no_grad():
        hf.weight.copy_(torch.from_numpy(w))
        # GemmaRMSNorm computes in float32 whatever the input (x.float()): float32 rounding
        assert_close(got, hf(torch.from_numpy(x)).numpy(), ops=16, dtype=np.float32)


def test_unit_offset_leaves_the_stored_weight_and_other_specs_alone() -> None:
    x, w = RNG.normal(size=(2, 8)), RNG.normal(size=8)
    kept = w.copy()
    plain = apply_norm("rmsnorm", NormWeights(w, None), x, 1e-6)
    apply_norm("rmsnorm", NormWeights(w, None), x, 1e-6, unit_offset=True)
    np.testing.assert_array_equal(w, kept)
    assert_close(plain, x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w, ops=16)


def test_random_unit_offset_norms_start_at_the_identity_scale() -> None:
    spec = make_spec("gemma_hybrid")
    weights = init_weights(spec, seed=1, dtype=np.float64)
    block = weights.decoder.blocks[0]
    assert not block.attn_norm.scale.any() and not weights.decoder.final_norm.scale.any()
    # the same weights with ones and no offset give the same model
    plain = spec.replace(norm_unit_offset=False)
    ones = init_weights(plain, seed=1, dtype=np.float64)
    tokens = RNG.integers(0, spec.vocab_size, size=(1, 6))
    assert_close(forward(spec, weights, tokens).logits, forward(plain, ones, tokens).logits,
                 ops=64)


# --- embedding scale -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embeddings_are_scaled_by_sqrt_d_model(dtype) -> None:
    spec = make_spec("gemma_hybrid")
    weights = init_weights(spec, seed=2, dtype=dtype)
    tokens = RNG.integers(0, spec.vocab_size, size=(2, 5))
    got = embed(spec, weights, tokens, np.arange(5)[None])
    # transformers: torch.tensor(sqrt(d)) (float32) cast to the weights' dtype
    factor = np.float64(np.float32(np.sqrt(spec.d_model)))
    assert got.dtype == dtype
    assert_close(got, np.asarray(weights.token_embedding, np.float64)[tokens] * factor, ops=2)


# --- per-layer attention ---------------------------------------------------------------------


def test_layer_pattern_repeats_over_the_layers() -> None:
    spec = make_spec("gemma_hybrid", n_layers=7,
                     layer_pattern=["local", "local", "global"])
    assert spec.layer_kinds == ("local", "local", "global") * 2 + ("local",)
    # a full-length list (a config's layer_types) is the same thing
    full = spec.replace(layer_pattern=list(spec.layer_kinds))
    assert full.layer_kinds == spec.layer_kinds
    # without a pattern: every layer local with a window, global without
    assert make_spec("mistral_window", n_layers=3).layer_kinds == ("local",) * 3
    assert make_spec("gpt", n_layers=3).layer_kinds == ("global",) * 3


def test_each_block_gets_its_window_and_rope_base() -> None:
    spec = make_spec("gemma_hybrid", n_layers=4, rope_theta=5e5,
                     rope_scaling={"type": "linear", "factor": 4.0})
    views = layer_specs(spec, 4)
    local, global_ = views[0], views[1]
    assert views == [local, global_, local, global_]
    assert (local.sliding_window, local.rope_theta, local.rope_scaling) == (3, 100.0, None)
    assert (global_.sliding_window, global_.rope_theta) == (None, 5e5)
    assert global_.rope_scaling == spec.rope_scaling
    # without rope_local_theta, local layers keep the spec's RoPE
    same = layer_specs(spec.replace(rope_local_theta=None), 2)[0]
    assert (same.rope_theta, same.rope_scaling) == (5e5, spec.rope_scaling)


def test_a_hybrid_stack_runs_each_block_as_its_kind() -> None:
    """Block 0 (local) attends like a spec with the window and the local base; block 1 (global)
    like one without a window: checked on the attention outputs of a 9-token input (> window)."""
    spec = make_spec("gemma_hybrid")
    weights = init_weights(spec, seed=4, dtype=np.float64)
    x = RNG.normal(size=(2, 9, spec.d_model))
    inputs = StackInput.over(9, True)
    plain = spec.replace(layer_pattern=None, rope_local_theta=None)
    local = plain.replace(rope_theta=100.0)
    glob = plain.replace(sliding_window=None)
    views = layer_specs(spec, 2)
    for view, ref, block in zip(views, (local, glob), weights.decoder.blocks):
        assert_close(attention(view, block.attn, x, inputs), attention(ref, block.attn, x, inputs),
                     ops=4)
    # the window and the base matter: the two kinds differ on this input
    w = weights.decoder.blocks[0].attn
    assert not np.allclose(attention(local, w, x, inputs), attention(glob, w, x, inputs))
