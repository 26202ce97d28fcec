"""Phi-3 / Phi-3.5 / Phi-4 (model_type phi3): config.json reader and checkpoint names.

A LLaMA-shaped decoder (RMSNorm, SwiGLU, RoPE, GQA, no biases) whose checkpoints fuse
projections: `qkv_proj` is q | k | v along its output rows (unequal widths under GQA) and
`gate_up_proj` is gate | up; the `split_linear` transform cuts them at the spec's widths.
Long-context checkpoints (128k, Phi-3.5) use LongRoPE, whose pretraining length is the
top-level `original_max_position_embeddings` (it wins over a nested one, as in transformers).
"""

from __future__ import annotations

from tfcli.checkpoints.families.common import unsupported
from tfcli.checkpoints.families.partial_rope import rotated_dims
from tfcli.checkpoints.families.rope import rope_scaling_fields
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, rule

# Phi3Config() defaults, for the keys read
DEFAULTS: Config = {
    "vocab_size": 32064, "hidden_size": 3072, "intermediate_size": 8192,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
    "head_dim": None, "hidden_act": "silu", "max_position_embeddings": 4096,
    "original_max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False, "rope_theta": 10000.0, "sliding_window": None,
}
# transformers' Phi3Config renames these older spellings to longrope; it refuses any other type
_LONGROPE_NAMES = frozenset({"longrope", "su", "yarn"})


def _rope_source(c: ConfigFields) -> ConfigFields:
    """The RoPE object transformers reads: `rope_scaling` when set, else `rope_parameters`."""
    scaling = c.section("rope_scaling")
    return scaling if scaling.values else c.section("rope_parameters")


def _rope(c: ConfigFields, d_head: int) -> Config:
    """rope_theta, rotary_dim (Phi-4-mini rotates 3/4 of each head) and rope_scaling (LongRoPE
    or none) of the spec."""
    source = _rope_source(c)
    fields: Config = {"rope_theta": (source if source.has("rope_theta") else c).number("rope_theta")}
    holder = source if source.has("partial_rotary_factor") else c
    partial = holder.number("partial_rotary_factor", default=1.0)
    if partial != 1.0:
        fields["rotary_dim"] = rotated_dims(c, d_head, partial,
                                            f"{holder.prefix}partial_rotary_factor")
    kind = source.optional_text("rope_type") or source.optional_text("type") or "default"
    if kind == "default":
        return fields
    if kind not in _LONGROPE_NAMES:
        raise unsupported(c, f"RoPE scaling {shown(kind)} is not supported (Phi-3 reads only "
                             "'longrope', also spelled 'su' or 'yarn')")
    # the top-level pretraining length wins over a nested one (transformers' standardize_rope_params)
    original = c.integer("original_max_position_embeddings", minimum=2)
    source = ConfigFields(source.values | {"original_max_position_embeddings": original},
                          source.file, source.prefix)
    return fields | {"rope_scaling": rope_scaling_fields(c, source, "longrope")}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    """Phi3ForCausalLM: no biases anywhere (not config keys: transformers hard-codes them off,
    so `attention_bias` / `mlp_bias` mean nothing here); a sliding window when set shorter than
    the context (transformers' mask: each query sees itself and window - 1 earlier keys, the
    spec's convention)."""
    act = c.text("hidden_act")
    if act not in ("silu", "swish"):
        raise unsupported(c, f"hidden_act {shown(act)} is not supported (only silu)")
    d_model, n_heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    d_head = c.optional_integer("head_dim") or d_model // n_heads
    fields: Config = {
        "family": "decoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("max_position_embeddings"), "d_model": d_model,
        "n_heads": n_heads, "n_kv_heads": c.optional_integer("num_key_value_heads") or n_heads,
        "d_head": d_head,
        "n_layers": c.integer("num_hidden_layers"), "d_ff": c.integer("intermediate_size"),
        "activation": "swiglu", "norm": "rmsnorm", "norm_placement": "pre",
        "norm_eps": c.number("rms_norm_eps"), "positions": "rope", **_rope(c, d_head), "bias": False,
        "tie_embeddings": c.flag("tie_word_embeddings"), "lm_head": arch.lm_head,
    }
    window = c.optional_integer("sliding_window")
    if window is not None and window < fields["max_seq_len"]:  # a longer one hides nothing
        fields["sliding_window"] = window
    return fields, []


def _rules() -> list[Rule]:
    layer, b = "{base}layers.{i}", "decoder.blocks.{i}"
    qkv = tuple(f"{b}.attn.{x}" for x in ("wq", "wk", "wv"))
    gate_up = (f"{b}.ffn.w_gate", f"{b}.ffn.w_up")
    return [
        rule("{base}embed_tokens.weight", "token_embedding"),
        rule(f"{layer}.input_layernorm.weight", f"{b}.attn_norm.scale"),
        Rule(f"{layer}.self_attn.qkv_proj.weight", qkv, "split_linear"),
        rule(f"{layer}.self_attn.o_proj.weight", f"{b}.attn.wo", "linear"),
        rule(f"{layer}.post_attention_layernorm.weight", f"{b}.ffn_norm.scale"),
        Rule(f"{layer}.mlp.gate_up_proj.weight", gate_up, "split_linear"),
        rule(f"{layer}.mlp.down_proj.weight", f"{b}.ffn.w_down", "linear"),
        rule("{base}norm.weight", "decoder.final_norm.scale"),
        rule("lm_head.weight", "lm_head", "linear"),
    ]


TABLE = Table(
    bases=("model.", ""), anchor="embed_tokens.weight", rules=tuple(_rules()),
    # RoPE tables are recomputed; score: the head of a body-only spec (*ForSequenceClassification)
    ignored=(r"rotary_emb\.(inv_freq|original_inv_freq)$", r"^score\."),
    tied_copies=("lm_head.weight",),
)
