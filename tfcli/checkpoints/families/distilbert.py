"""DistilBERT (DistilBertModel and its heads): BERT's post-LN encoder without token types or
a pooler, under names of its own (q_lin ... out_lin, sa_layer_norm, ffn.lin1/lin2,
output_layer_norm); every LayerNorm's eps is fixed at 1e-12 in transformers."""

from __future__ import annotations

from tfcli.checkpoints.families.common import activation
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, norm, rule

# DistilBertConfig() defaults, for the keys read
DEFAULTS: Config = {
    "vocab_size": 30522, "max_position_embeddings": 512, "sinusoidal_pos_embds": False,
    "n_layers": 6, "n_heads": 12, "dim": 768, "hidden_dim": 4 * 768, "activation": "gelu",
    "tie_word_embeddings": True,
}
LAYER_NORM_EPS = 1e-12  # nn.LayerNorm(..., eps=1e-12) in Embeddings, TransformerBlock and the MLM head


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    fields = {
        "family": "encoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("max_position_embeddings"), "d_model": c.integer("dim"),
        "n_heads": c.integer("n_heads"), "n_layers": c.integer("n_layers"),
        "d_ff": c.integer("hidden_dim"),
        "activation": activation(c, c.text("activation"), "activation"),
        "norm": "layernorm", "norm_placement": "post", "norm_eps": LAYER_NORM_EPS,
        "positions": "learned", "bias": True, "embedding_norm": True, "type_vocab_size": 0,
        "lm_head": False, "pooler": arch.pooler, "tie_embeddings": c.flag("tie_word_embeddings"),
    }
    if arch.pooler:  # the classification heads' pre_classifier, then ReLU
        fields["pooler_activation"] = "relu"
    # the sinusoids only initialise an nn.Embedding that is a parameter (saved, counted, read
    # by index): a learned table to tfcli, whose random weights are then not sinusoids
    notes = (["sinusoidal_pos_embds: the position table is stored and read as a learned one"]
             if c.flag("sinusoidal_pos_embds") else [])
    return fields, notes


def _rules() -> list[Rule]:
    e, layer, b = "{base}embeddings", "{base}transformer.layer.{i}", "encoder.blocks.{i}"
    return [
        rule(f"{e}.word_embeddings.weight", "token_embedding"),
        rule(f"{e}.position_embeddings.weight", "position_embedding"),
        *norm(f"{e}.LayerNorm", "embedding_norm"),
        *linear(f"{layer}.attention.q_lin", f"{b}.attn.wq", f"{b}.attn.bq"),
        *linear(f"{layer}.attention.k_lin", f"{b}.attn.wk", f"{b}.attn.bk"),
        *linear(f"{layer}.attention.v_lin", f"{b}.attn.wv", f"{b}.attn.bv"),
        *linear(f"{layer}.attention.out_lin", f"{b}.attn.wo", f"{b}.attn.bo"),
        *norm(f"{layer}.sa_layer_norm", f"{b}.attn_norm"),  # post-LN: after attention
        *linear(f"{layer}.ffn.lin1", f"{b}.ffn.w_up", f"{b}.ffn.b_up"),
        *linear(f"{layer}.ffn.lin2", f"{b}.ffn.w_down", f"{b}.ffn.b_down"),
        *norm(f"{layer}.output_layer_norm", f"{b}.ffn_norm"),
        # head masked_lm: vocab_transform, activation, vocab_layer_norm, the tied projector + bias
        *linear("vocab_transform", "head_dense", "head_dense_bias"),
        *norm("vocab_layer_norm", "head_norm"),
        rule("vocab_projector.weight", "lm_head", "linear"),
        rule("vocab_projector.bias", "lm_head_bias"),
        # head sequence_classification / multiple choice: pre_classifier is the pooler
        *linear("pre_classifier", "pooler_w", "pooler_b"),
    ]


TABLE = Table(
    bases=("distilbert.", ""), anchor="embeddings.word_embeddings.weight", rules=tuple(_rules()),
    # position_ids is an index buffer; a task head's tensors are ignored by a spec without it
    ignored=(r"embeddings\.position_ids$",
             r"^(vocab_transform|vocab_layer_norm|vocab_projector|pre_classifier|classifier|"
             r"qa_outputs)\."),
    tied_copies=("vocab_projector.weight",),
)
