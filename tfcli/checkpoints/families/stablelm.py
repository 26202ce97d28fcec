"""StableLM / StableLM 2 (StableLmForCausalLM, StableLmModel): config.json reader and checkpoint
names. Partial rotary (`partial_rotary_factor`), LayerNorms, a gated FFN without biases, q/k/v
biases when `use_qkv_bias` (never on o), attention and FFN in parallel from the one input norm
when `use_parallel_residual`. Per-head q/k LayerNorms (`qk_layernorm`) are refused by name."""

from __future__ import annotations

from tfcli.checkpoints.families.common import require_false, unsupported
from tfcli.checkpoints.families.partial_rope import extended_context, partial_rope
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, norm, rule

# StableLmConfig() defaults, for the keys read (partial_rotary_factor 0.25 as its
# __post_init__ sets)
DEFAULTS: Config = {
    "vocab_size": 50304, "intermediate_size": 6912, "hidden_size": 2560,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
    "hidden_act": "silu", "max_position_embeddings": 4096, "layer_norm_eps": 1e-5,
    "tie_word_embeddings": False, "use_qkv_bias": False, "qk_layernorm": False,
    "use_parallel_residual": False, "partial_rotary_factor": 0.25, "rope_theta": 10000.0,
}
# StableLmMLP: down(act(gate(x)) * up(x)), so the activation names a gated FFN
GATED = {"silu": "swiglu", "swish": "swiglu", "gelu": "geglu", "gelu_new": "geglu_tanh",
         "gelu_pytorch_tanh": "geglu_tanh"}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    require_false(c, "qk_layernorm")
    act = c.text("hidden_act")
    if act not in GATED:
        raise unsupported(c, f"hidden_act {shown(act)} is not supported "
                             f"(supported: {', '.join(sorted(GATED))})")
    d_model, n_heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    d_head = d_model // n_heads
    fields: Config = {
        "family": "decoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("max_position_embeddings"), "d_model": d_model,
        "n_heads": n_heads, "n_kv_heads": c.optional_integer("num_key_value_heads") or n_heads,
        "n_layers": c.integer("num_hidden_layers"), "d_ff": c.integer("intermediate_size"),
        "activation": GATED[act], "norm": "layernorm", "norm_placement": "pre",
        "norm_eps": c.number("layer_norm_eps"),
        "parallel_residual": "one_norm" if c.flag("use_parallel_residual") else "off",
        "bias": False, "attention_bias": c.flag("use_qkv_bias"), "attention_out_bias": False,
        "tie_embeddings": c.flag("tie_word_embeddings"), "lm_head": arch.lm_head,
    }
    fields |= partial_rope(c, d_head, "partial_rotary_factor", "rope_theta")
    return extended_context(fields), []


def _rules() -> list[Rule]:
    layer, b = "{base}layers.{i}", "decoder.blocks.{i}"
    attn = [r for x in "qkvo" for r in linear(f"{layer}.self_attn.{x}_proj", f"{b}.attn.w{x}",
                                                 f"{b}.attn.b{x}")]
    ffn = [r for p in ("gate", "up", "down")
           for r in linear(f"{layer}.mlp.{p}_proj", f"{b}.ffn.w_{p}", f"{b}.ffn.b_{p}")]
    return [
        rule("{base}embed_tokens.weight", "token_embedding"),
        *norm(f"{layer}.input_layernorm", f"{b}.attn_norm"),
        *attn,
        *norm(f"{layer}.post_attention_layernorm", f"{b}.ffn_norm"),
        *ffn,
        *norm("{base}norm", "decoder.final_norm"),
        rule("lm_head.weight", "lm_head", "linear"),
    ]


TABLE = Table(
    bases=("model.", ""), anchor="embed_tokens.weight", rules=tuple(_rules()),
    ignored=(r"rotary_emb\.(inv_freq|original_inv_freq)$", r"^score\."),
    tied_copies=("lm_head.weight",),
)
