"""ELECTRA (ElectraModel, discriminators and generators): BERT's post-LN body without a pooler;
when embedding_size differs from hidden_size (ELECTRA-small) the embeddings are embedding_size
wide and `embeddings_project` maps them to hidden_size (spec.embedding_dim). ELECTRA-base's
body is BERT's to the parameter, less the pooler."""

from __future__ import annotations

from tfcli.checkpoints.families.bert_like import (INDEX_BUFFERS, LAYERNORM_RENAMES, body_fields,
                                                  body_rules, require_absolute_positions)
from tfcli.checkpoints.families.common import require_false
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Table, linear, norm, rule
from tfcli.spec.model import Spec

# ElectraConfig() defaults, for the keys read
DEFAULTS: Config = {
    "vocab_size": 30522, "embedding_size": 128, "hidden_size": 256, "num_hidden_layers": 12,
    "num_attention_heads": 4, "intermediate_size": 1024, "hidden_act": "gelu",
    "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
    "is_decoder": False, "add_cross_attention": False, "tie_word_embeddings": True,
}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    require_false(c, "is_decoder", "add_cross_attention")
    require_absolute_positions(c)
    fields = body_fields(c, arch)
    d_model, width = fields["d_model"], c.integer("embedding_size")
    if arch.pooler:  # ElectraClassificationHead: dense, then (exact) GELU, on the first token
        fields["pooler_activation"] = "gelu"
    if arch.head == "masked_lm":  # ElectraGeneratorPredictions: gelu whatever hidden_act
        fields["head_activation"] = "gelu"
    if width != d_model:  # ElectraModel builds embeddings_project only then
        fields["embedding_dim"] = width
    return fields, []


def _discriminator(spec: Spec) -> bool:
    return spec.head != "masked_lm"


def _generator(spec: Spec) -> bool:
    return spec.head == "masked_lm"


TABLE = Table(
    bases=("electra.", ""), anchor="embeddings.word_embeddings.weight",
    rules=(*body_rules(), *linear("{base}embeddings_project", "embedding_project",
                                  "embedding_project_bias"),
           # head sequence_classification: classifier.dense is the pooler, out_proj the classifier
           *linear("classifier.dense", "pooler_w", "pooler_b"),
           # the discriminator (ElectraForPreTraining): its dense before the 1-logit classifier
           *linear("discriminator_predictions.dense", "head_dense", "head_dense_bias",
                   when=_discriminator),
           # the generator (ElectraForMaskedLM): dense to embedding_size, gelu, LayerNorm, then
           # the tied generator_lm_head and its bias
           *linear("generator_predictions.dense", "head_dense", "head_dense_bias",
                   when=_generator),
           *norm("generator_predictions.LayerNorm", "head_norm"),
           rule("generator_lm_head.weight", "lm_head", "linear"),
           rule("generator_lm_head.bias", "lm_head_bias")),
    # a task head's tensors are ignored by a spec without that head
    ignored=(INDEX_BUFFERS, r"^(discriminator_predictions|generator_predictions|"
             r"generator_lm_head|classifier|qa_outputs|sequence_summary)\."),
    tied_copies=("generator_lm_head.weight",),
    renames=(*LAYERNORM_RENAMES,
             *((f"classifier.out_proj.{w}", f"classifier.{w}") for w in ("weight", "bias")),
             *((f"discriminator_predictions.dense_prediction.{w}", f"classifier.{w}")
               for w in ("weight", "bias"))),
)
