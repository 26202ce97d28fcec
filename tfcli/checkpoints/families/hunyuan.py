"""Hunyuan dense (tencent/Hunyuan-0.5B / 1.8B / 4B / 7B-Instruct; `hunyuan_v1_dense`,
HunYuanDenseV1ForCausalLM): LLaMA's body with per-head q/k RMSNorms that run after RoPE, on the
rotated queries and keys (`query_layernorm` / `key_layernorm`), `attention_bias` on all four
projections, no MLP bias. Its checkpoints label the RoPE scaling `dynamic` with an `alpha`:
transformers reads that as NTK-alpha, a fixed base of theta * alpha^(d / (d - 2)) that no
sequence length changes - the base tfcli sets, with no scaling left."""

from __future__ import annotations

import math

from tfcli.checkpoints.families import llama
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import BARE, LM, Architecture

# HunYuanDenseV1Config() defaults, for the keys read
DEFAULTS: Config = llama.LLAMA_DEFAULTS | {
    "vocab_size": 290943, "intermediate_size": 11008, "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-5,
}
CLASSES: dict[str, Architecture] = {"HunYuanDenseV1ForCausalLM": LM, "HunYuanDenseV1Model": BARE}
_ROPE_KEYS = ("rope_parameters", "rope_scaling")


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    c, theta = _ntk_alpha(c)
    fields, notes = llama.read_llama(c, arch)
    fields.pop("sliding_window", None)  # no window in its attention
    fields |= {"qk_norm": "per_head", "qk_norm_after_rope": True, "ffn_bias": False}
    if theta is not None:
        fields["rope_theta"] = theta
    return fields, notes


def _ntk_alpha(c: ConfigFields) -> tuple[ConfigFields, float | None]:
    """(the config without its NTK-alpha scaling, the base it fixes) when the scaling is
    `dynamic` with an alpha, as HunYuanDenseV1RotaryEmbedding reads it; else (c, None)."""
    for key in _ROPE_KEYS:
        section = c.section(key)
        kind = section.values.get("rope_type", section.values.get("type"))
        if kind != "dynamic" or not section.values.get("alpha"):
            continue
        alpha = section.number("alpha")
        d_head = c.optional_integer("head_dim") or (
            c.integer("hidden_size") // c.integer("num_attention_heads"))
        if d_head < 4:
            raise c.error("head_dim", f"is {d_head}: NTK-alpha's exponent d / (d - 2) needs 4 "
                                      "or more")
        theta = (section if section.has("rope_theta") else c).number("rope_theta")
        try:
            base = theta * alpha ** (d_head / (d_head - 2))
        except OverflowError:
            base = math.inf
        if not math.isfinite(base):
            raise section.error("alpha", f"{alpha:g} stretches the RoPE base {theta:g} past "
                                         "any float")
        rest = {k: v for k, v in c.values.items() if k not in _ROPE_KEYS}
        return ConfigFields(rest | {"rope_theta": base}, c.file, c.prefix), base
    return c, None


TABLE = llama.TABLE  # its query_layernorm / key_layernorm are among the table's renames
