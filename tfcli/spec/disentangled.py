"""Disentangled attention (DeBERTa, He et al. 2021, section 3.1; DeBERTa-v2/v3): the checks of
its spec fields, its softmax scale and the relative-position span it derives.

Besides the content score q_i . k_j, each query/key pair gets a content-to-position term
q_i . Kr[d(i, j)] (c2p) and a position-to-content term k_j . Qr[d(j, i)] (p2c), where Kr and Qr
are a shared table of 2 x span relative-position embeddings projected per head (through the
attention's own key / query projections under share_att_key) and d a clipped, optionally
log-bucketed offset. The scores are divided by sqrt(d_head x (1 + number of terms)).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from tfcli.core.errors import SpecConsistencyError

if TYPE_CHECKING:
    from tfcli.spec.model import Spec

DisentangledTerm = Literal["c2p", "p2c"]
# fields that mean nothing without disentangled_attention (their defaults change nothing)
DISENTANGLED_FIELDS = ("position_buckets", "max_relative_positions", "share_att_key",
                       "relative_embedding_norm")


def check_disentangled(spec: Spec) -> None:
    """The terms named once each; the span fields consistent; what the attention excludes."""
    terms = spec.disentangled_attention
    if terms is None:
        for field in DISENTANGLED_FIELDS:
            if getattr(spec, field) not in (None, False):
                raise SpecConsistencyError(field, "needs disentangled_attention (c2p and/or p2c)")
        return
    if len(set(terms)) != len(terms):
        raise SpecConsistencyError("disentangled_attention", f"names a term twice ({terms}): "
                                   "each of c2p and p2c at most once")
    if spec.family != "encoder":
        raise SpecConsistencyError("disentangled_attention", f"only applies to family "
                                   f"'encoder' (got {spec.family!r})")
    if spec.positions not in ("learned", "none"):
        raise SpecConsistencyError("disentangled_attention", f"needs positions: learned or none "
                                   f"(got {spec.positions!r}): its relative positions replace "
                                   "other schemes")
    if spec.n_kv_heads not in (None, spec.n_heads):
        raise SpecConsistencyError("n_kv_heads", "must equal n_heads with disentangled_attention "
                                   "(every head projects the position table itself)")
    for field, value in (("qk_norm", spec.qk_norm != "none"),
                         ("attn_logit_softcap", spec.attn_logit_softcap is not None)):
        if value:
            raise SpecConsistencyError(field, "does not apply with disentangled_attention")
    if spec.relative_embedding_norm and spec.norm == "none":
        raise SpecConsistencyError("relative_embedding_norm", "needs a norm (norm is 'none')")
    _check_buckets(spec)


def _check_buckets(spec: Spec) -> None:
    """Log buckets keep offsets below buckets/2 exact and map longer ones to
    mid + ceil(log(|r| / mid) / log((max_relative_positions - 1) / mid) (mid - 1)): that log
    must be positive, so max_relative_positions - 1 must exceed mid."""
    buckets = spec.position_buckets
    if buckets is None:
        return
    if buckets < 2:
        raise SpecConsistencyError("position_buckets", f"must be at least 2 (got {buckets}): "
                                   "half of them are exact offsets")
    mid, longest = buckets // 2, relative_max(spec)
    if longest - 1 <= mid:
        raise SpecConsistencyError("max_relative_positions", f"must exceed position_buckets / "
                                   f"2 + 1 = {mid + 1:,} (got {longest:,}): the log buckets "
                                   "divide by log((max_relative_positions - 1) / (buckets / 2))")


def relative_max(spec: Spec) -> int:
    """The longest relative offset the buckets are spaced for: max_relative_positions, else
    max_seq_len (transformers: max_position_embeddings when the config gives none or -1)."""
    return spec.max_relative_positions or spec.max_seq_len


def relative_span(spec: Spec) -> int:
    """Offsets -span .. span - 1 index the relative table: position_buckets when set, else
    max_relative_positions; the table has 2 x span rows."""
    return spec.position_buckets or relative_max(spec)


def disentangled_scale(spec: Spec) -> float:
    """1 / sqrt(d_head x (1 + terms)): the content, c2p and p2c scores are summed unscaled."""
    return (spec.head_dim * (1 + len(spec.disentangled_attention or ()))) ** -0.5
