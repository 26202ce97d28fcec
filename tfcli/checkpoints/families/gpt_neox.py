"""GPT-NeoX / Pythia (GPTNeoXForCausalLM, GPTNeoXModel): config.json reader and checkpoint
names. Partial rotary (`rotary_pct` of each head), parallel attention and FFN from two norms
(`use_parallel_residual`), biases on every projection (`attention_bias` for q/k/v and o), an
untied output head `embed_out`. query_key_value fuses q, k and v head by head."""

from __future__ import annotations

from tfcli.checkpoints.families.common import activation
from tfcli.checkpoints.families.partial_rope import extended_context, partial_rope
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, norm, rule

# GPTNeoXConfig() defaults, for the keys read (rotary_pct / rotary_emb_base: the older
# top-level spellings transformers 5 still reads into rope_parameters)
DEFAULTS: Config = {
    "vocab_size": 50432, "hidden_size": 6144, "num_hidden_layers": 44,
    "num_attention_heads": 64, "intermediate_size": 24576, "hidden_act": "gelu",
    "max_position_embeddings": 2048, "layer_norm_eps": 1e-5, "tie_word_embeddings": False,
    "use_parallel_residual": True, "attention_bias": True, "rotary_pct": 0.25,
    "rotary_emb_base": 10000.0,
}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    d_model, n_heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    d_head = d_model // n_heads  # transformers refuses a hidden_size its heads do not divide
    fields: Config = {
        "family": "decoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("max_position_embeddings"), "d_model": d_model,
        "n_heads": n_heads, "n_layers": c.integer("num_hidden_layers"),
        "d_ff": c.integer("intermediate_size"),
        "activation": activation(c, c.text("hidden_act"), "hidden_act"),
        "norm": "layernorm", "norm_placement": "pre", "norm_eps": c.number("layer_norm_eps"),
        "parallel_residual": "two_norms" if c.flag("use_parallel_residual") else "off",
        "bias": True, "attention_bias": c.flag("attention_bias"),
        "tie_embeddings": c.flag("tie_word_embeddings"), "lm_head": arch.lm_head,
    }
    fields |= partial_rope(c, d_head, "rotary_pct", "rotary_emb_base")
    return extended_context(fields), []


def _rules() -> list[Rule]:
    layer, b = "{base}layers.{i}", "decoder.blocks.{i}"
    attn = f"{layer}.attention"
    return [
        rule("{base}embed_in.weight", "token_embedding"),
        *norm(f"{layer}.input_layernorm", f"{b}.attn_norm"),
        Rule(f"{attn}.query_key_value.weight", tuple(f"{b}.attn.w{x}" for x in "qkv"),
             "split_heads3"),
        Rule(f"{attn}.query_key_value.bias", tuple(f"{b}.attn.b{x}" for x in "qkv"),
             "split_heads3"),
        *linear(f"{attn}.dense", f"{b}.attn.wo", f"{b}.attn.bo"),
        *norm(f"{layer}.post_attention_layernorm", f"{b}.ffn_norm"),
        *linear(f"{layer}.mlp.dense_h_to_4h", f"{b}.ffn.w_up", f"{b}.ffn.b_up"),
        *linear(f"{layer}.mlp.dense_4h_to_h", f"{b}.ffn.w_down", f"{b}.ffn.b_down"),
        *norm("{base}final_layer_norm", "decoder.final_norm"),
        rule("lm_head.weight", "lm_head", "linear"),
    ]


TABLE = Table(
    bases=("gpt_neox.", ""), anchor="embed_in.weight", rules=tuple(_rules()),
    # causal-mask and RoPE buffers of older checkpoints; task heads of a body-only spec
    ignored=(r"attention\.(bias|masked_bias)$", r"rotary_emb\.(inv_freq|original_inv_freq)$",
             r"^(score|classifier|qa_outputs)\."),
    tied_copies=("lm_head.weight",),
    renames=(("embed_out.weight", "lm_head.weight"),),  # the hub's Pythia checkpoints
)
