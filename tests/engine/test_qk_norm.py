"""qk_norm: per_head against a float64 reference of its formula, and where it sits: after the
q/k projections, before RoPE (Qwen3: q_norm(q_proj(x).view(..., H, dh)), then rotary)."""

from __future__ import annotations

import numpy as np

from tfcli.engine.attention import attention
from tfcli.engine.init import init_weights
from tfcli.engine.inputs import StackInput
from tfcli.engine.positions import apply_rope, rope_tables
from tfcli.spec import Spec

SPEC = Spec(name="qk", family="decoder", vocab_size=16, max_seq_len=16, d_model=32, n_heads=4,
            n_kv_heads=2, d_head=8, d_ff=64, n_layers=1, activation="swiglu", norm="rmsnorm",
            norm_eps=1e-6, positions="rope", bias=False, attention_bias=True,
            attention_out_bias=False, qk_norm="per_head")


def _rms(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _reference(w, x: np.ndarray) -> np.ndarray:
    """Causal GQA attention with per-head RMS q/k norms, written out in float64."""
    B, T, _ = x.shape
    H, Hkv, dh = SPEC.n_heads, SPEC.kv_heads, SPEC.head_dim
    q = (x @ w.wq + w.bq).reshape(B, T, H, dh).transpose(0, 2, 1, 3)
    k = (x @ w.wk + w.bk).reshape(B, T, Hkv, dh).transpose(0, 2, 1, 3)
    v = (x @ w.wv + w.bv).reshape(B, T, Hkv, dh).transpose(0, 2, 1, 3)
    q, k = _rms(q, w.q_norm.scale, SPEC.norm_eps), _rms(k, w.k_norm.scale, SPEC.norm_eps)
    cos, sin = rope_tables(np.arange(T)[None], dh, SPEC.rope_theta, np.float64)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    k, v = np.repeat(k, H // Hkv, axis=1), np.repeat(v, H // Hkv, axis=1)
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(dh)
    scores[..., np.triu(np.ones((T, T), dtype=bool), 1)] = -np.inf
    out = (_softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(B, T, H * dh)
    return out @ w.wo  # attention_out_bias: false


def test_per_head_qk_norm_matches_the_float64_formula() -> None:
    weights = init_weights(SPEC, seed=3, dtype=np.float64)
    w = weights.decoder.blocks[0].attn
    rng = np.random.default_rng(0)
    w.q_norm.scale[:] = rng.normal(1.0, 0.3, SPEC.head_dim)  # not all ones: the weight counts
    w.k_norm.scale[:] = rng.normal(1.0, 0.3, SPEC.head_dim)
    for b in (w.bq, w.bk, w.bv):
        b[:] = rng.normal(0.0, 0.5, b.shape)
    assert w.bo is None
    x = rng.normal(size=(2, 6, SPEC.d_model))
    got = attention(SPEC, w, x, StackInput.over(6, causal=True))
    np.testing.assert_allclose(got, _reference(w, x), rtol=1e-12, atol=1e-12)
    # and the norm changes the result (a weight left out would not pass the line above)
    w.q_norm = w.k_norm = None
    plain = attention(SPEC, w, x, StackInput.over(6, causal=True))
    assert np.abs(plain - got).max() > 1e-3
