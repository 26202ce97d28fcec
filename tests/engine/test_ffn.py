"""FFNs: rounds of rows and hidden-unit splits change nothing; MoE routing equals a per-token
all-experts computation."""

from __future__ import annotations

import dataclasses
from unittest.mock import patch

import numpy as np
import pytest

from tests.engine.engine_specs import make_spec
from tfcli.engine import ffn as ffn_module
from tfcli.engine.ffn import dense_ffn, ffn
from tfcli.engine.ops import ACTIVATIONS
from tfcli.engine.init import init_weights


@pytest.mark.parametrize("variant", ["gpt", "llama_gqa", "geglu_post", "geglu_tanh", "mqa_sinusoidal"])
@pytest.mark.parametrize("n_rows", [7, 40])
def test_split_ffn_equals_the_formula(variant, n_rows):
    """Whole products (few rows), one round split by hidden units, and many small rounds all
    give the textbook FFN; so does an unfused copy of the gate/up weights."""
    spec = make_spec(variant)
    w = init_weights(spec, seed=5, dtype=np.float64).decoder.blocks[0].ffn
    x = np.random.default_rng(0).normal(size=(2, n_rows, spec.d_model))
    act = ACTIVATIONS[{"swiglu": "silu", "geglu": "gelu", "geglu_tanh": "gelu_tanh"}.get(spec.activation, spec.activation)]

    def bias(b: np.ndarray | None) -> np.ndarray | int:
        return 0 if b is None else b

    if spec.gated:
        hidden = act(x @ w.w_gate + bias(w.b_gate)) * (x @ w.w_up + bias(w.b_up))
    else:
        hidden = act(x @ w.w_up + bias(w.b_up))
    expected = hidden @ w.w_down + bias(w.b_down)
    with patch.object(ffn_module, "HIDDEN_SLICE_BYTES", 1), \
            patch.object(ffn_module, "MIN_SPLIT_ROWS", 3):
        in_rounds = dense_ffn(spec, w, x)  # rounds of 3 rows, each split by hidden units
    np.testing.assert_allclose(in_rounds, expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dense_ffn(spec, w, x), expected, rtol=1e-12, atol=1e-14)
    unfused = dataclasses.replace(w, **{f: None if getattr(w, f) is None else getattr(w, f).copy()
                                        for f in ("w_up", "w_gate", "b_up", "b_gate")})
    np.testing.assert_allclose(dense_ffn(spec, unfused, x), expected, rtol=1e-12, atol=1e-14)


def test_moe_routes_each_token_to_its_top_k_experts():
    spec = make_spec("moe", n_experts=5, experts_per_token=2)
    w = init_weights(spec, seed=4, dtype=np.float64).decoder.blocks[0].ffn
    x = np.random.default_rng(2).normal(size=(2, 6, spec.d_model))
    expected = np.zeros_like(x)
    for b in range(2):
        for t in range(6):
            logits = x[b, t] @ w.router
            probs = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
            top = np.argsort(-probs)[:2]
            for e in top:
                expected[b, t] += probs[e] / probs[top].sum() * dense_ffn(spec, w.experts[e], x[b, t])
    np.testing.assert_allclose(ffn(spec, w, x), expected, rtol=1e-12, atol=1e-14)
