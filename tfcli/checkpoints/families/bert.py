"""BERT (BertModel and its task heads): a post-LN encoder with an embedding LayerNorm and a
pooler. config.json reader and checkpoint names."""

from __future__ import annotations

from tfcli.checkpoints.families.bert_like import body_fields, body_rules
from tfcli.checkpoints.families.common import require_false, unsupported
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, norm, rule

# BertConfig() defaults, for the keys read
DEFAULTS: Config = {
    "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
    "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
    "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
    "position_embedding_type": "absolute", "is_decoder": False, "add_cross_attention": False,
    "tie_word_embeddings": True,
}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    require_false(c, "is_decoder", "add_cross_attention")
    positions = c.text("position_embedding_type")
    if positions != "absolute":
        raise unsupported(c, f"position_embedding_type {shown(positions)} is not supported "
                             "(only 'absolute')")
    fields = body_fields(c, arch)
    if arch.head == "masked_lm" and not fields["tie_embeddings"]:
        # transformers 5 then unties cls.predictions.decoder.bias from cls.predictions.bias:
        # two (vocab,) biases, one of them never used
        raise unsupported(c, "an untied masked-LM head (tie_word_embeddings false) is not "
                             "supported: transformers keeps an unused second decoder bias")
    return fields, []



def _bert_rules() -> list[Rule]:
    return [
        *body_rules(),
        *linear("{base}pooler.dense", "pooler_w", "pooler_b"),
        # head masked_lm: the transform, then the decoder (tied: the embedding) and its bias
        *linear("cls.predictions.transform.dense", "head_dense", "head_dense_bias"),
        *norm("cls.predictions.transform.LayerNorm", "head_norm"),
        rule("cls.predictions.decoder.weight", "lm_head", "linear"),
        rule("cls.predictions.bias", "lm_head_bias"),
    ]


TABLE = Table(
    bases=("bert.", ""), anchor="embeddings.word_embeddings.weight", rules=tuple(_bert_rules()),
    # position_ids / token_type_ids are index buffers; the head's tensors (cls.*, classifier.*)
    # are ignored by a spec without that head (`head: none` on a BertFor* checkpoint);
    # cls.predictions.decoder.bias is the same tensor as cls.predictions.bias.
    ignored=(r"embeddings\.(position_ids|token_type_ids)$", r"^(cls|classifier|qa_outputs)\.",
             r"^cls\.predictions\.decoder\.bias$"),
    tied_copies=("cls.predictions.decoder.weight",),
    # TF-era LayerNorm names; next-sentence prediction's classifier is cls.seq_relationship
    renames=((".gamma", ".weight"), (".beta", ".bias"),
             ("cls.seq_relationship.weight", "classifier.weight"),
             ("cls.seq_relationship.bias", "classifier.bias")),
)

