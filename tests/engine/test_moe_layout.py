"""MoE layout fields (issue 15, Qwen MoE): expert width apart from d_ff, shared experts and their
sigmoid gate, which blocks are MoE (moe_layer_step, dense_layers), top-k renormalisation on/off.

Each is checked against a float64 reference of its formula written out here (rtol 1e-12), and
the defaults against Mixtral's behaviour (nothing changes when the new fields are unset).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine.engine_specs import make_spec
from tfcli.engine.ffn import moe_ffn, route
from tfcli.engine.init import init_weights
from tfcli.engine.weights import FFNWeights, MoEWeights
from tfcli.core.errors import SpecConsistencyError
from tfcli.spec.counts import components, inactive_expert_parameters, total_parameters

TIGHT = {"rtol": 1e-12, "atol": 1e-13}


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def _swiglu_ffn(w: FFNWeights, x: np.ndarray) -> np.ndarray:
    """down(silu(x W_gate) * (x W_up)), one token x (d,)."""
    return (_silu(x @ w.w_gate) * (x @ w.w_up)) @ w.w_down


def _reference(spec, w: MoEWeights, x: np.ndarray) -> np.ndarray:
    """One token at a time: softmax over the experts, the k largest, optionally renormalised;
    their FFNs weighed; plus sigmoid(x . g) times the shared FFN."""
    out = np.zeros_like(x)
    for n, token in enumerate(x):
        logits = token @ w.router
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        top = np.argsort(-probs, kind="stable")[: spec.experts_per_token]
        weights = probs[top] / (probs[top].sum() if spec.norm_topk_prob else 1.0)
        out[n] = sum(p * _swiglu_ffn(w.experts[e], token) for e, p in zip(top, weights))
        if w.shared is not None:
            gate = 1.0 / (1.0 + np.exp(-(token @ w.shared_gate)[0])) if spec.shared_expert_gate else 1.0
            out[n] += gate * _swiglu_ffn(w.shared, token)
    return out


def _moe_block(spec) -> MoEWeights:
    weights = init_weights(spec, seed=3, dtype=np.float64)
    block = next(b.ffn for b in weights.decoder.blocks if isinstance(b.ffn, MoEWeights))
    return block


@pytest.mark.parametrize("changes", [
    {},  # the qwen_moe variant: gated shared expert, no renormalisation
    {"norm_topk_prob": True},
    {"shared_expert_gate": False},
    {"n_shared_experts": 2, "shared_expert_d_ff": 8, "shared_expert_gate": False},
    {"n_shared_experts": 0, "shared_expert_d_ff": None, "shared_expert_gate": False},
])
def test_moe_ffn_matches_the_float64_formula(changes: dict[str, object]) -> None:
    spec = make_spec("qwen_moe", init_std=0.3, **changes)
    w = _moe_block(spec)
    x = np.random.default_rng(0).standard_normal((2, 7, spec.d_model))
    got = moe_ffn(spec, w, x)
    want = _reference(spec, w, x.reshape(-1, spec.d_model)).reshape(x.shape)
    np.testing.assert_allclose(got, want, **TIGHT)


def test_shared_experts_are_one_ffn_of_their_summed_width() -> None:
    """Two shared experts of width 8 side by side: one (d, 16) / (16, d) FFN equals their sum."""
    spec = make_spec("qwen_moe", n_shared_experts=2, shared_expert_d_ff=8, shared_expert_gate=False)
    w = _moe_block(spec)
    assert w.shared is not None and w.shared.w_up.shape == (spec.d_model, 16)
    x = np.random.default_rng(1).standard_normal((5, spec.d_model))
    halves = [FFNWeights(w.shared.w_up[:, s], w.shared.w_down[s], w.shared.w_gate[:, s])
              for s in (slice(0, 8), slice(8, 16))]
    together = np.stack([_swiglu_ffn(w.shared, t) for t in x])
    apart = np.stack([sum(_swiglu_ffn(h, t) for h in halves) for t in x])
    np.testing.assert_allclose(together, apart, **TIGHT)


def test_routing_without_renormalisation_keeps_the_softmax_probabilities() -> None:
    logits = np.array([[2.0, 1.0, 0.0, -1.0]])
    probs = np.exp(logits) / np.exp(logits).sum()
    top, kept = route(logits, 2, renormalise=False)
    assert top.tolist() == [[0, 1]]
    np.testing.assert_allclose(kept, probs[:, :2], **TIGHT)
    _, renormalised = route(logits, 2)  # Mixtral's default
    np.testing.assert_allclose(renormalised, probs[:, :2] / probs[:, :2].sum(), **TIGHT)


def test_which_blocks_are_moe() -> None:
    """Qwen's rule: (i + 1) % decoder_sparse_step == 0 and i not in mlp_only_layers."""
    spec = make_spec("qwen_moe", n_layers=8, moe_layer_step=2, dense_layers=[3, 4])
    want = [(i + 1) % 2 == 0 and i not in (3, 4) for i in range(8)]
    assert [spec.moe_layer(i) for i in range(8)] == want
    assert spec.moe_layer_count(8) == sum(want) == 3
    blocks = init_weights(spec).decoder.blocks
    assert [isinstance(b.ffn, MoEWeights) for b in blocks] == want
    dense = next(b.ffn for b in blocks if isinstance(b.ffn, FFNWeights))
    assert dense.w_up.shape == (spec.d_model, spec.d_ff)  # dense blocks keep d_ff
    assert blocks[1].ffn.experts[0].w_up.shape == (spec.d_model, spec.expert_d_ff)


def test_params_count_each_kind_of_block_and_the_active_experts() -> None:
    """By hand: d 32, d_ff 48, 4 experts of 16 (2 routed), one shared of 24 with a gate;
    blocks 1 and 3 of 4 MoE (step 2), block 3 dense again: one MoE block, three dense."""
    spec = make_spec("qwen_moe")
    d, expert, shared, dense = 32, 3 * 32 * 16, 3 * 32 * 24, 3 * 32 * 48
    ffn = {c.path: c.repeat for c in components(spec) if ".ffn" in c.path}
    assert ffn["decoder.blocks.*.ffn.w_up"] == 3 and ffn["decoder.blocks.*.ffn.router"] == 1
    moe_block = d * 4 + 4 * expert + shared + d  # router, experts, shared expert, its gate
    ffn_total = 3 * dense + moe_block
    others = total_parameters(make_spec("qwen_moe", n_experts=0, experts_per_token=0,
                                        expert_d_ff=None, n_shared_experts=0,
                                        shared_expert_d_ff=None, shared_expert_gate=False,
                                        moe_layer_step=1, dense_layers=None,
                                        norm_topk_prob=True)) - 4 * dense
    assert total_parameters(spec) == others + ffn_total
    assert inactive_expert_parameters(spec) == (4 - 2) * expert  # one MoE block


def test_mixtral_defaults_are_unchanged() -> None:
    spec = make_spec("moe")
    assert (spec.expert_width, spec.shared_width, spec.mixed_ffn_layers) == (spec.d_ff, 0, False)
    assert all(isinstance(b.ffn, MoEWeights) and b.ffn.shared is None
               for b in init_weights(spec).decoder.blocks)


@pytest.mark.parametrize(("changes", "field"), [
    ({"n_experts": 0, "experts_per_token": 0, "norm_topk_prob": True, "moe_layer_step": 1,
      "dense_layers": None, "n_shared_experts": 0, "shared_expert_d_ff": None,
      "shared_expert_gate": False}, "expert_d_ff"),
    ({"n_shared_experts": 0, "shared_expert_gate": False}, "shared_expert_d_ff"),
    ({"n_shared_experts": 0, "shared_expert_d_ff": None}, "shared_expert_gate"),
    ({"dense_layers": [4]}, "dense_layers"),
    ({"dense_layers": [-1]}, "dense_layers"),
    ({"dense_layers": [1, 1]}, "dense_layers"),
    ({"dense_layers": [1, 3]}, "dense_layers"),  # no MoE block left
    ({"moe_layer_step": 5, "dense_layers": None}, "moe_layer_step"),
])
def test_inconsistent_moe_fields_are_refused_by_name(changes: dict[str, object],
                                                     field: str) -> None:
    with pytest.raises(SpecConsistencyError) as caught:
        make_spec("qwen_moe", **changes)
    assert caught.value.field == field
