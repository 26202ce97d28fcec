"""Phi-1 / Phi-1.5 / Phi-2 (PhiForCausalLM, PhiModel): config.json reader and checkpoint names.
Partial rotary (`partial_rotary_factor` of each head), attention and FFN in parallel from one
shared LayerNorm, biases on every projection, a final LayerNorm and a biased untied head.
q/k LayerNorms (`qk_layernorm`, per head with biases) are refused by name."""

from __future__ import annotations

from tfcli.checkpoints.families.common import activation, require_false, unsupported
from tfcli.checkpoints.families.partial_rope import extended_context, partial_rope
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, norm, rule

# PhiConfig() defaults, for the keys read (partial_rotary_factor 0.5 as its __post_init__ sets)
DEFAULTS: Config = {
    "vocab_size": 51200, "hidden_size": 2048, "intermediate_size": 8192,
    "num_hidden_layers": 24, "num_attention_heads": 32, "num_key_value_heads": None,
    "hidden_act": "gelu_new", "max_position_embeddings": 2048, "layer_norm_eps": 1e-5,
    "tie_word_embeddings": False, "qk_layernorm": False, "partial_rotary_factor": 0.5,
    "rope_theta": 10000.0,
}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    require_false(c, "qk_layernorm")
    if arch.lm_head and c.flag("tie_word_embeddings"):  # the head's bias needs its own matrix
        raise unsupported(c, "tie_word_embeddings = True is not supported (Phi's head has a bias)")
    d_model, n_heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    d_head = c.optional_integer("head_dim") or d_model // n_heads  # as PhiAttention reads it
    fields: Config = {
        "family": "decoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("max_position_embeddings"), "d_model": d_model,
        "n_heads": n_heads, "n_kv_heads": c.optional_integer("num_key_value_heads") or n_heads,
        "d_head": d_head, "n_layers": c.integer("num_hidden_layers"),
        "d_ff": c.integer("intermediate_size"),
        "activation": activation(c, c.text("hidden_act"), "hidden_act"),
        "norm": "layernorm", "norm_placement": "pre", "norm_eps": c.number("layer_norm_eps"),
        "parallel_residual": "one_norm", "bias": True, "tie_embeddings": False,
        "lm_head": arch.lm_head, "lm_head_bias": arch.lm_head,
    }
    fields |= partial_rope(c, d_head, "partial_rotary_factor", "rope_theta")
    return extended_context(fields), []


def _rules() -> list[Rule]:
    layer, b = "{base}layers.{i}", "decoder.blocks.{i}"
    attn = [r for x in "qkv" for r in linear(f"{layer}.self_attn.{x}_proj", f"{b}.attn.w{x}",
                                                f"{b}.attn.b{x}")]
    return [
        rule("{base}embed_tokens.weight", "token_embedding"),
        *norm(f"{layer}.input_layernorm", f"{b}.attn_norm"),
        *attn,
        *linear(f"{layer}.self_attn.dense", f"{b}.attn.wo", f"{b}.attn.bo"),
        *linear(f"{layer}.mlp.fc1", f"{b}.ffn.w_up", f"{b}.ffn.b_up"),
        *linear(f"{layer}.mlp.fc2", f"{b}.ffn.w_down", f"{b}.ffn.b_down"),
        *norm("{base}final_layernorm", "decoder.final_norm"),
        rule("lm_head.weight", "lm_head", "linear"),
        rule("lm_head.bias", "lm_head_bias"),
    ]


TABLE = Table(
    bases=("model.", ""), anchor="embed_tokens.weight", rules=tuple(_rules()),
    ignored=(r"rotary_emb\.(inv_freq|original_inv_freq)$", r"^score\."),
)
