"""RoBERTa and XLM-RoBERTa (one modeling; XLM-R's config class differs in its defaults only):
BERT's post-LN body whose learned positions start past the padding index. transformers numbers
a row's real tokens padding_idx + 1, padding_idx + 2, ... (create_position_ids_from_input_ids),
so the table has max_position_embeddings rows of which the first padding_idx + 1 no real token
reads: spec.position_offset = pad_token_id + 1, max_seq_len = the rest (512 of 514)."""

from __future__ import annotations

from tfcli.checkpoints.families.bert_like import (INDEX_BUFFERS, LAYERNORM_RENAMES, body_fields,
                                                  body_rules, require_absolute_positions)
from tfcli.checkpoints.families.common import require_false, unsupported
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, norm, rule

# RobertaConfig() defaults, for the keys read
ROBERTA_DEFAULTS: Config = {
    "vocab_size": 50265, "hidden_size": 768, "num_hidden_layers": 12,
    "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
    "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
    "pad_token_id": 1, "is_decoder": False, "add_cross_attention": False,
    "tie_word_embeddings": True,
}
# XLMRobertaConfig() defaults: RoBERTa's but for BERT's vocabulary size
XLM_ROBERTA_DEFAULTS: Config = ROBERTA_DEFAULTS | {"vocab_size": 30522}


def _positions(c: ConfigFields) -> tuple[int, int]:
    """(position_offset, max_seq_len): real tokens read rows pad_token_id + 1 onwards."""
    offset = c.integer("pad_token_id", minimum=0) + 1
    rows = c.integer("max_position_embeddings")
    if rows <= offset:
        raise unsupported(c, f"max_position_embeddings {rows:,} leaves no position for a real "
                             f"token: they start at pad_token_id + 1 = {offset:,}")
    return offset, rows - offset


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    require_false(c, "is_decoder", "add_cross_attention")
    require_absolute_positions(c)
    offset, max_seq_len = _positions(c)
    fields = body_fields(c, arch) | {"max_seq_len": max_seq_len, "position_offset": offset}
    if arch.head == "masked_lm":
        fields["head_activation"] = "gelu"  # RobertaLMHead applies gelu whatever hidden_act
    notes = [f"positions of real tokens start at pad_token_id + 1 = {offset} "
             "(position_offset); a left-padded row needs its positions given"]
    return fields, notes


def _rules() -> list[Rule]:
    return [
        *body_rules(),
        *linear("{base}pooler.dense", "pooler_w", "pooler_b"),
        # head masked_lm (RobertaLMHead): dense, gelu, layer_norm, the tied decoder and its bias
        *linear("lm_head.dense", "head_dense", "head_dense_bias"),
        *norm("lm_head.layer_norm", "head_norm"),
        rule("lm_head.decoder.weight", "lm_head", "linear"),
        rule("lm_head.bias", "lm_head_bias"),
    ]


TABLE = Table(
    bases=("roberta.", ""), anchor="embeddings.word_embeddings.weight", rules=tuple(_rules()),
    # a task head's tensors (lm_head.*, classifier.*, qa_outputs.*) are ignored by a spec
    # without that head; lm_head.decoder.bias is the same tensor as lm_head.bias
    ignored=(INDEX_BUFFERS, r"^(lm_head|classifier|qa_outputs)\.", r"^lm_head\.decoder\.bias$"),
    tied_copies=("lm_head.decoder.weight",),
    # RobertaForSequenceClassification's head (RobertaClassificationHead) reads the first token
    # through classifier.dense and tanh: the pooler (RobertaModel's own is not built there),
    # then out_proj: the classifier
    renames=(*LAYERNORM_RENAMES,
             *((f"classifier.dense.{w}", f"roberta.pooler.dense.{w}") for w in ("weight", "bias")),
             *((f"classifier.out_proj.{w}", f"classifier.{w}") for w in ("weight", "bias"))),
)
