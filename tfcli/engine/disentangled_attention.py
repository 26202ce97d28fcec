"""Disentangled self-attention (DeBERTa, He et al. 2021, eq. 4; DeBERTa-v2/v3 as transformers'
DisentangledSelfAttention): content and relative position scored apart.

With R = 2 x span rows of relative-position embeddings P (the stack's table, normed once per
forward pass), rel(i, j) = i - j (log-bucketed under position_buckets) and
c(i, j) = clip(span + rel(i, j), 0, R - 1):
  scores[i, j] = (q_i . k_j + q_i . Kr[c(i, j)] (c2p) + k_j . Qr[c(j, i)'] (p2c)) / sqrt(dh (1 + n))
where Kr = P W_k (or W_pos_k), Qr = P W_q (or W_pos_q) per head, c(j, i)' = clip(span - rel(j, i)),
n the number of terms. transformers computes each term against all R rows and gathers the T
columns it needs; so does this module (2 B H T R dh FLOPs per term, as the trace counts).
"""

from __future__ import annotations

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.attention import ScoreMask, attend, split_heads
from tfcli.engine.inputs import NO_PROBE, Probe, StackInput
from tfcli.engine.ops import apply_norm
from tfcli.engine.parallel import linear, linear_split
from tfcli.engine.shaped import zeros
from tfcli.engine.weights import AttentionWeights, StackWeights
from tfcli.spec.model import Spec
from tfcli.spec.disentangled import relative_max, relative_span


def log_bucket(offsets: Array, buckets: int, max_position: int) -> Array:
    """transformers' make_log_bucket_position, in float32 as torch computes it: offsets with
    |r| <= buckets/2 kept, longer ones sign(r) (mid + ceil(log(|r|/mid) / log((max - 1)/mid)
    (mid - 1))). offsets (T, S) int -> (T, S) int."""
    mid = buckets // 2
    inside = (offsets < mid) & (offsets > -mid)
    magnitude = np.where(inside, mid - 1, np.abs(offsets)).astype(np.float32)
    with np.errstate(divide="ignore"):  # |r| = 0 with mid = 1: log 0, never selected below
        ratio = np.log(magnitude / np.float32(mid)) / np.log(np.float32((max_position - 1) / mid))
    logs = np.ceil(ratio * np.float32(mid - 1)) + np.float32(mid)
    return np.where(magnitude <= mid, offsets, logs * np.sign(offsets)).astype(np.int64)


def relative_positions(spec: Spec, length: int, like: object = None) -> Array:
    """rel(i, j) = i - j over token indices (transformers ignores position_ids here), log-bucketed
    with position_buckets: (T, T) int (shape-only when `like` is)."""
    index = np.arange(length, like=like)
    offsets = index[:, None] - index[None, :]  # (T, T)
    if spec.position_buckets:
        offsets = log_bucket(offsets, spec.position_buckets, relative_max(spec))
    return offsets


def relative_table(spec: Spec, stack: StackWeights, probe: Probe = NO_PROBE) -> Array | None:
    """The stack's relative-position embeddings (R, d), normed when relative_embedding_norm;
    None without disentangled attention. Probes `{stack}.relative_embedding`."""
    table = stack.relative_embedding
    if table is None:
        return None
    at = probe.at("relative_embedding")
    at("relative_embedding", table.shape, (table,), (table,))
    if stack.relative_embedding_norm is not None:
        normed = apply_norm(spec.norm, stack.relative_embedding_norm, table, spec.norm_eps,
                            spec.norm_unit_offset)
        at("norm", normed.shape, (table,), (stack.relative_embedding_norm,))
        table = normed
    return table


def _position_heads(spec: Spec, table: Array, w: Array, b: Array | None) -> Array:
    """The table projected per head: (R, d) @ (d, H*dh) -> (1, H, R, dh)."""
    return split_heads(linear(table[None], w, b), spec.n_heads)


def _c2p(q: Array, pos_k: Array, index: Array) -> Array:
    """q_i . Kr[index(i, j)]: q (B, H, T, dh), pos_k (1, H, R, dh), index (T, S) -> (B, H, T, S)."""
    against_all = np.matmul(q, pos_k.swapaxes(-1, -2))  # (B, H, T, R)
    return against_all[:, :, np.arange(index.shape[0], like=index)[:, None], index]  # (B, H, T, S)


def _p2c(k: Array, pos_q: Array, index: Array) -> Array:
    """k_j . Qr[index(j, i)] at (i, j): k (B, H, S, dh), pos_q (1, H, R, dh), index (S, T) ->
    (B, H, T, S)."""
    against_all = np.matmul(k, pos_q.swapaxes(-1, -2))  # (B, H, S, R)
    gathered = against_all[:, :, np.arange(index.shape[0], like=index)[:, None],
                           index]  # (B, H, S, T)
    return gathered.swapaxes(-1, -2)  # (B, H, T, S)


def position_scores(spec: Spec, w: AttentionWeights, qk: tuple[Array, Array],
                    table: Array, probe: Probe) -> Array:
    """The c2p and p2c terms, scaled like the content scores: (B, H, T, T)."""
    q, k = qk
    terms, span = spec.disentangled_attention or [], relative_span(spec)
    rel = relative_positions(spec, q.shape[2], like=q)  # (T, T)
    shared = spec.share_att_key
    pos_k = pos_q = None
    if "c2p" in terms:
        projection = (w.wk, w.bk) if shared else (w.wpos_k, w.bpos_k)
        pos_k = _position_heads(spec, table, *projection)  # (1, H, R, dh)
        probe("pos_key_proj", pos_k.shape[1:], (table,), projection)
    if "p2c" in terms:
        projection = (w.wq, w.bq) if shared else (w.wpos_q, w.bpos_q)
        pos_q = _position_heads(spec, table, *projection)  # (1, H, R, dh)
        probe("pos_query_proj", pos_q.shape[1:], (table,), projection)
    bias = zeros((q.shape[0], spec.n_heads, q.shape[2], k.shape[2]), q.dtype, q)
    if pos_k is not None:
        bias += _c2p(q, pos_k, np.clip(rel + span, 0, 2 * span - 1))
        probe("c2p", bias.shape, (q, pos_k.shape[1:]))
    if pos_q is not None:
        bias += _p2c(k, pos_q, np.clip(span - rel, 0, 2 * span - 1))
        probe("p2c", bias.shape, (k, pos_q.shape[1:]))
    bias *= q.dtype.type(spec.scale)
    return bias


def disentangled_attention(spec: Spec, w: AttentionWeights, x: Array, inputs: StackInput,
                           probe: Probe = NO_PROBE) -> Array:
    """DeBERTa self-attention, bidirectional and uncached: x (B, T, d) -> (B, T, d).
    inputs.relative_embeddings: the stack's normed table (R, d); inputs.key_mask (B, T)."""
    q, k, v = linear_split(x, w, ("wq", "wk", "wv"), ("bq", "bk", "bv"))  # (B, T, H*dh) x3
    q, k, v = (split_heads(t, spec.n_heads) for t in (q, k, v))  # (B, H, T, dh)
    for op, t, reads in (("q_proj", q, (w.wq, w.bq)), ("k_proj", k, (w.wk, w.bk)),
                         ("v_proj", v, (w.wv, w.bv))):
        probe(op, t.shape, (x,), reads)
    if inputs.relative_embeddings is None:
        raise ValueError("disentangled attention needs the stack's relative embeddings")
    bias = position_scores(spec, w, (q, k), inputs.relative_embeddings, probe)  # (B, H, T, T)
    key_mask = None if inputs.key_mask is None else np.asarray(inputs.key_mask, dtype=bool)
    out = attend(q, k, v, spec.scale, ScoreMask(None, None, key_mask, bias), probe)
    out = linear(out.reshape(*out.shape[:2], -1), w.wo, w.bo)  # (B, T, H*dh) -> (B, T, d)
    probe("out_proj", out.shape, (q,), (w.wo, w.bo))
    return out
