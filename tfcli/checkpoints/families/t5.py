"""T5 (T5ForConditionalGeneration, T5Model), and mT5 / UMT5 (T5 v1.1 under other names; UMT5
with a relative-position table per block): encoder blocks are [self-attn, FFN], decoder blocks
[self-attn, cross-attn, FFN]. config.json readers and checkpoint names."""

from __future__ import annotations

from dataclasses import replace

from tfcli.checkpoints.families.common import activation, unsupported
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, rule

# T5Config() defaults, for the keys read
DEFAULTS: Config = {
    "vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 2048, "num_layers": 6,
    "num_decoder_layers": None, "num_heads": 8, "relative_attention_num_buckets": 32,
    "relative_attention_max_distance": 128, "layer_norm_epsilon": 1e-6,
    "feed_forward_proj": "relu", "tie_word_embeddings": True, "n_positions": 512,
}


def _ffn_activation(c: ConfigFields) -> tuple[str, list[str]]:
    proj = c.text("feed_forward_proj")
    gated, _, act = proj.rpartition("-")
    if gated not in ("", "gated"):
        raise unsupported(c, f"feed_forward_proj {shown(proj)} is not a valid T5 activation")
    if not gated:
        return activation(c, act, "feed_forward_proj"), []
    if act == "gelu":  # HF runs 'gated-gelu' with gelu_new, the tanh approximation
        return "geglu_tanh", []
    if act in ("silu", "swish"):
        return "swiglu", []
    raise unsupported(c, f"feed_forward_proj {shown(proj)} is not supported "
                         "(supported: relu, gelu, gated-gelu, gated-silu)")


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    ffn_activation, notes = _ffn_activation(c)
    tied = c.flag("tie_word_embeddings")
    # transformers 5 writes tie_word_embeddings: true always and keeps T5 v1.1's "no rescale"
    # in scale_decoder_outputs; older configs say both with tie_word_embeddings.
    rescale = c.flag("scale_decoder_outputs", default=tied)
    head = arch.lm_head
    n_layers = c.integer("num_layers")
    fields: Config = {
        "family": "encoder-decoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("n_positions"), "d_model": c.integer("d_model"),
        "n_heads": c.integer("num_heads"), "d_head": c.integer("d_kv"), "n_layers": n_layers,
        "n_decoder_layers": c.optional_integer("num_decoder_layers") or n_layers,
        "d_ff": c.integer("d_ff"), "activation": ffn_activation, "norm": "rmsnorm",
        "norm_placement": "pre", "norm_eps": c.number("layer_norm_epsilon"),
        "positions": "relative", "relative_buckets": c.integer("relative_attention_num_buckets"),
        "relative_max_distance": c.integer("relative_attention_max_distance"), "bias": False,
        "attention_scale": 1.0, "tie_embeddings": tied, "lm_head": head,
        "tied_head_rescale": tied and rescale and head,
    }
    if rescale and not tied:
        raise unsupported(c, "a rescaled but untied output head is not supported")
    if arch.encoder_only:  # T5EncoderModel: the shared embedding and the encoder stack alone
        fields |= {"family": "encoder", "tied_head_rescale": False}
        del fields["n_decoder_layers"]
    return fields, notes


def _t5_ffn(layer: str, b: str) -> list[Rule]:
    ffn, plain = f"{layer}.DenseReluDense", (lambda s: not s.gated)
    return [
        rule(f"{ffn}.wi.weight", f"{b}.ffn.w_up", "linear", plain),
        rule(f"{ffn}.wi_0.weight", f"{b}.ffn.w_gate", "linear"),  # gated: wi_0 takes the act
        rule(f"{ffn}.wi_1.weight", f"{b}.ffn.w_up", "linear", lambda s: s.gated),
        rule(f"{ffn}.wo.weight", f"{b}.ffn.w_down", "linear"),
        rule(f"{layer}.layer_norm.weight", f"{b}.ffn_norm.scale"),
    ]


def _t5_attention(layer: str, module: str, ours: str, norm_path: str) -> list[Rule]:
    return [
        *(rule(f"{layer}.{module}.{x}.weight", f"{ours}.w{x}", "linear") for x in "qkvo"),
        rule(f"{layer}.layer_norm.weight", f"{norm_path}.scale"),
    ]


def _t5_stack(stack: str) -> list[Rule]:
    layer, b = f"{stack}.block.{{i}}.layer", f"{stack}.blocks.{{i}}"
    rules = [
        rule(f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
             f"{stack}.relative_bias"),
        *_t5_attention(f"{layer}.0", "SelfAttention", f"{b}.attn", f"{b}.attn_norm"),
    ]
    if stack == "decoder":
        rules += _t5_attention(f"{layer}.1", "EncDecAttention", f"{b}.cross_attn", f"{b}.cross_norm")
    rules += _t5_ffn(f"{layer}.{2 if stack == 'decoder' else 1}", b)
    return [*rules, rule(f"{stack}.final_layer_norm.weight", f"{stack}.final_norm.scale")]


TABLE = Table(
    bases=("",), anchor="shared.weight",
    rules=(rule("shared.weight", "token_embedding"), *_t5_stack("encoder"), *_t5_stack("decoder"),
           rule("lm_head.weight", "lm_head", "linear")),
    # Each stack's embed_tokens is the shared table; old checkpoints carry an unused
    # cross-attention relative bias (transformers ignores it too).
    ignored=(r"^(encoder|decoder)\.embed_tokens\.weight$",
             r"^decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight$",
             r"^qa_outputs\."),  # T5ForQuestionAnswering's head (a body-only spec)
    tied_copies=("lm_head.weight",),
)


# mT5 and UMT5 are T5 v1.1 under other names (MT5Config, UMT5Config defaults: mt5-small's sizes,
# gated-gelu). transformers 5 ties their head to `shared` only when config.json does not store
# `lm_head.weight` apart: the published checkpoints say tie_word_embeddings false and carry it.
MT5_DEFAULTS: Config = DEFAULTS | {
    "vocab_size": 250112, "d_ff": 1024, "num_layers": 8, "num_heads": 6,
    "feed_forward_proj": "gated-gelu",
}
UMT5_DEFAULTS: Config = MT5_DEFAULTS


def read_mt5(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    """mT5: T5 v1.1's reader; transformers 5's MT5 never rescales before the head, tied or not."""
    fields, notes = read(c, arch)
    return fields | {"tied_head_rescale": False}, notes


def read_umt5(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    """UMT5: T5 v1.1 with a relative-position table in every block's self-attention (UMT5's
    has_relative_attention_bias=True in every layer), rescaled as T5 (scale_decoder_outputs)."""
    fields, notes = read(c, arch)
    return fields | {"relative_bias_per_layer": True}, notes


def _per_layer_tables(stack: str) -> Rule:
    return rule(f"{stack}.block.{{i}}.layer.0.SelfAttention.relative_attention_bias.weight",
                f"{stack}.blocks.{{i}}.relative_bias")


# UMT5: block i's own table; T5's rule for block 0's (the stack's shared table) is skipped, as
# the spec has no such array
UMT5_TABLE = replace(TABLE, rules=(*TABLE.rules, _per_layer_tables("encoder"),
                                   _per_layer_tables("decoder")))
