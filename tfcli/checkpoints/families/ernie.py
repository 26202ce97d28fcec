"""ERNIE 4.5 dense (baidu/ERNIE-4.5-0.3B; `ernie4_5`, Ernie4_5ForCausalLM): LLaMA's body and
tensor names with `use_bias` on every attention and MLP projection, and RoPE over the whole head
in interleaved pairs (2i, 2i + 1), GLM's way; tied by default."""

from __future__ import annotations

from tfcli.checkpoints.families import llama
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import BARE, LM, Architecture

# Ernie4_5Config() defaults, for the keys read
DEFAULTS: Config = llama.LLAMA_DEFAULTS | {
    "vocab_size": 103424, "hidden_size": 1024, "intermediate_size": 3072,
    "num_hidden_layers": 18, "num_attention_heads": 16, "num_key_value_heads": 2,
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "tie_word_embeddings": True,
    "rope_theta": 500000.0, "use_bias": False, "head_dim": 128,
}
CLASSES: dict[str, Architecture] = {"Ernie4_5ForCausalLM": LM, "Ernie4_5Model": BARE}
TABLE = llama.TABLE  # LLaMA's tensor names, biases included


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    fields, notes = llama.read_llama(c, arch)
    fields.pop("sliding_window", None)
    biased = c.flag("use_bias")  # transformers reads no attention_bias / mlp_bias here
    fields |= {"attention_bias": biased, "attention_out_bias": biased, "ffn_bias": biased,
               "rope_pairing": "interleaved"}
    return fields, notes
