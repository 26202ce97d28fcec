"""DeBERTa-v2 / v3 (model_type deberta-v2: DebertaV2Model and its heads): BERT's post-LN body
with disentangled attention (spec.disentangled_attention, tfcli/spec/disentangled.py) over one
table of relative-position embeddings per encoder (encoder.rel_embeddings, normed by
encoder.LayerNorm under norm_rel_ebd layer_norm), log-bucketed offsets (position_buckets),
absolute positions only with position_biased_input (v3: none), and factorised embeddings
projected (embed_proj, no bias) before the embedding LayerNorm. Read as modeling_deberta_v2.py
reads its config (several keys through getattr with defaults: those defaults are DEFAULTS here).

Not modelled, refused by name: the convolution after the first layer (conv_kernel_size > 0,
DeBERTa-v2-xlarge / xxlarge), relative_attention without a c2p / p2c term, position terms other
than c2p / p2c, a pooler or head width apart from hidden_size. DeBERTa v1 (model_type deberta,
its fused in_proj and talking heads) is another family, not read.
"""

from __future__ import annotations

from tfcli.checkpoints.families.bert_like import INDEX_BUFFERS, LAYERNORM_RENAMES, body_fields
from tfcli.checkpoints.families.common import activation, unsupported
from tfcli.checkpoints.fields import MAX_SIZE, Config, ConfigFields, shown
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, norm, rule

# DebertaV2Config() defaults for the keys read, and the getattr defaults of the modeling code
# for the keys the config class does not declare (position_buckets ... conv_kernel_size)
DEFAULTS: Config = {
    "vocab_size": 128100, "hidden_size": 1536, "num_hidden_layers": 24,
    "num_attention_heads": 24, "intermediate_size": 6144, "hidden_act": "gelu",
    "max_position_embeddings": 512, "type_vocab_size": 0, "layer_norm_eps": 1e-7,
    "relative_attention": False, "max_relative_positions": -1, "position_biased_input": True,
    "pos_att_type": None, "pooler_hidden_act": "gelu", "legacy": True,
    "tie_word_embeddings": True, "position_buckets": -1, "share_att_key": False,
    "norm_rel_ebd": "none", "conv_kernel_size": 0,
}
TERMS = ("c2p", "p2c")


def _terms(c: ConfigFields) -> list[str]:
    """pos_att_type: "p2c|c2p" (lower-cased and split, as DebertaV2Config does) or a list."""
    value = c.values.get("pos_att_type")
    terms = [t.strip() for t in value.lower().split("|")] if isinstance(value, str) \
        else c.names("pos_att_type")
    for term in terms:
        if term not in TERMS:
            raise unsupported(c, f"pos_att_type term {shown(term)} is not supported "
                                 f"(supported: {', '.join(TERMS)})")
    if len(set(terms)) != len(terms):
        raise unsupported(c, f"pos_att_type {shown(value)} names a term twice")
    return [t for t in TERMS if t in terms]


def _signed(c: ConfigFields, key: str) -> int | None:
    """An integer key whose values below 1 mean 'derive it' (max_relative_positions -1)."""
    value = c.integer(key, minimum=-MAX_SIZE)
    return value if value > 0 else None


def _refuse_unmodelled(c: ConfigFields) -> None:
    if c.integer("conv_kernel_size", minimum=0):
        raise unsupported(c, f"conv_kernel_size {c.integer('conv_kernel_size', minimum=0):,} is "
                             "not supported: the convolution after the first layer "
                             "(DeBERTa-v2-xlarge) is not modelled")
    d, heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    for key in ("pooler_hidden_size", "attention_head_size"):
        width = c.optional_integer(key)
        expected = d if key == "pooler_hidden_size" else d // heads
        if width is not None and width != expected:
            raise unsupported(c, f"{key} {width:,} is not supported (only {expected:,}: "
                                 "transformers' output layers are hidden_size wide)")
    norms = [x.strip() for x in c.text("norm_rel_ebd").lower().split("|")]
    if any(x not in ("none", "layer_norm") for x in norms):
        raise unsupported(c, f"norm_rel_ebd {shown(c.text('norm_rel_ebd'))} is not supported "
                             "(supported: none, layer_norm)")


def _relative_fields(c: ConfigFields) -> Config:
    """Disentangled attention's spec fields; without relative_attention, the plain attention
    that transformers still scales by the pos_att_type count."""
    terms, d_head = _terms(c), c.integer("hidden_size") // c.integer("num_attention_heads")
    if not c.flag("relative_attention"):
        if "layer_norm" in c.text("norm_rel_ebd").lower():
            raise unsupported(c, "norm_rel_ebd layer_norm without relative_attention is not "
                                 "supported: transformers builds an encoder.LayerNorm it never "
                                 "uses")
        return {"attention_scale": (d_head * (1 + len(terms))) ** -0.5} if terms else {}
    if not terms:
        raise unsupported(c, "relative_attention without a pos_att_type term (c2p, p2c) is not "
                             "supported: its rel_embeddings would be built and never used")
    fields: Config = {"disentangled_attention": terms, "share_att_key": c.flag("share_att_key"),
                      "relative_embedding_norm": "layer_norm" in c.text("norm_rel_ebd").lower()}
    buckets, longest = _signed(c, "position_buckets"), _signed(c, "max_relative_positions")
    if buckets is not None:
        fields["position_buckets"] = buckets
    if longest is not None:
        fields["max_relative_positions"] = longest
    return fields


def _embedding_fields(c: ConfigFields, d_model: int) -> Config:
    fields: Config = {"positions": "learned" if c.flag("position_biased_input") else "none"}
    width = c.optional_integer("embedding_size")
    if width is not None and width != d_model:  # embed_proj, no bias, before the LayerNorm
        fields |= {"embedding_dim": width, "embedding_project_first": True,
                   "embedding_project_bias": False}
    return fields


def _head_fields(c: ConfigFields, arch: Architecture, fields: Config) -> Config:
    """The pooler's activation (ContextPooler: dense, pooler_hidden_act); the MLM head's."""
    out: Config = {}
    if arch.pooler:
        act = c.text("pooler_hidden_act")
        out["pooler_activation"] = "tanh" if act == "tanh" else activation(c, act,
                                                                           "pooler_hidden_act")
    if arch.head != "masked_lm":
        return out
    if not c.flag("legacy"):  # DebertaV2LMPredictionHead: the word embeddings, whatever tied
        if "embedding_dim" in fields:
            raise unsupported(c, "legacy false with embedding_size other than hidden_size is "
                                 "not supported: its head multiplies by the embedding table")
        return out | {"tie_embeddings": True}
    if not fields["tie_embeddings"]:  # two decoder biases in transformers 5, as BERT's
        raise unsupported(c, "an untied masked-LM head (tie_word_embeddings false) is not "
                             "supported: transformers keeps an unused second decoder bias")
    return out


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    _refuse_unmodelled(c)
    fields = body_fields(c, arch)
    fields |= _embedding_fields(c, fields["d_model"]) | _relative_fields(c)
    fields |= _head_fields(c, arch, fields)
    return fields, []


def _rules() -> list[Rule]:
    e, layer, b = "{base}embeddings", "{base}encoder.layer.{i}", "encoder.blocks.{i}"
    attn = f"{layer}.attention.self"
    return [
        rule(f"{e}.word_embeddings.weight", "token_embedding"),
        rule(f"{e}.position_embeddings.weight", "position_embedding"),
        rule(f"{e}.token_type_embeddings.weight", "token_type_embedding"),
        rule(f"{e}.embed_proj.weight", "embedding_project", "linear"),
        *norm(f"{e}.LayerNorm", "embedding_norm"),
        rule("{base}encoder.rel_embeddings.weight", "encoder.relative_embedding"),
        *norm("{base}encoder.LayerNorm", "encoder.relative_embedding_norm"),
        *linear(f"{attn}.query_proj", f"{b}.attn.wq", f"{b}.attn.bq"),
        *linear(f"{attn}.key_proj", f"{b}.attn.wk", f"{b}.attn.bk"),
        *linear(f"{attn}.value_proj", f"{b}.attn.wv", f"{b}.attn.bv"),
        *linear(f"{attn}.pos_key_proj", f"{b}.attn.wpos_k", f"{b}.attn.bpos_k"),
        *linear(f"{attn}.pos_query_proj", f"{b}.attn.wpos_q", f"{b}.attn.bpos_q"),
        *linear(f"{layer}.attention.output.dense", f"{b}.attn.wo", f"{b}.attn.bo"),
        *norm(f"{layer}.attention.output.LayerNorm", f"{b}.attn_norm"),  # post-LN
        *linear(f"{layer}.intermediate.dense", f"{b}.ffn.w_up", f"{b}.ffn.b_up"),
        *linear(f"{layer}.output.dense", f"{b}.ffn.w_down", f"{b}.ffn.b_down"),
        *norm(f"{layer}.output.LayerNorm", f"{b}.ffn_norm"),
        # head sequence_classification / multiple choice: ContextPooler's dense is the pooler
        *linear("pooler.dense", "pooler_w", "pooler_b"),
        # head masked_lm (LegacyDebertaV2OnlyMLMHead): transform, the tied decoder, its bias;
        # DebertaV2OnlyMLMHead's (legacy false) names are renamed to these (_MLM_RENAMES)
        *linear("cls.predictions.transform.dense", "head_dense", "head_dense_bias"),
        *norm("cls.predictions.transform.LayerNorm", "head_norm"),
        rule("cls.predictions.decoder.weight", "lm_head", "linear"),
        rule("cls.predictions.bias", "lm_head_bias"),
    ]


# legacy false: the same transform and bias under lm_predictions.lm_head (no decoder tensor:
# it multiplies by the word embeddings)
_MLM_RENAMES = tuple(
    (f"lm_predictions.lm_head.{old}", f"cls.predictions.{new}")
    for old, new in (("dense.weight", "transform.dense.weight"),
                     ("dense.bias", "transform.dense.bias"),
                     ("LayerNorm.weight", "transform.LayerNorm.weight"),
                     ("LayerNorm.bias", "transform.LayerNorm.bias"), ("bias", "bias")))


TABLE = Table(
    bases=("deberta.", ""), anchor="embeddings.word_embeddings.weight", rules=tuple(_rules()),
    # position_embeddings without position_biased_input: transformers ignores them on load; a
    # task head's tensors are ignored by a spec without that head (cls.predictions.decoder.bias
    # is cls.predictions.bias)
    ignored=(INDEX_BUFFERS, r"embeddings\.position_embeddings\.weight$",
             r"^(cls|lm_predictions|mask_predictions|pooler|classifier|qa_outputs)\.",
             r"^cls\.predictions\.decoder\.bias$"),
    tied_copies=("cls.predictions.decoder.weight",),
    renames=(*LAYERNORM_RENAMES, *_MLM_RENAMES),
)
