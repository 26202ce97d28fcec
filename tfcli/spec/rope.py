"""The `rope_scaling` spec field: how RoPE's inverse frequencies are stretched for long contexts.

One optional nested model; which of its fields a type needs is checked per type, so a spec names
exactly the numbers its formula reads. The formulas live in tfcli/engine/positions.py.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tfcli.core.errors import SpecConsistencyError, shown

RopeScalingType = Literal["linear", "dynamic", "llama3", "yarn", "longrope"]
Factors = list[Annotated[float, Field(gt=0)]]

# The fields each type reads beyond `type` and `factor`: (required, optional).
_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "linear": ((), ()),
    "dynamic": (("original_max_seq_len",), ()),
    "llama3": (("low_freq_factor", "high_freq_factor", "original_max_seq_len"), ()),
    "yarn": (("original_max_seq_len",), ("beta_fast", "beta_slow", "attention_factor",
                                         "mscale", "mscale_all_dim", "truncate")),
    "longrope": (("original_max_seq_len", "short_factor", "long_factor"), ("attention_factor",)),
}


# Ranges outside which a table is wrong, not unusual: real values lie well inside (factor 4 .. 40,
# betas 1 and 32, frequency factors 1 and 4). Past them a division or log overflows to inf and
# the ramp ends (math.floor) or the cos/sin tables turn to inf/NaN. A factor below 1 compresses
# rather than extends the context; transformers warns of it, tfcli refuses it.
_RANGES = (("factor", 1.0, 1e6), ("low_freq_factor", 1e-3, 1e6), ("high_freq_factor", 1e-3, 1e6),
           ("beta_fast", 1e-3, 1e6), ("beta_slow", 1e-3, 1e6), ("attention_factor", 1e-3, 1e3),
           ("mscale", 1e-3, 1e3), ("mscale_all_dim", 1e-3, 1e3))


class RopeScaling(BaseModel):
    """RoPE frequency scaling (context extension); absent = plain RoPE."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    type: RopeScalingType = Field(
        description="linear: positions / factor (every frequency divided by factor); llama3: "
        "Llama 3.1 - low frequencies / factor, high ones kept, a smooth ramp between; yarn: "
        "YaRN ramp between interpolated and original frequencies, cos/sin times attention_factor; "
        "dynamic: NTK-aware base grown with the sequence past original_max_seq_len; longrope: "
        "per-frequency divisors, short_factor within original_max_seq_len, long_factor past it.")
    factor: float = Field(gt=0, description="Context extension factor (e.g. 8 for Llama 3.1).")
    original_max_seq_len: int | None = Field(
        None, ge=2, description="Context the model was pretrained on (llama3, yarn, longrope); "
        "dynamic: the length past which the base grows.")
    low_freq_factor: float | None = Field(None, gt=0, description="llama3: low-frequency factor.")
    high_freq_factor: float | None = Field(None, gt=0, description="llama3: high-frequency factor.")
    beta_fast: float | None = Field(None, gt=0, description="yarn: fast rotations bound; 32.")
    beta_slow: float | None = Field(None, gt=0, description="yarn: slow rotations bound; 1.")
    attention_factor: float | None = Field(
        None, gt=0, description="yarn: multiplier on cos and sin; default 0.1 ln(factor) + 1, or "
        "the mscale / mscale_all_dim ratio when both are given.")
    mscale: float | None = Field(None, gt=0, description="yarn: mscale (DeepSeek style).")
    mscale_all_dim: float | None = Field(None, gt=0, description="yarn: mscale_all_dim.")
    truncate: bool | None = Field(None, description="yarn: round the ramp ends to integers; true.")
    short_factor: Factors | None = Field(
        None, max_length=4096, description="longrope: divisor of each inverse frequency (d_head/2 "
        "values) while the sequence fits original_max_seq_len.")
    long_factor: Factors | None = Field(
        None, max_length=4096, description="longrope: the divisors past original_max_seq_len.")

    @model_validator(mode="after")
    def _check(self) -> RopeScaling:
        _check_fields(self)
        _check_values(self)
        return self


def _check_fields(scaling: RopeScaling) -> None:
    """Exactly the fields the type's formula reads: a forgotten one is required, a stray one
    (beta_fast on llama3) would otherwise be silently ignored."""
    required, optional = _FIELDS[scaling.type]
    for name in required:
        if getattr(scaling, name) is None:
            raise SpecConsistencyError(f"rope_scaling.{name}", f"is required by type '{scaling.type}'")
    for name in sorted(set(RopeScaling.model_fields) - {"type", "factor", *required, *optional}):
        if getattr(scaling, name) is not None:
            raise SpecConsistencyError(
                f"rope_scaling.{name}", f"does not apply to type '{scaling.type}'")


def _check_values(scaling: RopeScaling) -> None:
    for name, low, high in _RANGES:
        value = getattr(scaling, name)
        if value is not None and not low <= value <= high:
            raise SpecConsistencyError(
                f"rope_scaling.{name}", f"must lie in [{low:g}, {high:g}] (got {shown(value)})")
    fast, slow = scaling.beta_fast or 32.0, scaling.beta_slow or 1.0
    if fast <= slow:
        raise SpecConsistencyError(
            "rope_scaling.beta_fast", f"must exceed beta_slow {slow:g} (got {shown(fast)})")
    low_freq, high_freq = scaling.low_freq_factor, scaling.high_freq_factor
    if low_freq is not None and high_freq is not None and high_freq <= low_freq:
        raise SpecConsistencyError(
            "rope_scaling.high_freq_factor",
            f"must exceed low_freq_factor {low_freq:g} (got {shown(high_freq)})")


def check_rope_width(scaling: RopeScaling, width: int) -> None:
    """longrope's factor lists hold one divisor per rotated pair of dimensions (`width`: the
    rotated dimensions of a head, rotary_dim or d_head); dynamic's base exponent d / (d - 2)
    needs at least 4 of them."""
    if scaling.type == "dynamic" and width < 4:
        raise SpecConsistencyError("rope_scaling", f"'dynamic' needs at least 4 rotated "
                                   f"dimensions per head (rotary_dim or d_head; got {width})")
    for name in ("short_factor", "long_factor"):
        values = getattr(scaling, name)
        if values is not None and len(values) != width // 2:
            raise SpecConsistencyError(
                f"rope_scaling.{name}", f"needs one value per rotated pair of dimensions, "
                f"{width} / 2 = {width // 2} (got {len(values)})")
