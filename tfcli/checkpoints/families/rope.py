"""RoPE fields of a config.json: the base and the scaling, from transformers 5
`rope_parameters` or the older top-level `rope_theta` / `rope_scaling` keys."""

from __future__ import annotations

import math

from tfcli.checkpoints.families.common import unsupported
from tfcli.checkpoints.fields import Config, ConfigFields, shown


def _rope_kind(params: ConfigFields, scaling: ConfigFields) -> str:
    return (params.optional_text("rope_type") or scaling.optional_text("rope_type")
            or scaling.optional_text("type") or "default")


# config keys each RoPE scaling type reads -> rope_scaling fields (number or integer or flag)
_ROPE_SCALING_KEYS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "linear": (("factor", "factor", "number"),),
    "dynamic": (("factor", "factor", "number"),),
    "llama3": (("factor", "factor", "number"), ("low_freq_factor", "low_freq_factor", "number"),
               ("high_freq_factor", "high_freq_factor", "number"),
               ("original_max_position_embeddings", "original_max_seq_len", "integer")),
    "yarn": (("factor", "factor", "number"),
             ("original_max_position_embeddings", "original_max_seq_len", "integer"),
             ("beta_fast", "beta_fast", "number"), ("beta_slow", "beta_slow", "number"),
             ("attention_factor", "attention_factor", "number"), ("mscale", "mscale", "number"),
             ("mscale_all_dim", "mscale_all_dim", "number"), ("truncate", "truncate", "flag")),
    "longrope": (("original_max_position_embeddings", "original_max_seq_len", "integer"),
                 ("short_factor", "short_factor", "numbers"), ("long_factor", "long_factor", "numbers"),
                 ("attention_factor", "attention_factor", "number")),
}
_REQUIRED_ROPE_KEYS = frozenset({"factor", "low_freq_factor", "high_freq_factor",
                                 "original_max_position_embeddings", "short_factor", "long_factor"})
# transformers falls back to max_position_embeddings for these (dynamic: always uses it)
_ORIGINAL_FALLBACK = frozenset({"yarn", "longrope"})


def rope_scaling(c: ConfigFields) -> Config | None:
    """`rope_scaling` of the spec, from transformers 5 `rope_parameters` or the older
    `rope_scaling` object; None for plain RoPE. A type tfcli does not model is refused by name."""
    params, scaling = c.section("rope_parameters"), c.section("rope_scaling")
    kind = _rope_kind(params, scaling)
    if kind == "default":
        return None
    if kind not in _ROPE_SCALING_KEYS:
        raise unsupported(c, f"RoPE scaling {shown(kind)} is not supported "
                             f"(supported: {', '.join(sorted(_ROPE_SCALING_KEYS))})")
    source = params if params.has("factor") or not scaling.values else scaling
    return rope_scaling_fields(c, source, kind)


def rope_scaling_fields(c: ConfigFields, source: ConfigFields, kind: str) -> Config:
    """The fields `kind` reads, from `source` (the rope_parameters or rope_scaling object);
    lengths and factors that transformers derives from max_position_embeddings derived alike."""
    fields: Config = {"type": kind}
    for key, field, kind_of in _ROPE_SCALING_KEYS[kind]:
        if (kind in _ORIGINAL_FALLBACK and key == "original_max_position_embeddings"
                and not source.has(key)):
            fields[field] = c.integer("max_position_embeddings")
        elif key in _REQUIRED_ROPE_KEYS or source.values.get(key) is not None:
            fields[field] = _rope_value(source, key, kind_of)
    if kind == "dynamic":
        fields["original_max_seq_len"] = c.integer("max_position_embeddings")
    if kind == "longrope" and source.values.get("factor") is None:  # as transformers: the ratio
        fields["factor"] = c.integer("max_position_embeddings") / fields["original_max_seq_len"]
    elif kind == "longrope":
        fields["factor"] = source.number("factor")
    return fields


def _rope_value(source: ConfigFields, key: str, kind_of: str) -> object:
    if kind_of != "numbers":
        return getattr(source, kind_of)(key)
    values = source.values.get(key)
    if not isinstance(values, list) or len(values) > 4096 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < math.inf
            for v in values):
        raise source.error(key, f"expected a list of positive numbers, got {shown(values)}")
    return [float(v) for v in values]


def rope_theta(c: ConfigFields) -> float:
    """RoPE base, from transformers 5 `rope_parameters` or the older top-level keys."""
    params = c.section("rope_parameters")
    # the nested value wins, as in transformers 5; the top-level key is the older spelling
    partial = params if params.has("partial_rotary_factor") else c
    if partial.number("partial_rotary_factor", default=1.0, positive=False) != 1.0:
        raise unsupported(c, "partial_rotary_factor other than 1.0 is not supported")
    return (params if params.has("rope_theta") else c).number("rope_theta")



def with_rope_scaling(c: ConfigFields, fields: Config) -> Config:
    """`fields` with the config's `rope_scaling` when it has one; dynamic NTK scaling also
    extends the context by its factor (transformers runs it past max_position_embeddings)."""
    scaling = rope_scaling(c)
    if scaling is not None:
        fields["rope_scaling"] = scaling
    if scaling is not None and scaling["type"] == "dynamic":
        fields["max_seq_len"] = int(scaling["factor"] * fields["max_seq_len"])
    return fields
