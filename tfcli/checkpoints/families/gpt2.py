"""GPT-2 (GPT2LMHeadModel, GPT2Model): config.json reader and checkpoint names. Conv1D
weights are stored (in, out) already; c_attn is q, k, v fused along its last axis."""

from __future__ import annotations

from tfcli.checkpoints.families.common import activation, require_false
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, norm, rule

# GPT2Config() defaults, for the keys read
DEFAULTS: Config = {
    "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
    "n_inner": None, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
    "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
    "add_cross_attention": False, "tie_word_embeddings": True,
}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    require_false(c, "scale_attn_by_inverse_layer_idx", "add_cross_attention")
    d_model = c.integer("n_embd")
    fields = {
        "family": "decoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("n_positions"), "d_model": d_model,
        "n_heads": c.integer("n_head"), "n_layers": c.integer("n_layer"),
        "d_ff": c.optional_integer("n_inner") or 4 * d_model,
        "activation": activation(c, c.text("activation_function"), "activation_function"),
        "norm": "layernorm", "norm_placement": "pre", "norm_eps": c.number("layer_norm_epsilon"),
        "positions": "learned", "bias": True, "tie_embeddings": c.flag("tie_word_embeddings"),
        "lm_head": arch.lm_head,
    }
    if not c.flag("scale_attn_weights"):
        fields["attention_scale"] = 1.0
    return fields, []



def _gpt2_rules() -> list[Rule]:
    h, b = "{base}h.{i}", "decoder.blocks.{i}"
    qkv = tuple(f"{b}.attn.{x}" for x in ("wq", "wk", "wv"))
    bqkv = tuple(f"{b}.attn.{x}" for x in ("bq", "bk", "bv"))
    return [
        rule("{base}wte.weight", "token_embedding"),
        rule("{base}wpe.weight", "position_embedding"),
        *norm(f"{h}.ln_1", f"{b}.attn_norm"),
        Rule(f"{h}.attn.c_attn.weight", qkv, "split"),
        Rule(f"{h}.attn.c_attn.bias", bqkv, "split"),
        rule(f"{h}.attn.c_proj.weight", f"{b}.attn.wo"),
        rule(f"{h}.attn.c_proj.bias", f"{b}.attn.bo"),
        *norm(f"{h}.ln_2", f"{b}.ffn_norm"),
        rule(f"{h}.mlp.c_fc.weight", f"{b}.ffn.w_up"),
        rule(f"{h}.mlp.c_fc.bias", f"{b}.ffn.b_up"),
        rule(f"{h}.mlp.c_proj.weight", f"{b}.ffn.w_down"),
        rule(f"{h}.mlp.c_proj.bias", f"{b}.ffn.b_down"),
        *norm("{base}ln_f", "decoder.final_norm"),
        rule("lm_head.weight", "lm_head", "linear"),
    ]


TABLE = Table(
    bases=("transformer.", ""), anchor="wte.weight", rules=tuple(_gpt2_rules()),
    # causal-mask buffers of old checkpoints; the task heads of GPT2For* (a body-only spec)
    ignored=(r"h\.\d+\.attn\.(bias|masked_bias)$", r"^(score|classifier|qa_outputs)\."),
    tied_copies=("lm_head.weight",),
)

