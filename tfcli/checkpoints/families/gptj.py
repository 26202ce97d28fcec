"""GPT-J (GPTJForCausalLM, GPTJModel): config.json reader and checkpoint names. RoPE on the
first `rotary_dim` dims of each head in interleaved pairs (rotate_every_two, base 10000 fixed),
attention and FFN in parallel from one shared norm, no attention biases, a biased untied head."""

from __future__ import annotations

from tfcli.checkpoints.families.common import activation, unsupported
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, norm, rule

# GPTJConfig() defaults, for the keys read
DEFAULTS: Config = {
    "vocab_size": 50400, "n_positions": 2048, "n_embd": 4096, "n_layer": 28, "n_head": 16,
    "rotary_dim": 64, "n_inner": None, "activation_function": "gelu_new",
    "layer_norm_epsilon": 1e-5, "tie_word_embeddings": False,
}
GPTJ_THETA = 10000.0  # create_sinusoidal_positions' base: not a config key


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    d_model, n_heads = c.integer("n_embd"), c.integer("n_head")
    d_head = d_model // n_heads
    rotary = c.optional_integer("rotary_dim")
    if rotary is None and n_heads > 1:  # transformers then builds its table over all of n_embd
        raise unsupported(c, "rotary_dim null is not supported (transformers' table would span "
                             "n_embd, wider than a head)")
    if arch.lm_head and c.flag("tie_word_embeddings"):  # the head's bias needs its own matrix
        raise unsupported(c, "tie_word_embeddings = True is not supported (GPT-J's head has a bias)")
    fields: Config = {
        "family": "decoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("n_positions"), "d_model": d_model, "n_heads": n_heads,
        "n_layers": c.integer("n_layer"), "d_ff": c.optional_integer("n_inner") or 4 * d_model,
        "activation": activation(c, c.text("activation_function"), "activation_function"),
        "norm": "layernorm", "norm_placement": "pre", "norm_eps": c.number("layer_norm_epsilon"),
        "parallel_residual": "one_norm", "positions": "rope", "rope_theta": GPTJ_THETA,
        "rotary_dim": rotary or d_head, "rope_pairing": "interleaved",
        "bias": True, "attention_bias": False, "tie_embeddings": False,
        "lm_head": arch.lm_head, "lm_head_bias": arch.lm_head,
    }
    return fields, []


def _rules() -> list[Rule]:
    h, b = "{base}h.{i}", "decoder.blocks.{i}"
    return [
        rule("{base}wte.weight", "token_embedding"),
        *norm(f"{h}.ln_1", f"{b}.attn_norm"),
        *(rule(f"{h}.attn.{x}_proj.weight", f"{b}.attn.w{x}", "linear") for x in "qkv"),
        rule(f"{h}.attn.out_proj.weight", f"{b}.attn.wo", "linear"),
        *linear(f"{h}.mlp.fc_in", f"{b}.ffn.w_up", f"{b}.ffn.b_up"),
        *linear(f"{h}.mlp.fc_out", f"{b}.ffn.w_down", f"{b}.ffn.b_down"),
        *norm("{base}ln_f", "decoder.final_norm"),
        rule("lm_head.weight", "lm_head", "linear"),
        rule("lm_head.bias", "lm_head_bias"),
    ]


TABLE = Table(
    bases=("transformer.", ""), anchor="wte.weight", rules=tuple(_rules()),
    # causal-mask and sin/cos buffers of older checkpoints; task heads of a body-only spec
    ignored=(r"h\.\d+\.attn\.(bias|masked_bias)$", r"embed_positions$",
             r"^(score|qa_outputs)\."),
)
