"""EXAONE 4.0 (LGAI-EXAONE/EXAONE-4.0-1.2B / -32B; `exaone4`, Exaone4ForCausalLM): LLaMA's
attention with per-head q/k RMSNorms and OLMo 2's norms on each sublayer's output inside the
residual (norm_placement sublayer_post). With a sliding_window its layers follow `layer_types`
(32B: three sliding to one full, "LLLG") and only the sliding layers rotate (NoPE on the full
ones); without one every layer is full attention with RoPE."""

from __future__ import annotations

from tfcli.checkpoints.families import llama, olmo2
from tfcli.checkpoints.families.gemma import rotated_local_layers
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import BARE, LM, Architecture

# Exaone4Config() defaults, for the keys read
DEFAULTS: Config = llama.LLAMA_DEFAULTS | {
    "vocab_size": 102400, "hidden_size": 4096, "intermediate_size": 16384,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
    "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "sliding_window": 4096,
    "sliding_window_pattern": 4, "layer_types": None,
}
CLASSES: dict[str, Architecture] = {"Exaone4ForCausalLM": LM, "Exaone4Model": BARE}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    fields, notes = llama.read_llama(c, arch)
    fields.pop("sliding_window", None)
    fields |= {"norm_placement": "sublayer_post", "qk_norm": "per_head", "bias": False,
               "attention_bias": False, "ffn_bias": False}
    if c.values.get("sliding_window") is None:  # every layer full, every layer rotated
        return fields, notes
    # Exaone4Config derives layer_types from an integer sliding_window_pattern; a string one
    # ("LLLG") needs the layer_types list the published configs carry
    return fields | rotated_local_layers(c, fields["n_layers"]), notes


TABLE = olmo2.TABLE  # OLMo 2's names: LLaMA's attention, its q/k norms, post-sublayer norms
