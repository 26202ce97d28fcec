"""BERT (BertModel and its task heads): a post-LN encoder with an embedding LayerNorm and a
pooler. config.json reader and checkpoint names."""

from __future__ import annotations

from tfcli.checkpoints.families.common import activation, require_false, unsupported
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
    fields = {
        "family": "encoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("max_position_embeddings"), "d_model": c.integer("hidden_size"),
        "n_heads": c.integer("num_attention_heads"), "n_layers": c.integer("num_hidden_layers"),
        "d_ff": c.integer("intermediate_size"),
        "activation": activation(c, c.text("hidden_act"), "hidden_act"),
        "norm": "layernorm", "norm_placement": "post", "norm_eps": c.number("layer_norm_eps"),
        "positions": "learned", "bias": True, "embedding_norm": True,
        "type_vocab_size": c.integer("type_vocab_size", minimum=0), "lm_head": False,
        "pooler": arch.pooler, "tie_embeddings": c.flag("tie_word_embeddings"),
    }
    if arch.head == "masked_lm" and not fields["tie_embeddings"]:
        # transformers 5 then unties cls.predictions.decoder.bias from cls.predictions.bias:
        # two (vocab,) biases, one of them never used
        raise unsupported(c, "an untied masked-LM head (tie_word_embeddings false) is not "
                             "supported: transformers keeps an unused second decoder bias")
    return fields, []



def _bert_rules() -> list[Rule]:
    e, layer, b = "{base}embeddings", "{base}encoder.layer.{i}", "encoder.blocks.{i}"
    return [
        rule(f"{e}.word_embeddings.weight", "token_embedding"),
        rule(f"{e}.position_embeddings.weight", "position_embedding"),
        rule(f"{e}.token_type_embeddings.weight", "token_type_embedding"),
        *norm(f"{e}.LayerNorm", "embedding_norm"),
        *linear(f"{layer}.attention.self.query", f"{b}.attn.wq", f"{b}.attn.bq"),
        *linear(f"{layer}.attention.self.key", f"{b}.attn.wk", f"{b}.attn.bk"),
        *linear(f"{layer}.attention.self.value", f"{b}.attn.wv", f"{b}.attn.bv"),
        *linear(f"{layer}.attention.output.dense", f"{b}.attn.wo", f"{b}.attn.bo"),
        *norm(f"{layer}.attention.output.LayerNorm", f"{b}.attn_norm"),  # post-LN: after attn
        *linear(f"{layer}.intermediate.dense", f"{b}.ffn.w_up", f"{b}.ffn.b_up"),
        *linear(f"{layer}.output.dense", f"{b}.ffn.w_down", f"{b}.ffn.b_down"),
        *norm(f"{layer}.output.LayerNorm", f"{b}.ffn_norm"),
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

