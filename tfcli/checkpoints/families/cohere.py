"""Cohere's Command models: Command R / R+ (`cohere`) and Command R7B / A (`cohere2`). One
LayerNorm without a bias feeds attention and a SwiGLU MLP side by side (x + attn(N(x)) +
mlp(N(x)): parallel_residual one_norm), RoPE rotates interleaved pairs (2i, 2i + 1), the head is
tied to the embedding and the logits are multiplied by `logit_scale` (read as logits_scaling,
its inverse). Cohere2 adds layer_types (three sliding layers to one global) with no rotary
embedding on the global layers (NoPE). Command R+'s q/k LayerNorms (`use_qk_norm`) are
`qk_norm: each_head`: over each head's d_head, with a weight of its own per head, (heads,
d_head)."""

from __future__ import annotations

from tfcli.checkpoints.families import llama
from tfcli.checkpoints.families.gemma import rotated_local_layers
from tfcli.checkpoints.families.rope import rope_theta, with_rope_scaling
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import BARE, LM, Architecture
from tfcli.checkpoints.names import Table

# CohereConfig() / Cohere2Config() defaults, for the keys read
DEFAULTS: Config = {
    "vocab_size": 256000, "hidden_size": 8192, "intermediate_size": 22528,
    "logit_scale": 0.0625, "num_hidden_layers": 40, "num_attention_heads": 64,
    "num_key_value_heads": 64, "head_dim": None, "hidden_act": "silu",
    "max_position_embeddings": 8192, "layer_norm_eps": 1e-5, "tie_word_embeddings": True,
    "rope_theta": 500000.0, "attention_bias": False, "use_qk_norm": False,
}
COHERE2_DEFAULTS: Config = DEFAULTS | {
    "rope_theta": 10000.0, "sliding_window": 4096, "layer_types": None, "head_dim": 128,
    "sliding_window_pattern": 4,
}
CLASSES: dict[str, Architecture] = {"CohereForCausalLM": LM, "CohereModel": BARE}
COHERE2_CLASSES: dict[str, Architecture] = {"Cohere2ForCausalLM": LM, "Cohere2Model": BARE}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    llama.require_silu(c)
    fields: Config = llama.decoder_sizes(c) | {
        "activation": "swiglu", "norm": "layernorm_nobias", "norm_placement": "pre",
        "parallel_residual": "one_norm", "norm_eps": c.number("layer_norm_eps"),
        "positions": "rope", "rope_pairing": "interleaved", "rope_theta": rope_theta(c),
        "bias": False, "attention_bias": c.flag("attention_bias"),
        "tie_embeddings": c.flag("tie_word_embeddings"), "lm_head": arch.lm_head,
    }
    with_rope_scaling(c, fields)
    if c.values["model_type"] == "cohere" and c.flag("use_qk_norm"):  # Cohere2 reads no such key
        fields["qk_norm"] = "each_head"
    scale = c.number("logit_scale")
    if arch.lm_head and scale != 1:  # a bare model has no logits to scale
        fields["logits_scaling"] = 1 / scale
    return fields, []


def read_cohere2(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    """Cohere2: `layer_types`, else every `sliding_window_pattern`-th layer full (4: R7B's three
    sliding to one full); only the sliding layers rotate (Cohere2Attention applies RoPE with a
    sliding window only)."""
    fields, notes = read(c, arch)
    return fields | rotated_local_layers(c, fields["n_layers"]), notes


# LLaMA's tensor names without post_attention_layernorm: one norm feeds both sublayers
TABLE = Table(
    bases=llama.TABLE.bases, anchor=llama.TABLE.anchor, ignored=llama.TABLE.ignored,
    tied_copies=llama.TABLE.tied_copies,
    rules=tuple(r for r in llama.TABLE.rules if "post_attention_layernorm" not in r.hf),
)
