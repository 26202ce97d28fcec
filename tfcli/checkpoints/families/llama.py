"""LLaMA 1-3.x, Mistral, Mixtral, Qwen 2/2.5/3: config.json readers and one checkpoint name
table (dense rules skip for MoE specs and vice versa; Qwen3's q/k norms skip elsewhere)."""

from __future__ import annotations

from tfcli.checkpoints.families.common import unsupported
from tfcli.checkpoints.families.gemma import attention_pattern
from tfcli.checkpoints.families.rope import rope_theta, with_rope_scaling
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, rule

# LlamaConfig() defaults, for the keys read; the others are LlamaConfig's with their changes
LLAMA_DEFAULTS: Config = {
    "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
    "head_dim": None, "hidden_act": "silu", "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "rope_theta": 10000.0,
    "attention_bias": False, "mlp_bias": False, "sliding_window": None,
}
MISTRAL_DEFAULTS = LLAMA_DEFAULTS | {
    "intermediate_size": 14336, "num_key_value_heads": 8, "max_position_embeddings": 131072,
    "sliding_window": 4096,
}
MIXTRAL_DEFAULTS = MISTRAL_DEFAULTS | {
    "sliding_window": None, "rms_norm_eps": 1e-5, "rope_theta": 1e6,
    "num_local_experts": 8, "num_experts_per_tok": 2,
}
QWEN2_DEFAULTS = LLAMA_DEFAULTS | {
    "vocab_size": 151936, "intermediate_size": 22016, "num_key_value_heads": 32,
    "max_position_embeddings": 32768, "use_sliding_window": False, "layer_types": None,
    "sliding_window": 4096, "max_window_layers": 28,
}
QWEN3_DEFAULTS = QWEN2_DEFAULTS | {"head_dim": 128}


def require_silu(c: ConfigFields) -> None:
    """A SwiGLU family's `hidden_act`: silu (swish) only."""
    act = c.text("hidden_act")
    if act not in ("silu", "swish"):
        raise unsupported(c, f"hidden_act {shown(act)} is not supported (only silu)")


def decoder_sizes(c: ConfigFields) -> Config:
    """The sizes every LLaMA-style config.json names alike (hidden_size, num_attention_heads,
    num_key_value_heads, head_dim, ...): a decoder's widths, heads, layers and context."""
    d_model, n_heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    return {
        "family": "decoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("max_position_embeddings"), "d_model": d_model,
        "n_heads": n_heads, "n_kv_heads": c.optional_integer("num_key_value_heads") or n_heads,
        "d_head": c.optional_integer("head_dim") or d_model // n_heads,
        "n_layers": c.integer("num_hidden_layers"), "d_ff": c.integer("intermediate_size"),
    }


def read_llama(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    require_silu(c)
    fields: Config = decoder_sizes(c) | {
        "activation": "swiglu", "norm": "rmsnorm", "norm_placement": "pre",
        "norm_eps": c.number("rms_norm_eps"), "positions": "rope", "rope_theta": rope_theta(c),
        "bias": False, "attention_bias": c.flag("attention_bias"), "ffn_bias": c.flag("mlp_bias"),
        "tie_embeddings": c.flag("tie_word_embeddings"),
        "lm_head": arch.lm_head,
    }
    with_rope_scaling(c, fields)
    if c.values["model_type"] == "mixtral":
        fields |= {"n_experts": c.integer("num_local_experts"),
                   "experts_per_token": c.integer("num_experts_per_tok")}
    # transformers reads sliding_window only for these two; a window as long as the context
    # never hides a token, so it is left out of the spec
    window = c.optional_integer("sliding_window") if c.values["model_type"] != "llama" else None
    if window is not None and window < fields["max_seq_len"]:
        fields["sliding_window"] = window
    return fields, []


_QWEN2_BODIES = ("qwen2", "qwen2_5_vl_text")  # Qwen2.5-VL's language model: qwen_vl.py


def read_qwen(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    """Qwen2 / 2.5: biases on q, k, v and none on o (not a config key); Qwen3: per-head q/k
    RMSNorm, `attention_bias` on all four projections. Both: sliding windows behind
    `use_sliding_window`."""
    fields, notes = read_llama(c, arch)
    fields.pop("sliding_window", None)  # read_llama's Mistral rule; Qwen's is _qwen_windows
    fields |= _qwen_windows(c, fields["n_layers"])
    fields["ffn_bias"] = False  # no MLP bias in either (an `mlp_bias` key means nothing to them)
    if c.values["model_type"] in _QWEN2_BODIES:
        fields |= {"attention_bias": True, "attention_out_bias": False}
    else:
        fields["qk_norm"] = "per_head"
    return fields, notes


def _qwen_windows(c: ConfigFields, n_layers: int) -> Config:
    """layer_pattern and sliding_window as Qwen2Config / Qwen3Config derive them: with
    `use_sliding_window`, `layer_types` when given, else every layer from `max_window_layers`
    on sliding; without it no layer slides (their sliding_window is set to None)."""
    if not c.flag("use_sliding_window"):
        windowed = [t for t in c.names("layer_types") if t != "full_attention"]
        if windowed:
            raise unsupported(c, f"layer_types {shown(windowed[0])} without use_sliding_window "
                                 "is not supported (only 'full_attention')")
        return {}
    full = min(c.integer("max_window_layers", minimum=0), n_layers)
    return attention_pattern(c, ["global"] * full + ["local"] * (n_layers - full))


def _llama_rules() -> list[Rule]:
    layer, b = "{base}layers.{i}", "decoder.blocks.{i}"
    attn = [r for x in "qkvo" for r in linear(f"{layer}.self_attn.{x}_proj", f"{b}.attn.w{x}",
                                                 f"{b}.attn.b{x}")]
    dense = [r for p in ("gate", "up", "down")
             for r in linear(f"{layer}.mlp.{p}_proj", f"{b}.ffn.w_{p}", f"{b}.ffn.b_{p}")]
    moe = f"{layer}.block_sparse_moe"
    experts = [  # Mixtral's w1 = gate, w3 = up, w2 = down
        rule(f"{moe}.experts.{{e}}.{hf}.weight", f"{b}.ffn.experts.{{e}}.{ours}", "linear")
        for hf, ours in (("w1", "w_gate"), ("w3", "w_up"), ("w2", "w_down"))
    ]
    return [
        rule("{base}embed_tokens.weight", "token_embedding"),
        rule(f"{layer}.input_layernorm.weight", f"{b}.attn_norm.scale"),
        *attn,
        rule(f"{layer}.self_attn.q_norm.weight", f"{b}.attn.q_norm.scale"),  # Qwen3
        rule(f"{layer}.self_attn.k_norm.weight", f"{b}.attn.k_norm.scale"),
        rule(f"{layer}.post_attention_layernorm.weight", f"{b}.ffn_norm.scale"),
        *dense,
        rule(f"{moe}.gate.weight", f"{b}.ffn.router", "linear"),
        *experts,
        rule("{base}norm.weight", "decoder.final_norm.scale"),
        rule("lm_head.weight", "lm_head", "linear"),
        # LayerNorm biases and a head bias (Phi-3.5-MoE's): skipped where the spec has none
        rule(f"{layer}.input_layernorm.bias", f"{b}.attn_norm.bias"),
        rule(f"{layer}.post_attention_layernorm.bias", f"{b}.ffn_norm.bias"),
        rule("{base}norm.bias", "decoder.final_norm.bias"),
        rule("lm_head.bias", "lm_head_bias"),
    ]


TABLE = Table(
    # LlamaForQuestionAnswering keeps its body under "transformer."
    bases=("model.", "transformer.", ""), anchor="embed_tokens.weight", rules=tuple(_llama_rules()),
    # RoPE frequencies are recomputed from rope_theta; score / qa_outputs: task heads of a
    # body-only spec (*ForSequenceClassification, ...)
    ignored=(r"rotary_emb\.inv_freq$", r"^(score|qa_outputs)\."),
    tied_copies=("lm_head.weight",),
    # Hunyuan's spelling of the per-head q/k norms (hunyuan.py), which run after RoPE there
    renames=(("self_attn.query_layernorm.weight", "self_attn.q_norm.weight"),
             ("self_attn.key_layernorm.weight", "self_attn.k_norm.weight")),
)


def stacked_expert_table(attention_extra: list[Rule], ffn: list[Rule]) -> Table:
    """LLaMA's names around a family's own FFN (gpt-oss, Llama 4: stacked experts): the
    embedding, each block's input norm, self-attention (+ `attention_extra`), its FFN norm and
    `ffn`, then the final norm and head."""
    layer, b = "{base}layers.{i}", "decoder.blocks.{i}"
    attention = [r for r in TABLE.rules if ".self_attn." in r.hf and "_norm." not in r.hf]
    return Table(
        bases=TABLE.bases, anchor=TABLE.anchor, ignored=TABLE.ignored,
        tied_copies=TABLE.tied_copies,
        rules=(
            rule("{base}embed_tokens.weight", "token_embedding"),
            rule(f"{layer}.input_layernorm.weight", f"{b}.attn_norm.scale"),
            *attention, *attention_extra,
            rule(f"{layer}.post_attention_layernorm.weight", f"{b}.ffn_norm.scale"),
            *ffn,
            rule("{base}norm.weight", "decoder.final_norm.scale"),
            rule("lm_head.weight", "lm_head", "linear"),
        ),
    )

