"""Multi-head attention (Vaswani et al. 2017, section 3.2): self or cross, causal or not, with
grouped K/V heads (GQA/MQA, Ainslie et al. 2023) and an optional KV cache.

GQA never repeats K/V: the `group` query heads that share one K/V head are folded into the
query-length axis, so each K/V head meets its queries in one (group*T, dh) @ (dh, S) matmul.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfcli.engine.ops import Observer, additive_mask, softmax_
from tfcli.engine.positions import apply_rope, default_positions, rope_tables
from tfcli.engine.weights import AttentionWeights
from tfcli.spec import Spec

Array = np.ndarray


def _project(x: Array, w: Array, b: Array | None) -> Array:
    out = x @ w  # (B, T, d) -> (B, T, width)
    if b is not None:
        out += b
    return out


def _split_heads(x: Array, n_heads: int) -> Array:
    batch, length, _ = x.shape
    return x.reshape(batch, length, n_heads, -1).transpose(0, 2, 1, 3)  # (B, T, H*dh) -> (B, H, T, dh)


def _merge_heads(x: Array) -> Array:
    batch, n_heads, length, d_head = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, length, n_heads * d_head)  # (B, H, T, dh) -> (B, T, H*dh)


def _fused_qkv(w: AttentionWeights) -> tuple[Array, Array | None]:
    """[wq | wk | wv] (d, (H + 2 Hkv) dh) and its bias, built once and kept on `w`.

    The fields of `w` stay the source of truth: the copy is rebuilt whenever any of them is
    replaced by another array (in-place writes into them after the first call are not seen).
    """
    parts = (w.wq, w.wk, w.wv, w.bq, w.bk, w.bv)
    cached = w.__dict__.get("_fused_qkv")
    if cached is None or any(a is not b for a, b in zip(cached[0], parts)):
        weight = np.concatenate([w.wq, w.wk, w.wv], axis=1)  # (d, (H + 2 Hkv) dh)
        bias = None if w.bq is None else np.concatenate([w.bq, w.bk, w.bv])
        cached = (parts, weight, bias)
        w.__dict__["_fused_qkv"] = cached
    return cached[1], cached[2]


def _self_qkv(spec: Spec, w: AttentionWeights, x: Array) -> tuple[Array, Array, Array]:
    """Q (B, H, T, dh), K and V (B, Hkv, T, dh) from one fused projection."""
    batch, length, _ = x.shape
    weight, bias = _fused_qkv(w)
    qkv = _project(x, weight, bias)  # (B, T, d) -> (B, T, (H + 2 Hkv) dh)
    q_width = spec.n_heads * spec.head_dim
    kv_width = spec.kv_heads * spec.head_dim
    q = _split_heads(qkv[..., :q_width], spec.n_heads)  # (B, H, T, dh)
    k = _split_heads(qkv[..., q_width : q_width + kv_width], spec.kv_heads)  # (B, Hkv, T, dh)
    v = _split_heads(qkv[..., q_width + kv_width :], spec.kv_heads)  # (B, Hkv, T, dh)
    return q, k, v


def _cross_kv(spec: Spec, w: AttentionWeights, context: Array, cache: Any, layer: int) -> tuple[Array, Array]:
    """K, V (B, Hkv, S, dh) over the encoder output, computed once per sequence when cached."""
    if cache is not None:
        stored = cache.cross(layer)
        if stored is not None:
            return stored
    k = _split_heads(_project(context, w.wk, w.bk), spec.kv_heads)  # (B, S, d) -> (B, Hkv, S, dh)
    v = _split_heads(_project(context, w.wv, w.bv), spec.kv_heads)  # (B, S, d) -> (B, Hkv, S, dh)
    return cache.set_cross(layer, k, v) if cache is not None else (k, v)


def attend(q: Array, k: Array, v: Array, scale: float, bias: Array | None,
           observe: Observer | None = None, path: str = "") -> Array:
    """softmax(scale q k^T + bias) v with K/V shared by groups of query heads.

    q (B, H, T, dh); k, v (B, Hkv, S, dh); bias broadcastable to (B, H, T, S), -inf = masked.
    Returns (B, H, T, dh).
    """
    batch, n_heads, length, d_head = q.shape
    n_kv, n_keys = k.shape[1], k.shape[2]
    group = n_heads // n_kv
    q = (q * scale).reshape(batch, n_kv, group * length, d_head)  # (B, H, T, dh) -> (B, Hkv, g*T, dh)
    scores = np.matmul(q, k.swapaxes(-1, -2))  # (B, Hkv, g*T, S)
    scores = scores.reshape(batch, n_heads, length, n_keys)  # (B, Hkv, g*T, S) -> (B, H, T, S)
    if bias is not None:
        scores += bias
    if observe is not None:
        observe(path, "scores", scores.shape)
    softmax_(scores)
    if observe is not None:
        observe(path, "softmax", scores.shape)
    probs = scores.reshape(batch, n_kv, group * length, n_keys)  # (B, H, T, S) -> (B, Hkv, g*T, S)
    out = np.matmul(probs, v)  # (B, Hkv, g*T, dh)
    out = out.reshape(batch, n_heads, length, d_head)  # (B, Hkv, g*T, dh) -> (B, H, T, dh)
    if observe is not None:
        observe(path, "weighted_sum", out.shape)
    return out


def _score_bias(
    causal: bool, key_mask: Array | None, position_bias: Array | None,
    n_queries: int, n_keys: int, offset: int, dtype: np.dtype,
) -> Array | None:
    """Mask (0 / -inf) plus T5 position bias, broadcastable to (B, H, T, S)."""
    mask = additive_mask(
        n_queries, n_keys, causal=causal, key_mask=key_mask, dtype=dtype, query_offset=offset
    )
    if position_bias is None:
        return mask
    return position_bias if mask is None else position_bias + mask


def attention(
    spec: Spec,
    w: AttentionWeights,
    x: Array,
    *,
    context: Array | None = None,
    causal: bool,
    key_mask: Array | None = None,
    position_bias: Array | None = None,
    positions: Array | None = None,
    cache: Any = None,
    layer: int = 0,
    observe: Observer | None = None,
    path: str = "",
) -> Array:
    """Multi-head attention: x (B, T, d) -> (B, T, d).

    context (B, S, d) makes it cross-attention (keys and values from the encoder). key_mask
    (B, S) is True for real keys. positions (B, T) int feed RoPE. With a KVCache, self-attention
    writes this step's K/V at cache.pos and attends over everything cached so far; the caller
    passes key_mask and position_bias covering those S = cache.pos + T keys.
    """
    offset = 0
    if context is None:
        q, k, v = _self_qkv(spec, w, x)  # (B, H, T, dh), (B, Hkv, T, dh) x2
        if spec.positions == "rope":
            if positions is None:
                start = cache.pos if cache is not None else 0
                positions = default_positions(x.shape[0], x.shape[1], start)
            cos, sin = rope_tables(positions, spec.head_dim, spec.rope_theta, x.dtype)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cache is not None:
            offset = cache.pos
            k, v = cache.update(layer, offset, k, v)  # (B, Hkv, pos + T, dh) views
    else:
        q = _split_heads(_project(x, w.wq, w.bq), spec.n_heads)  # (B, T, d) -> (B, H, T, dh)
        k, v = _cross_kv(spec, w, context, cache, layer)  # (B, Hkv, S, dh) x2
    if observe is not None:
        observe(path, "q_proj", q.shape)
        observe(path, "k_proj", k.shape)
        observe(path, "v_proj", v.shape)
    bias = _score_bias(causal, key_mask, position_bias, q.shape[2], k.shape[2], offset, x.dtype)
    out = attend(q, k, v, spec.scale, bias, observe, path)  # (B, H, T, dh)
    out = _project(_merge_heads(out), w.wo, w.bo)  # (B, T, H*dh) -> (B, T, d)
    if observe is not None:
        observe(path, "out_proj", out.shape)
    return out
