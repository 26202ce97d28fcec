"""ELECTRA (ElectraModel, discriminators and generators): BERT's post-LN body without a pooler;
when embedding_size differs from hidden_size (ELECTRA-small) the embeddings are embedding_size
wide and `embeddings_project` maps them to hidden_size (spec.embedding_dim). ELECTRA-base's
body is BERT's to the parameter, less the pooler."""

from __future__ import annotations

from tfcli.checkpoints.families.bert_like import (INDEX_BUFFERS, LAYERNORM_RENAMES, body_rules,
                                                  require_absolute_positions)
from tfcli.checkpoints.families.common import activation, require_false
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Table, linear

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
    d_model, width = c.integer("hidden_size"), c.integer("embedding_size")
    fields = {
        "family": "encoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("max_position_embeddings"), "d_model": d_model,
        "n_heads": c.integer("num_attention_heads"), "n_layers": c.integer("num_hidden_layers"),
        "d_ff": c.integer("intermediate_size"),
        "activation": activation(c, c.text("hidden_act"), "hidden_act"),
        "norm": "layernorm", "norm_placement": "post", "norm_eps": c.number("layer_norm_eps"),
        "positions": "learned", "bias": True, "embedding_norm": True,
        "type_vocab_size": c.integer("type_vocab_size", minimum=0), "lm_head": False,
        "pooler": arch.pooler, "tie_embeddings": c.flag("tie_word_embeddings"),
    }
    if arch.pooler:  # ElectraClassificationHead: dense, then (exact) GELU, on the first token
        fields["pooler_activation"] = "gelu"
    if width != d_model:  # ElectraModel builds embeddings_project only then
        fields["embedding_dim"] = width
    return fields, []


TABLE = Table(
    bases=("electra.", ""), anchor="embeddings.word_embeddings.weight",
    rules=(*body_rules(), *linear("{base}embeddings_project", "embedding_project",
                                  "embedding_project_bias"),
           # head sequence_classification: classifier.dense is the pooler, out_proj the classifier
           *linear("classifier.dense", "pooler_w", "pooler_b"),
           # the discriminator (ElectraForPreTraining): its dense before the 1-logit classifier
           *linear("discriminator_predictions.dense", "head_dense", "head_dense_bias")),
    # a task head's tensors are ignored by a spec without that head
    ignored=(INDEX_BUFFERS, r"^(discriminator_predictions|generator_predictions|"
             r"generator_lm_head|classifier|qa_outputs|sequence_summary)\."),
    tied_copies=("generator_lm_head.weight",),
    renames=(*LAYERNORM_RENAMES,
             *((f"classifier.out_proj.{w}", f"classifier.{w}") for w in ("weight", "bias")),
             *((f"discriminator_predictions.dense_prediction.{w}", f"classifier.{w}")
               for w in ("weight", "bias"))),
)
