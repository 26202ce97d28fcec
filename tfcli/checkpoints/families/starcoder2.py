"""StarCoder2 (bigcode/starcoder2-3b / 7b / 15b; `starcoder2`, Starcoder2ForCausalLM): pre-norm
blocks with LayerNorm (scale and bias, `norm_epsilon`), GQA with RoPE (rotate_half), a plain
biased MLP `c_fc` -> GELU (tanh) -> `c_proj`, biases on every projection with `use_bias`, and a
sliding window (4,096 in the published models) on every layer."""

from __future__ import annotations

from tfcli.checkpoints.families import llama
from tfcli.checkpoints.families.common import activation
from tfcli.checkpoints.families.rope import rope_theta, with_rope_scaling
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import BARE, LM, Architecture
from tfcli.checkpoints.names import Rule, Table, linear, norm, rule

# Starcoder2Config() defaults, for the keys read
DEFAULTS: Config = {
    "vocab_size": 49152, "hidden_size": 3072, "intermediate_size": 12288,
    "num_hidden_layers": 30, "num_attention_heads": 24, "num_key_value_heads": 2,
    "hidden_act": "gelu_pytorch_tanh", "max_position_embeddings": 4096, "norm_epsilon": 1e-5,
    "rope_theta": 10000.0, "sliding_window": None, "use_bias": True, "tie_word_embeddings": True,
}
CLASSES: dict[str, Architecture] = {"Starcoder2ForCausalLM": LM, "Starcoder2Model": BARE}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    fields: Config = llama.decoder_sizes(c) | {
        "activation": activation(c, c.text("hidden_act"), "hidden_act"),
        "norm": "layernorm", "norm_placement": "pre", "norm_eps": c.number("norm_epsilon"),
        "positions": "rope", "rope_theta": rope_theta(c), "bias": c.flag("use_bias"),
        "tie_embeddings": c.flag("tie_word_embeddings"), "lm_head": arch.lm_head,
    }
    with_rope_scaling(c, fields)
    window = c.optional_integer("sliding_window")
    if window is not None and window < fields["max_seq_len"]:  # else it never hides a token
        fields["sliding_window"] = window
    return fields, []


def _rules() -> list[Rule]:
    layer, b = "{base}layers.{i}", "decoder.blocks.{i}"
    return [
        rule("{base}embed_tokens.weight", "token_embedding"),
        *norm(f"{layer}.input_layernorm", f"{b}.attn_norm"),
        *[r for x in "qkvo" for r in linear(f"{layer}.self_attn.{x}_proj", f"{b}.attn.w{x}",
                                              f"{b}.attn.b{x}")],
        *norm(f"{layer}.post_attention_layernorm", f"{b}.ffn_norm"),
        *linear(f"{layer}.mlp.c_fc", f"{b}.ffn.w_up", f"{b}.ffn.b_up"),
        *linear(f"{layer}.mlp.c_proj", f"{b}.ffn.w_down", f"{b}.ffn.b_down"),
        *norm("{base}norm", "decoder.final_norm"),
        rule("lm_head.weight", "lm_head", "linear"),
    ]


TABLE = Table(
    bases=("model.", ""), anchor="embed_tokens.weight", rules=tuple(_rules()),
    ignored=(r"rotary_emb\.inv_freq$",), tied_copies=("lm_head.weight",),
)
