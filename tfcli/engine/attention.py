"""Multi-head attention (Vaswani et al. 2017, section 3.2): self or cross, causal or not, with
grouped K/V heads (GQA/MQA, Ainslie et al. 2023) and an optional KV cache.

GQA never repeats K/V: the `group` query heads that share one K/V head are folded into the
query-length axis, so each K/V head meets its queries in one (group*T, dh) @ (dh, S) matmul.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.cache import LayerCache
from tfcli.engine.inputs import NO_PROBE, Probe, StackInput
from tfcli.engine.ops import apply_norm, rms_norm, softcap_, softmax_, softmax_sink_
from tfcli.engine.parallel import linear, linear_split, parallel_for, split
from tfcli.engine.positions import apply_rope, rope_tables
from tfcli.engine.shaped import empty, is_shaped
from tfcli.engine.weights import AttentionWeights, NormWeights
from tfcli.spec.model import Spec


class ScoreMask(NamedTuple):
    """What hides, shifts or caps attention scores (a NamedTuple: built once per attention call)."""

    causal_offset: int | None = None  # key index of query 0; None = not causal
    # causal: query i sees keys i - window + 1 .. i only; not causal (an encoder's local
    # layers): keys j with |i - j| < window
    window: int | None = None
    key_mask: Array | None = None  # (B, S) bool, True = real key
    position_bias: Array | None = None  # broadcastable to (B, H, T, S), added to the scores
    softcap: float | None = None  # c: scores become c * tanh(scores / c) before all the above
    sinks: Array | None = None  # (H,): one more logit per head in each softmax (gpt-oss)
    # chunked attention (Llama 4): the chunk of each query (1|B, T) and key (1|B, S); a query
    # sees only the keys of its own chunk (on top of the causal mask)
    chunks: tuple[Array, Array] | None = None


def split_heads(x: Array, n_heads: int) -> Array:
    batch, length, _ = x.shape
    heads = x.reshape(batch, length, n_heads, -1)  # (B, T, H*dh) -> (B, T, H, dh)
    return heads.transpose(0, 2, 1, 3)  # (B, T, H, dh) -> (B, H, T, dh), a view


def _self_qkv(spec: Spec, w: AttentionWeights, x: Array) -> tuple[Array, Array, Array]:
    """Q (B, H, T, dh), K and V (B, Hkv, T, dh): one product when Q/K/V are fused."""
    # (B, T, d) -> (B, T, H*dh), (B, T, Hkv*dh) x2
    q, k, v = linear_split(x, w, ("wq", "wk", "wv"), ("bq", "bk", "bv"))
    if w.q_norm is not None and spec.qk_norm == "full":  # over the whole projection (OLMo 2)
        q, k = _qk_norm(spec, w, q, k)
    q = split_heads(q, spec.n_heads)  # (B, T, H*dh) -> (B, H, T, dh)
    k = split_heads(k, spec.kv_heads)  # (B, T, Hkv*dh) -> (B, Hkv, T, dh)
    v = split_heads(v, spec.kv_heads)
    if w.q_norm is not None and spec.qk_norm == "per_head" and not spec.qk_norm_after_rope:
        q, k = _qk_norm(spec, w, q, k)  # over each head's d_head
    if w.q_norm is not None and spec.qk_norm == "each_head":  # a weight per head (Command R+)
        q, k = _qk_norm(spec, _per_head(w), q, k)
    if spec.qk_norm == "l2":  # Llama 4: no weights (the same before or after RoPE's rotation)
        q, k = rms_norm(q, None, spec.norm_eps), rms_norm(k, None, spec.norm_eps)
    return q, k, v


def _temperature(spec: Spec, positions: Array, dtype: np.dtype) -> Array:
    """Llama 4's NoPE-layer query scale 1 + s ln(1 + floor((p + 1) / f)) of each position:
    positions (1|B, T) -> (1|B, 1, T, 1), broadcast over heads and d_head."""
    steps = np.floor((positions.astype(np.float64) + 1.0) / spec.nope_temperature_floor)
    scale = 1.0 + spec.nope_temperature_scale * np.log1p(steps)  # type: ignore[operator]
    return scale[:, None, :, None].astype(dtype)


def _qk_norm(spec: Spec, w: AttentionWeights, q: Array, k: Array) -> tuple[Array, Array]:
    """q/k norms before RoPE, the spec's norm over the last axis: per_head (Qwen3, Gemma 3) on
    q (B, H, T, dh) and k (B, Hkv, T, dh) with one (d_head,) weight shared by the heads; full
    (OLMo 2) on the projections q (B, T, H*dh) and k (B, T, Hkv*dh). Shapes kept."""
    return (apply_norm(spec.norm, w.q_norm, q, spec.norm_eps, spec.norm_unit_offset),
            apply_norm(spec.norm, w.k_norm, k, spec.norm_eps, spec.norm_unit_offset))


def _per_head(w: AttentionWeights) -> AttentionWeights:
    """The q/k norms' (heads, d_head) weights as (heads, 1, d_head), broadcast over (B, H, T,
    dh)."""
    def lift(norm: NormWeights) -> NormWeights:
        return NormWeights(*(None if a is None else a.reshape(a.shape[0], 1, a.shape[1])
                             for a in (norm.scale, norm.bias)))
    return replace(w, q_norm=lift(w.q_norm), k_norm=lift(w.k_norm))  # type: ignore[arg-type]


def _cross_kv(
    spec: Spec, w: AttentionWeights, context: Array, cache: LayerCache | None
) -> tuple[Array, Array]:
    """K, V (B, Hkv, S, dh) over the encoder output, computed once per sequence when cached."""
    if cache is not None:
        stored = cache.cross()
        if stored is not None:
            return stored
    k = split_heads(linear(context, w.wk, w.bk), spec.kv_heads)  # (B, S, d) -> (B, Hkv, S, dh)
    v = split_heads(linear(context, w.wv, w.bv), spec.kv_heads)  # (B, S, d) -> (B, Hkv, S, dh)
    return cache.set_cross(k, v) if cache is not None else (k, v)


QUERY_BLOCK_BYTES = 1 << 22  # ~4 MB of scores per query block: stays in cache while softmaxed
MIN_QUERY_BLOCK = 16  # very long keys still get blocks big enough for an efficient matmul


def _query_block(n_heads: int, n_keys: int, itemsize: int) -> int:
    return max(MIN_QUERY_BLOCK, QUERY_BLOCK_BYTES // (n_heads * n_keys * itemsize))


def _mask_block(scores: Array, q0: int, k0: int, mask: ScoreMask) -> None:
    """Add T5 bias and set masked scores to -inf, in place, for queries q0.. of one block.

    scores (B, H, c, K) for queries q0..q0+c-1 against keys k0..k0+K-1. On shapes nothing is
    masked: no shape changes.
    """
    if is_shaped(scores):
        return
    causal_offset, window, key_mask, position_bias, softcap, _, chunks = mask
    n_queries, n_keys = scores.shape[2], scores.shape[3]
    if softcap is not None:  # on the scaled scores, before bias and masks (Gemma 2)
        softcap_(scores, softcap)
    k1 = k0 + n_keys
    if position_bias is not None:
        rows = slice(None) if position_bias.shape[2] == 1 else slice(q0, q0 + n_queries)
        scores += position_bias[:, :, rows, k0:k1]  # (1|B, H, c, K)
    if key_mask is not None:
        hidden = ~key_mask[:, None, None, k0:k1]  # (B, 1, 1, K)
        np.copyto(scores, -np.inf, where=hidden)
    if chunks is not None:  # keys of another chunk: (1|B, 1, c, 1) against (1|B, 1, 1, K)
        query_chunk, key_chunk = chunks
        np.copyto(scores, -np.inf, where=query_chunk[:, None, q0:q0 + n_queries, None]
                  != key_chunk[:, None, None, k0:k1])
    if causal_offset is None:
        if window is not None:
            _mask_band(scores, q0, k0, window)
        return
    first = causal_offset + q0  # key index of this block's first query
    # A decode step (one query, keys up to itself) needs neither mask: skip even the aranges.
    future = first + n_queries > k1 - 1 and k1 > first + 1
    stale = 0 if window is None else first + n_queries - window - k0  # keys k0.. maybe too old
    if not future and stale <= 0:
        return
    queries = np.arange(first, first + n_queries)[:, None]  # (c, 1)
    if future:
        keys = np.arange(first + 1, k1)[None, :]  # (1, k1 - first - 1)
        np.copyto(scores[..., first + 1 - k0 :], -np.inf, where=keys > queries)
    if stale > 0:
        # Keys at or before query - window fall outside it (only the block's later queries
        # have any: k0 is the first query's first visible key).
        keys = np.arange(k0, k0 + stale)[None, :]  # (1, stale)
        np.copyto(scores[..., :stale], -np.inf, where=keys <= queries - window)


def _mask_band(scores: Array, q0: int, k0: int, window: int) -> None:
    """A bidirectional sliding window, in place: query q0 + r sees key k0 + c only when they
    lie less than `window` apart (transformers' ModernBERT local layers: |i - j| <= L // 2).
    scores (B, H, c, K); queries and keys index the same positions (self-attention, no cache)."""
    n_queries, n_keys = scores.shape[2], scores.shape[3]
    if q0 + n_queries - k0 <= window and k0 + n_keys - q0 <= window:
        return  # every pair of the block lies within the window
    queries = np.arange(q0, q0 + n_queries)[:, None]  # (c, 1)
    keys = np.arange(k0, k0 + n_keys)[None, :]  # (1, K)
    np.copyto(scores, -np.inf, where=np.abs(queries - keys) >= window)  # (c, K) broadcast


def _first_key(q0: int, causal_offset: int | None, window: int | None) -> int:
    """The first key any query of a block starting at q0 can see: 0 unless a sliding window
    hides the earlier ones (then those keys are never multiplied at all)."""
    if window is None or causal_offset is None:
        return 0
    return max(0, causal_offset + q0 - window + 1)


def _sink_rows(sinks: Array, n_kv: int, n_queries: int) -> Array:
    """The sink logit of each row of a query block's scores (B, Hkv, g*c, K), whose rows are
    each K/V head's g query heads, c queries each: sinks (H,) -> (1, Hkv, g*c, 1)."""
    per_head = sinks.reshape(n_kv, -1, 1)  # (H,) -> (Hkv, g, 1)
    return np.repeat(per_head, n_queries, axis=2).reshape(1, n_kv, -1, 1)


def attend(q: Array, k: Array, v: Array, scale: float, mask: ScoreMask = ScoreMask(),
           probe: Probe = NO_PROBE) -> Array:
    """softmax(scale q k^T + bias) v with K/V shared by groups of query heads.

    q (B, H, T, dh); k, v (B, Hkv, S, dh); `mask` (ScoreMask): causal offset, sliding window,
    key mask and position bias. Queries go in blocks, run in parallel, each small enough for its scores to stay in cache;
    a causal block never computes scores for keys after its last query (about half the work
    of a full square), nor, with a window, for keys before its first query's window.
    Returns (B, T, H, dh), token-major so that merging heads is a free reshape. On shapes
    the queries are one block.
    """
    batch, n_heads, length, d_head = q.shape
    n_kv, n_keys, d_value = k.shape[1], k.shape[2], v.shape[3]  # d_value: dh, or MLA's dv
    group = n_heads // n_kv
    out = empty((batch, length, n_heads, d_value), np.result_type(q, v), q)  # (B, T, H, dv)
    keys_t = k.swapaxes(-1, -2)  # (B, Hkv, dh, S), a view
    causal_offset, window = mask.causal_offset, mask.window

    def query_block(q0: int, q1: int) -> None:
        n_used = n_keys if causal_offset is None else min(n_keys, causal_offset + q1)
        k0 = _first_key(q0, causal_offset, window)
        q_block = q[:, :, q0:q1] * scale  # (B, H, c, dh)
        q_block = q_block.reshape(batch, n_kv, group * (q1 - q0), d_head)  # (B, Hkv, g*c, dh)
        scores = np.matmul(q_block, keys_t[..., k0:n_used])  # (B, Hkv, g*c, K)
        _mask_block(scores.reshape(batch, n_heads, q1 - q0, n_used - k0), q0, k0,
                    mask)  # the reshape is a view: masks land in `scores`
        if mask.sinks is None or is_shaped(scores):
            softmax_(scores)
        else:
            softmax_sink_(scores, _sink_rows(mask.sinks, n_kv, q1 - q0))
        mixed = np.matmul(scores, v[:, :, k0:n_used])  # (B, Hkv, g*c, dv)
        out[:, q0:q1] = mixed.reshape(batch, n_heads, q1 - q0, d_value).transpose(0, 2, 1, 3)

    block = min(_query_block(n_heads, n_keys, q.itemsize), split(length, MIN_QUERY_BLOCK))
    parallel_for(length, length if is_shaped(q) else block, query_block)
    scores = (batch, n_heads, length, n_keys)
    probe("scores", scores, (q, k), (mask.position_bias,))
    if mask.softcap is not None:  # applied per block in _mask_block, reported in trace order
        probe("softcap", scores, (scores,))
    probe("softmax", scores, (scores,), (mask.sinks,))
    probe("weighted_sum", (batch, n_heads, length, d_value), (scores, v))
    return out


def _heads_out(spec: Spec, w: AttentionWeights, qkv: tuple[Array, Array, Array],
               mask: ScoreMask, probe: Probe, sources: tuple[Array, Array]) -> Array:
    """The shared tail of self- and cross-attention: attend, merge heads, out projection.
    `sources`: what the queries and what the keys / values were projected from."""
    q, k, v = qkv
    probe("q_proj", q.shape, (sources[0],), (w.wq, w.bq))
    probe("k_proj", k.shape, (sources[1],), (w.wk, w.bk))
    probe("v_proj", v.shape, (sources[1],), (w.wv, w.bv))
    if w.q_norm is not None or spec.qk_norm == "l2":  # applied in _self_qkv, reported here
        probe("q_norm", q.shape, (q,), (w.q_norm,))
        probe("k_norm", k.shape, (k,), (w.k_norm,))
    out = attend(q, k, v, spec.scale, mask, probe)  # (B, T, H, dh)
    out = out.reshape(*out.shape[:2], -1)  # (B, T, H, dh) -> (B, T, H*dh), free
    out = linear(out, w.wo, w.bo)  # (B, T, H*dh) -> (B, T, d)
    probe("out_proj", out.shape, (q,), (w.wo, w.bo))  # (B, H, T, dh): the heads merged
    return out


def attention(spec: Spec, w: AttentionWeights, x: Array, inputs: StackInput,
              cache: LayerCache | None = None, probe: Probe = NO_PROBE) -> Array:
    """Multi-head self-attention: x (B, T, d) -> (B, T, d).

    inputs.positions (1|B, T) feed RoPE; inputs.key_mask (B, S) is True for real keys. With a
    cache, this step's K/V are written at slot inputs.start and attention runs over everything
    cached so far: key_mask and position_bias then cover those S = start + T keys.
    """
    q, k, v = _self_qkv(spec, w, x)  # (B, H, T, dh), (B, Hkv, T, dh) x2
    if spec.positions == "rope":
        interleaved = spec.rope_pairing == "interleaved"
        cos, sin = rope_tables(inputs.positions, spec.rotary_width, spec.rope_theta, x.dtype,
                               spec.rope_scaling, interleaved)  # (B, 1, T, rotary_dim) each
        q, k = apply_rope(q, cos, sin, interleaved), apply_rope(k, cos, sin, interleaved)
    if spec.qk_norm_after_rope and w.q_norm is not None:  # Hunyuan: on the rotated q and k
        q, k = _qk_norm(spec, w, q, k)
    if spec.nope_temperature_scale is not None:  # a NoPE layer's view only (layer_specs)
        q = q * _temperature(spec, inputs.positions, q.dtype)  # (B, H, T, dh)
    offset = 0
    if cache is not None:
        offset = inputs.start
        k, v = cache.update(offset, k, v)  # (B, Hkv, start + T, dh) views
    key_mask = None if inputs.key_mask is None else np.asarray(inputs.key_mask, dtype=bool)
    mask = ScoreMask(offset if inputs.causal else None, spec.sliding_window, key_mask,
                     inputs.position_bias, spec.attn_logit_softcap, w.sinks,
                     _chunks(spec, inputs))
    return _heads_out(spec, w, (q, k, v), mask, probe, (x, x))


def _chunks(spec: Spec, inputs: StackInput) -> tuple[Array, Array] | None:
    """Each query's and key's chunk, positions // sliding_window, when a local layer is
    chunked (Llama 4): transformers' chunks start at each sequence's first real token, as
    positions count from it."""
    if not spec.chunked_attention or spec.sliding_window is None or is_shaped(inputs.positions):
        return None
    size = spec.sliding_window
    return (np.asarray(inputs.positions) // size, np.asarray(inputs.key_positions) // size)


def cross_attention(spec: Spec, w: AttentionWeights, x: Array, inputs: StackInput,
                    cache: LayerCache | None = None, probe: Probe = NO_PROBE) -> Array:
    """Cross-attention of x (B, T, d) over inputs.encoder_out (B, S, d) -> (B, T, d); its K/V
    are computed once per source when cached. inputs.encoder_mask (B, S): True = real."""
    q = split_heads(linear(x, w.wq, w.bq), spec.n_heads)  # (B, T, d) -> (B, H, T, dh)
    k, v = _cross_kv(spec, w, inputs.encoder_out, cache)  # (B, Hkv, S, dh) x2
    mask = inputs.encoder_mask
    mask = ScoreMask(key_mask=None if mask is None else np.asarray(mask, dtype=bool),
                     softcap=spec.attn_logit_softcap)
    return _heads_out(spec, w, (q, k, v), mask, probe, (x, inputs.encoder_out))
