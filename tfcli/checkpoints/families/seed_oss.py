"""Seed-OSS (ByteDance-Seed/Seed-OSS-36B; `seed_oss`, SeedOssForCausalLM): LLaMA's body and
tensor names, with `attention_bias` on q, k and v, `attention_out_bias` of its own on o, and
`mlp_bias`; an explicit head_dim (128 beside 5120 / 80 heads = 64)."""

from __future__ import annotations

from tfcli.checkpoints.families import llama
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import BARE, LM, Architecture

# SeedOssConfig() defaults, for the keys read (read_llama reads sliding_window: Seed-OSS has none)
DEFAULTS: Config = llama.LLAMA_DEFAULTS | {
    "vocab_size": 155136, "hidden_size": 4096, "intermediate_size": 27648,
    "num_hidden_layers": 64, "num_attention_heads": 80, "num_key_value_heads": 8,
    "max_position_embeddings": 524288, "rms_norm_eps": 1e-6, "attention_bias": True,
    "attention_out_bias": False, "mlp_bias": False, "head_dim": 128,
}
CLASSES: dict[str, Architecture] = {"SeedOssForCausalLM": LM, "SeedOssModel": BARE}
TABLE = llama.TABLE  # LLaMA's tensor names, biases included


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    fields, notes = llama.read_llama(c, arch)
    fields.pop("sliding_window", None)
    fields["attention_out_bias"] = c.flag("attention_out_bias")
    return fields, notes
