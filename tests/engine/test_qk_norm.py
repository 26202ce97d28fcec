"""qk_norm against a float64 reference of its formula, and where it sits: after the q/k
projections, before RoPE. per_head (Qwen3: q_norm(q_proj(x).view(..., H, dh)), then rotary);
full (OLMo 2: q_norm(q_proj(x)) over all H * dh, then the head split and rotary)."""

from __future__ import annotations

import numpy as np
import pytest

from tfcli.engine.attention import attention
from tfcli.engine.init import init_weights
from tfcli.engine.inputs import StackInput
from tfcli.engine.positions import apply_rope, rope_tables
from tfcli.spec.model import Spec

SPEC = Spec(name="qk", family="decoder", vocab_size=16, max_seq_len=16, d_model=32, n_heads=4,
            n_kv_heads=2, d_head=8, d_ff=64, n_layers=1, activation="swiglu", norm="rmsnorm",
            norm_eps=1e-6, positions="rope", bias=False, attention_bias=True,
            attention_out_bias=False, qk_norm="per_head")


def _rms(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _heads(x: np.ndarray, n: int) -> np.ndarray:
    B, T, _ = x.shape
    return x.reshape(B, T, n, -1).transpose(0, 2, 1, 3)


def _reference(w, x: np.ndarray, kind: str) -> np.ndarray:
    """Causal GQA attention with RMS q/k norms of `kind`, written out in float64."""
    B, T, _ = x.shape
    H, Hkv, dh = SPEC.n_heads, SPEC.kv_heads, SPEC.head_dim
    q, k, v = x @ w.wq + w.bq, x @ w.wk + w.bk, x @ w.wv + w.bv
    if kind == "full":
        q, k = _rms(q, w.q_norm.scale, SPEC.norm_eps), _rms(k, w.k_norm.scale, SPEC.norm_eps)
    q, k, v = _heads(q, H), _heads(k, Hkv), _heads(v, Hkv)
    if kind == "per_head":
        q, k = _rms(q, w.q_norm.scale, SPEC.norm_eps), _rms(k, w.k_norm.scale, SPEC.norm_eps)
    cos, sin = rope_tables(np.arange(T)[None], dh, SPEC.rope_theta, np.float64)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    k, v = np.repeat(k, H // Hkv, axis=1), np.repeat(v, H // Hkv, axis=1)
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(dh)
    scores[..., np.triu(np.ones((T, T), dtype=bool), 1)] = -np.inf
    out = (_softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(B, T, H * dh)
    return out @ w.wo  # attention_out_bias: false


@pytest.mark.parametrize(("kind", "widths"), [("per_head", (8, 8)), ("full", (32, 16))])
def test_qk_norm_matches_the_float64_formula(kind: str, widths: tuple[int, int]) -> None:
    spec = SPEC.replace(qk_norm=kind)
    assert spec.qk_norm_widths == widths
    w = init_weights(spec, seed=3, dtype=np.float64).decoder.blocks[0].attn
    rng = np.random.default_rng(0)
    w.q_norm.scale[:] = rng.normal(1.0, 0.3, widths[0])  # not all ones: the weight counts
    w.k_norm.scale[:] = rng.normal(1.0, 0.3, widths[1])
    for b in (w.bq, w.bk, w.bv):
        b[:] = rng.normal(0.0, 0.5, b.shape)
    assert w.bo is None
    x = rng.normal(size=(2, 6, SPEC.d_model))
    got = attention(spec, w, x, StackInput.over(6, causal=True))
    np.testing.assert_allclose(got, _reference(w, x, kind), rtol=1e-12, atol=1e-12)
    # and the norm changes the result (a weight left out would not pass the line above)
    w.q_norm = w.k_norm = None
    plain = attention(spec, w, x, StackInput.over(6, causal=True))
    assert np.abs(plain - got).max() > 1e-3


@pytest.mark.parametrize("kind", ["per_head", "full"])
def test_counts_allocations_and_trace_rows_agree(kind: str) -> None:
    from tfcli.analysis.trace.build import build_trace
    from tfcli.analysis.trace.check import execute_check
    from tfcli.engine.weights import count_parameters
    from tfcli.spec.counts import total_parameters

    spec = SPEC.replace(qk_norm=kind, n_layers=2)
    q_width, k_width = spec.qk_norm_widths
    assert total_parameters(spec) - total_parameters(spec.replace(qk_norm="none")) == \
        2 * (q_width + k_width)
    assert count_parameters(init_weights(spec), spec) == total_parameters(spec)
    report = build_trace(spec, batch=2, seq_len=5)
    assert [r.op for r in report.rows].count("q_norm") == 2
    assert execute_check(spec, report).ok
