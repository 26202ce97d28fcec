"""RoPE fields of the families with partial rotary (GPT-NeoX, Phi, StableLM): the base, the
rotated fraction of each head and the scaling, from transformers 5 `rope_parameters` (which
wins, as there) or the family's older top-level keys (`rotary_pct` / `rotary_emb_base` in
GPT-NeoX configs, `partial_rotary_factor` / `rope_theta` in Phi and StableLM ones)."""

from __future__ import annotations

from tfcli.checkpoints.families.common import unsupported
from tfcli.checkpoints.families.rope import rope_scaling
from tfcli.checkpoints.fields import Config, ConfigFields, shown


def rotated_dims(c: ConfigFields, d_head: int, fraction: float, key: str) -> int:
    """int(d_head * fraction), as transformers truncates it, refused naming the config's `key`
    (rather than the spec's derived rotary_dim) when it is more than the head or is not a
    positive even number of dimensions (RoPE rotates pairs)."""
    if fraction > 1:
        raise unsupported(c, f"{key} {shown(fraction)} is more than the whole head")
    rotary_dim = int(d_head * fraction)
    if rotary_dim < 2 or rotary_dim % 2:
        raise unsupported(c, f"{key} {shown(fraction)} rotates {rotary_dim} of each head's "
                             f"{d_head} dimensions: RoPE rotates pairs, so at least 2 and an "
                             "even number")
    return rotary_dim


def partial_rope(c: ConfigFields, d_head: int, fraction_key: str, theta_key: str) -> Config:
    """positions, rope_theta, rotary_dim (int(d_head * fraction), as transformers truncates it)
    and rope_scaling. The family's DEFAULTS hold `fraction_key` and `theta_key`."""
    params = c.section("rope_parameters")
    nested = params.has("partial_rotary_factor")
    fraction = params.number("partial_rotary_factor") if nested else c.number(fraction_key)
    key = "rope_parameters.partial_rotary_factor" if nested else fraction_key
    rotary_dim = rotated_dims(c, d_head, fraction, key)
    theta = params.number("rope_theta") if params.has("rope_theta") else c.number(theta_key)
    fields: Config = {"positions": "rope", "rope_theta": theta, "rotary_dim": rotary_dim}
    scaling = rope_scaling(c)
    if scaling is not None:
        fields["rope_scaling"] = scaling
    return fields


def extended_context(fields: Config) -> Config:
    """Dynamic NTK scaling extends the context by its factor (as the LLaMA reader does)."""
    scaling = fields.get("rope_scaling")
    if isinstance(scaling, dict) and scaling["type"] == "dynamic":
        fields["max_seq_len"] = int(scaling["factor"] * fields["max_seq_len"])
    return fields
