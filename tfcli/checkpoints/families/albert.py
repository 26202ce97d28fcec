"""ALBERT (AlbertModel and its heads): factorised embeddings (embedding_size wide, then
encoder.embedding_hidden_mapping_in to hidden_size, always built: spec.embedding_dim) and one
block's weights run by every layer (spec.shared_layers). Only num_hidden_groups 1 and
inner_group_num 1 - every published ALBERT - are read: more groups would be several shared
blocks, more inner layers several blocks per group, which tfcli does not model."""

from __future__ import annotations

from tfcli.checkpoints.families.bert_like import (INDEX_BUFFERS, LAYERNORM_RENAMES, body_fields,
                                                  require_absolute_positions)
from tfcli.checkpoints.families.common import unsupported
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, norm, rule

# AlbertConfig() defaults, for the keys read
DEFAULTS: Config = {
    "vocab_size": 30000, "embedding_size": 128, "hidden_size": 4096, "num_hidden_layers": 12,
    "num_hidden_groups": 1, "num_attention_heads": 64, "intermediate_size": 16384,
    "inner_group_num": 1, "hidden_act": "gelu_new", "max_position_embeddings": 512,
    "type_vocab_size": 2, "layer_norm_eps": 1e-12, "tie_word_embeddings": True,
}


def _require_one_group(c: ConfigFields) -> None:
    for key in ("num_hidden_groups", "inner_group_num"):
        if c.integer(key) != 1:
            raise unsupported(c, f"{key} {c.integer(key):,} is not supported (only 1: one "
                                 "block's weights shared by every layer)")


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    _require_one_group(c)
    require_absolute_positions(c)
    fields = body_fields(c, arch) | {"embedding_dim": c.integer("embedding_size"),
                                     "shared_layers": True}
    return fields, []


def _rules() -> list[Rule]:
    e, b = "{base}embeddings", "encoder.blocks.0"  # the one shared block
    layer = "{base}encoder.albert_layer_groups.0.albert_layers.0"
    return [
        rule(f"{e}.word_embeddings.weight", "token_embedding"),
        rule(f"{e}.position_embeddings.weight", "position_embedding"),
        rule(f"{e}.token_type_embeddings.weight", "token_type_embedding"),
        *norm(f"{e}.LayerNorm", "embedding_norm"),
        *linear("{base}encoder.embedding_hidden_mapping_in", "embedding_project",
                "embedding_project_bias"),
        *linear(f"{layer}.attention.query", f"{b}.attn.wq", f"{b}.attn.bq"),
        *linear(f"{layer}.attention.key", f"{b}.attn.wk", f"{b}.attn.bk"),
        *linear(f"{layer}.attention.value", f"{b}.attn.wv", f"{b}.attn.bv"),
        *linear(f"{layer}.attention.dense", f"{b}.attn.wo", f"{b}.attn.bo"),
        *norm(f"{layer}.attention.LayerNorm", f"{b}.attn_norm"),  # post-LN: after attention
        *linear(f"{layer}.ffn", f"{b}.ffn.w_up", f"{b}.ffn.b_up"),
        *linear(f"{layer}.ffn_output", f"{b}.ffn.w_down", f"{b}.ffn.b_down"),
        *norm(f"{layer}.full_layer_layer_norm", f"{b}.ffn_norm"),
        *linear("{base}pooler", "pooler_w", "pooler_b"),
        # head masked_lm (AlbertMLMHead): dense to embedding_size, hidden_act, LayerNorm, then
        # the tied decoder and its bias
        *linear("predictions.dense", "head_dense", "head_dense_bias"),
        *norm("predictions.LayerNorm", "head_norm"),
        rule("predictions.decoder.weight", "lm_head", "linear"),
        rule("predictions.bias", "lm_head_bias"),
    ]


TABLE = Table(
    bases=("albert.", ""), anchor="embeddings.word_embeddings.weight", rules=tuple(_rules()),
    # a task head's tensors (predictions.*, sop_classifier.*, ...) are ignored by a spec
    # without that head
    # (predictions.decoder.bias is predictions.bias)
    ignored=(INDEX_BUFFERS, r"^(predictions|sop_classifier|classifier|qa_outputs)\.",
             r"^predictions\.decoder\.bias$"),
    tied_copies=("predictions.decoder.weight",),
    renames=LAYERNORM_RENAMES,
)
