"""Sizes of DeBERTa-v2/v3's disentangled attention (spec.disentangled_attention) that both its
implementations share (layouts/engine.py: tfcli's engine; layouts/deberta.py: transformers'
DebertaV2 modules).

Each term (c2p, p2c) scores the queries (keys) against all R = 2 x span rows of the projected
relative-position table, then gathers the T columns each pair needs: a (B, H, T, R) product
and a (B, H, T, T) gathered copy per term, beside the content scores. Sizes are in elements
of the compute dtype unless a name says bytes; int64 indices are converted (`elements`).
"""

from __future__ import annotations

from tfcli.analysis.memory.base import INT64, Workload
from tfcli.spec.disentangled import relative_span
from tfcli.spec.model import Spec

INDEX = INT64  # int64 relative positions and gather indices


def terms(spec: Spec) -> tuple[str, ...]:
    return tuple(spec.disentangled_attention or ())


def rows(spec: Spec) -> int:
    """R: the relative-position table's rows, 2 x span."""
    return 2 * relative_span(spec)


def elements(n_bytes: float, work: Workload) -> float:
    return n_bytes / work.itemsize


def score(spec: Spec, work: Workload) -> float:
    """One (B, H, T, T) score tensor."""
    return work.batch * spec.n_heads * work.seq_len ** 2


def against_all(spec: Spec, work: Workload) -> float:
    """One term's product with every table row before the gather: (B, H, T, R)."""
    return work.batch * spec.n_heads * work.seq_len * rows(spec)


def relative_positions(spec: Spec, work: Workload, bucket_bytes: int) -> float:
    """Bytes alive while the (T, T) relative positions are built: the int64 offsets, or with
    position_buckets every temporary of the log buckets at their widest (`bucket_bytes` an
    entry)."""
    return (bucket_bytes if spec.position_buckets else INDEX) * work.seq_len ** 2
