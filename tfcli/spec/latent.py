"""Multi-head latent attention (DeepSeek-V2/V3, MLA): the checks of its spec fields, the head
widths it derives, and the softmax scale of its YaRN correction.

With kv_lora_rank set, each token's keys and values come from one compressed latent of
kv_lora_rank values plus one RoPE key of qk_rope_head_dim shared by all heads: a query/key head
is qk_nope_head_dim + qk_rope_head_dim wide (that is d_head), a value head v_head_dim.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tfcli.core.errors import SpecConsistencyError

if TYPE_CHECKING:
    from tfcli.spec.model import Spec

LATENT_FIELDS = ("q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
_REQUIRED = ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def check_latent(spec: Spec) -> None:
    """MLA's fields: all or none; what they derive (d_head, n_kv_heads, rotary_dim) unset or
    equal to the derived value."""
    if spec.kv_lora_rank is None:
        for field in LATENT_FIELDS:
            if getattr(spec, field) is not None:
                raise SpecConsistencyError(field, "needs kv_lora_rank (multi-head latent "
                                           "attention)")
        if spec.latent_norm_eps != 1e-6:
            raise SpecConsistencyError("latent_norm_eps", "needs kv_lora_rank")
        return
    for field in _REQUIRED:
        if getattr(spec, field) is None:
            raise SpecConsistencyError(field, "is required with kv_lora_rank")
    if spec.family != "decoder":
        raise SpecConsistencyError("kv_lora_rank", "only applies to family 'decoder'")
    if spec.positions != "rope":
        raise SpecConsistencyError("kv_lora_rank", f"needs positions: rope (got "
                                   f"{spec.positions!r}): its heads carry a RoPE part")
    if spec.qk_rope_head_dim % 2:  # type: ignore[operator]
        raise SpecConsistencyError("qk_rope_head_dim", f"must be even (got "
                                   f"{spec.qk_rope_head_dim}): RoPE rotates dimensions in pairs")
    # derived under MLA; a stated value must be the derived one (a YAML file written from a
    # resolved spec states them)
    derived = {"d_head": (latent_head_dim(spec), "qk_nope_head_dim + qk_rope_head_dim"),
               "rotary_dim": (spec.qk_rope_head_dim, "qk_rope_head_dim"),
               "n_kv_heads": (spec.n_heads, "n_heads (every head expands its own key and value "
                              "from the latent)")}
    for field, (expected, source) in derived.items():
        value = getattr(spec, field)
        if value is not None and value != expected:
            raise SpecConsistencyError(field, f"is {value} but multi-head latent attention "
                                       f"derives it from {source}: {expected} (leave it unset)")
    if spec.qk_norm != "none":
        raise SpecConsistencyError("qk_norm", "does not apply to multi-head latent attention "
                                   "(its latents carry their own norms)")
    if spec.norm == "none":
        raise SpecConsistencyError("kv_lora_rank", "needs a norm (the latents are RMS-normed)")


def latent_head_dim(spec: Spec) -> int:
    """A query/key head's width: the no-RoPE part plus the RoPE part."""
    return spec.qk_nope_head_dim + spec.qk_rope_head_dim  # type: ignore[operator]


def yarn_mscale(factor: float, mscale: float) -> float:
    """YaRN's magnitude correction 0.1 mscale ln(factor) + 1 (1 for factor <= 1)."""
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def latent_scale(spec: Spec) -> float:
    """MLA's softmax scale: d_head^-1/2, times mscale(factor, mscale_all_dim)^2 under YaRN with
    mscale_all_dim (transformers' yarn_apply_mscale: DeepSeek-V3 (0.1 ln 40 + 1)^2 = 1.87)."""
    scale = spec.head_dim ** -0.5
    rope = spec.rope_scaling
    if rope is not None and rope.type == "yarn" and rope.mscale_all_dim:
        scale *= yarn_mscale(rope.factor, rope.mscale_all_dim) ** 2
    return scale
