"""Disentangled attention (tfcli/engine/disentangled_attention.py) against a float64 reference of
its formula, written pair by pair (DeBERTa eq. 4 with transformers' clipping and log buckets):
  s[i, j] = (q_i . k_j + q_i . Kr[c(i, j)] + k_j . Qr[c(j, i)']) / sqrt(3 dh)
with c(i, j) = clip(span + rel(i, j)), c(j, i)' = clip(span - rel(j, i)), rel the bucketed i - j;
the batch's second row right-padded. Tolerance: float64 (rtol 1e-10)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from tests.engine.engine_specs import make_spec
from tfcli.engine.disentangled_attention import disentangled_attention, log_bucket
from tfcli.engine.init import init_weights
from tfcli.engine.inputs import StackInput
from tfcli.engine.weights import AttentionWeights
from tfcli.spec.model import Spec

T = 13  # past the 8 buckets' exact offsets (|r| <= 4) and the 20 positions they reach


def _bucket(r: int, buckets: int, longest: int) -> int:
    """make_log_bucket_position for one offset, in float64."""
    mid = buckets // 2
    if abs(r) <= mid:
        return r
    log = math.ceil(math.log(abs(r) / mid) / math.log((longest - 1) / mid) * (mid - 1)) + mid
    return int(math.copysign(log, r))


def _rel(spec: Spec, i: int, j: int) -> int:
    if spec.position_buckets is None:
        return i - j
    return _bucket(i - j, spec.position_buckets, spec.max_relative_positions or spec.max_seq_len)


def _heads(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, n_heads: int) -> np.ndarray:
    """(..., d) @ (d, H*dh) + b -> (H, ..., dh)."""
    y = x @ w + (0 if b is None else b)
    return np.moveaxis(y.reshape(*y.shape[:-1], n_heads, -1), -2, 0)


def _reference(spec: Spec, w: AttentionWeights, x: np.ndarray, table: np.ndarray,
               mask: np.ndarray) -> np.ndarray:
    H, span, terms = spec.n_heads, spec.relative_rows // 2, spec.disentangled_attention or []
    shared = spec.share_att_key
    pos_k = _heads(table, w.wk if shared else w.wpos_k, w.bk if shared else w.bpos_k, H) \
        if "c2p" in terms else None
    pos_q = _heads(table, w.wq if shared else w.wpos_q, w.bq if shared else w.bpos_q, H) \
        if "p2c" in terms else None
    scale = (spec.head_dim * (1 + len(terms))) ** -0.5
    out = np.zeros((x.shape[0], T, H * spec.head_dim))
    for b in range(x.shape[0]):
        q, k, v = (_heads(x[b], wm, bm, H) for wm, bm in
                   ((w.wq, w.bq), (w.wk, w.bk), (w.wv, w.bv)))  # (H, T, dh)
        for h in range(H):
            for i in range(T):
                s = np.full(T, -np.inf)
                for j in np.flatnonzero(mask[b]):
                    c2p = np.clip(span + _rel(spec, i, j), 0, 2 * span - 1)
                    p2c = np.clip(span - _rel(spec, j, i), 0, 2 * span - 1)
                    s[j] = q[h, i] @ k[h, j]
                    s[j] += q[h, i] @ pos_k[h, c2p] if "c2p" in terms else 0.0
                    s[j] += k[h, j] @ pos_q[h, p2c] if "p2c" in terms else 0.0
                p = np.exp(s * scale - np.max(s * scale))
                dh = spec.head_dim
                out[b, i, h * dh:(h + 1) * dh] = (p / p.sum()) @ v[h]
    return out @ w.wo + w.bo


@pytest.mark.parametrize("changes", [{}, {"share_att_key": True}, {"disentangled_attention": ["c2p"]},
                                     {"disentangled_attention": ["p2c"]},
                                     {"position_buckets": None, "max_relative_positions": 5}],
                         ids=["both-own", "both-shared", "c2p", "p2c", "clipped-unbucketed"])
def test_disentangled_attention_equals_its_formula(changes: dict) -> None:
    spec = make_spec("deberta", **changes)
    weights = init_weights(spec, seed=3, dtype=np.float64)
    w = weights.encoder.blocks[0].attn
    rng = np.random.default_rng(0)
    for name in ("bq", "bk", "bv", "bo", "bpos_k", "bpos_q"):  # biases that matter
        if getattr(w, name) is not None:
            getattr(w, name)[...] = rng.normal(0, 0.5, getattr(w, name).shape)
    for m in ("wq", "wk", "wpos_k", "wpos_q"):  # larger products: position terms that count
        if getattr(w, m) is not None:
            getattr(w, m)[...] *= 20
    table = rng.normal(0, 1, (spec.relative_rows, spec.d_model))
    x = rng.normal(0, 1, (2, T, spec.d_model))
    mask = np.ones((2, T), dtype=bool)
    mask[1, 9:] = False  # a right-padded row
    inputs = replace(StackInput.over(T, False, mask), relative_embeddings=table)
    got = disentangled_attention(spec, w, x, inputs)
    want = _reference(spec, w, x, table, mask)
    np.testing.assert_allclose(got[mask], want[mask], rtol=1e-10, atol=1e-12)


def test_log_buckets_equal_the_float64_formula_off_its_boundaries() -> None:
    offsets = np.arange(-300, 301)
    for buckets, longest in ((8, 20), (256, 512), (4, 8)):
        want = [_bucket(int(r), buckets, longest) for r in offsets]
        np.testing.assert_array_equal(log_bucket(offsets[:, None], buckets, longest)[:, 0], want)
