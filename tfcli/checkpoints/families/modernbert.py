"""ModernBERT (ModernBertModel and its heads): a pre-norm encoder with RoPE and no position
table, LayerNorms without bias (norm_bias false: spec norm layernorm_nobias), an embedding norm
that block 0's attention reads as it is (its attn_norm is Identity: spec first_attn_norm false),
a fused Wqkv, a GeGLU MLP (Wi = input | gate, act(input) * gate), a final norm, and local
layers of a bidirectional sliding window between global ones.

The window: transformers' local layers let query i see key j when |i - j| <= local_attention
// 2 (ModernBertConfig.sliding_window, masking_utils' bidirectional overlay); the spec's encoder
sliding_window w means |i - j| < w, so w = local_attention // 2 + 1. The pattern: layer_types
when given (full_attention = global, sliding_attention = local), else layer i is global when i
is a multiple of global_attn_every_n_layers. RoPE bases: rope_parameters' full_attention /
sliding_attention rope_theta, else global_rope_theta / local_rope_theta (160,000 / 10,000).
"""

from __future__ import annotations

from tfcli.checkpoints.families.common import activation, unsupported
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, norm, rule

# ModernBertConfig() defaults, for the keys read (global_attn_every_n_layers, global_rope_theta
# and local_rope_theta are __post_init__ / rope keyword defaults of the published configs)
DEFAULTS: Config = {
    "vocab_size": 50368, "hidden_size": 768, "intermediate_size": 1152,
    "num_hidden_layers": 22, "num_attention_heads": 12, "hidden_activation": "gelu",
    "max_position_embeddings": 8192, "norm_eps": 1e-5, "norm_bias": False,
    "attention_bias": False, "mlp_bias": False, "local_attention": 128,
    "global_attn_every_n_layers": 3, "layer_types": None, "rope_parameters": None,
    "rope_scaling": None, "global_rope_theta": 160000.0, "local_rope_theta": 10000.0,
    "decoder_bias": True, "classifier_pooling": "cls", "classifier_bias": False,
    "classifier_activation": "gelu", "tie_word_embeddings": True,
}
# hidden_activation -> the gated spec.activation of Wi's act(input) * gate
GATED = {"gelu": "geglu", "gelu_new": "geglu_tanh", "gelu_pytorch_tanh": "geglu_tanh",
         "silu": "swiglu", "swish": "swiglu"}
LAYER_KINDS = {"full_attention": "global", "sliding_attention": "local"}
POOLING = {"cls": "first", "mean": "mean"}
MAX_PATTERN = 1024  # spec.layer_pattern's longest list


def _pattern(c: ConfigFields, n_layers: int) -> list[str]:
    """Each layer's kind, the shortest list that repeats into them."""
    types = c.names("layer_types")
    if types:
        if len(types) != n_layers:
            raise c.error("layer_types", f"lists {len(types):,} layers for num_hidden_layers "
                                         f"{n_layers:,}")
        unknown = sorted(set(types) - set(LAYER_KINDS))
        if unknown:
            raise c.error("layer_types", f"{shown(unknown[0])} is not a layer type "
                                         f"(supported: {', '.join(LAYER_KINDS)})")
        return [LAYER_KINDS[t] for t in types[:MAX_PATTERN + 1]]
    every = c.integer("global_attn_every_n_layers")
    return ["global"] + ["local"] * (min(every, n_layers, MAX_PATTERN + 1) - 1)


def _rope_theta(c: ConfigFields, kind: str, legacy: str) -> float:
    """One layer kind's RoPE base: rope_parameters[kind].rope_theta, else the legacy key;
    only the default RoPE (no scaling) is read."""
    given = c.section("rope_parameters").section(kind)
    rope_type = given.optional_text("rope_type")
    if rope_type not in (None, "default"):
        raise unsupported(c, f"rope_parameters.{kind}.rope_type {shown(rope_type)} is not "
                             "supported (only 'default')")
    return given.number("rope_theta") if given.has("rope_theta") else c.number(legacy)


def _attention_fields(c: ConfigFields, n_layers: int) -> Config:
    """RoPE, and the local layers' window and base when any layer is local."""
    if c.values.get("rope_scaling") is not None:
        raise unsupported(c, "rope_scaling is not supported (plain RoPE only)")
    if c.values.get("head_dim") is not None:  # RoPE would read it, attention would not
        raise unsupported(c, "head_dim is not supported (ModernBERT's heads are "
                             "hidden_size / num_attention_heads wide)")
    fields: Config = {"positions": "rope",
                      "rope_theta": _rope_theta(c, "full_attention", "global_rope_theta")}
    pattern = _pattern(c, n_layers)
    if "local" in pattern:
        fields |= {"layer_pattern": pattern,
                   "sliding_window": c.integer("local_attention", minimum=0) // 2 + 1,
                   "rope_local_theta": _rope_theta(c, "sliding_attention", "local_rope_theta")}
    return fields


def _gated(c: ConfigFields) -> str:
    act = c.text("hidden_activation")
    if act not in GATED:
        raise unsupported(c, f"hidden_activation {shown(act)} is not supported "
                             f"(supported: {', '.join(sorted(GATED))})")
    return GATED[act]


def _head(c: ConfigFields, arch: Architecture) -> Config:
    """ModernBertPredictionHead (dense with classifier_bias, classifier_activation, norm)
    before the tied decoder (decoder_bias) or the classifier (always biased)."""
    if not arch.head:
        return {}
    head: Config = {"head_activation": activation(c, c.text("classifier_activation"),
                                                  "classifier_activation"),
                    "head_bias": c.flag("classifier_bias")}
    if arch.head == "masked_lm":
        return head | {"lm_head_bias": c.flag("decoder_bias")}
    head["classifier_norm"] = True
    if arch.head == "sequence_classification":
        pooling = c.text("classifier_pooling")
        if pooling not in POOLING:
            raise c.error("classifier_pooling", f"expected 'cls' or 'mean', got {shown(pooling)}")
        head["classifier_pooling"] = POOLING[pooling]
    return head


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    n_layers = c.integer("num_hidden_layers")
    fields: Config = {
        "family": "encoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("max_position_embeddings"), "d_model": c.integer("hidden_size"),
        "n_heads": c.integer("num_attention_heads"), "n_layers": n_layers,
        "d_ff": c.integer("intermediate_size"), "activation": _gated(c),
        "norm": "layernorm" if c.flag("norm_bias") else "layernorm_nobias",
        "norm_placement": "pre", "norm_eps": c.number("norm_eps"), "embedding_norm": True,
        "first_attn_norm": False, "bias": False,
        "attention_bias": c.flag("attention_bias"), "ffn_bias": c.flag("mlp_bias"),
        "lm_head": False, "tie_embeddings": c.flag("tie_word_embeddings"),
        **_attention_fields(c, n_layers), **_head(c, arch),
    }
    return fields, []


def _rules() -> list[Rule]:
    e, layer, b = "{base}embeddings", "{base}layers.{i}", "encoder.blocks.{i}"
    qkv, qkv_bias = ((f"{b}.attn.{x}" for x in names)
                     for names in (("wq", "wk", "wv"), ("bq", "bk", "bv")))
    return [
        rule(f"{e}.tok_embeddings.weight", "token_embedding"),
        *norm(f"{e}.norm", "embedding_norm"),
        *norm(f"{layer}.attn_norm", f"{b}.attn_norm"),  # none in block 0 (Identity)
        Rule(f"{layer}.attn.Wqkv.weight", tuple(qkv), "split_linear"),  # q | k | v
        Rule(f"{layer}.attn.Wqkv.bias", tuple(qkv_bias), "split_linear"),
        *linear(f"{layer}.attn.Wo", f"{b}.attn.wo", f"{b}.attn.bo"),
        *norm(f"{layer}.mlp_norm", f"{b}.ffn_norm"),
        # Wi = input | gate, act(input) * gate: the activated half is the spec's w_gate
        Rule(f"{layer}.mlp.Wi.weight", (f"{b}.ffn.w_gate", f"{b}.ffn.w_up"), "split_linear"),
        Rule(f"{layer}.mlp.Wi.bias", (f"{b}.ffn.b_gate", f"{b}.ffn.b_up"), "split_linear"),
        *linear(f"{layer}.mlp.Wo", f"{b}.ffn.w_down", f"{b}.ffn.b_down"),
        *norm("{base}final_norm", "encoder.final_norm"),
        # the heads: ModernBertPredictionHead, then the (tied) decoder and its bias, or the
        # classifier (the shared classifier rules)
        *linear("head.dense", "head_dense", "head_dense_bias"),
        *norm("head.norm", "head_norm"),
        rule("decoder.weight", "lm_head", "linear"),
        rule("decoder.bias", "lm_head_bias"),
    ]


TABLE = Table(
    bases=("model.", ""), anchor="embeddings.tok_embeddings.weight", rules=tuple(_rules()),
    # RoPE tables are recomputed; a head's tensors are ignored by a spec without that head
    ignored=(r"rotary_emb\.", r"^(head|decoder)\."),
    tied_copies=("decoder.weight",),
)
