"""What BERT's descendants (RoBERTa, XLM-R, ELECTRA) share with BERT: the embedding names and
the `encoder.layer.{i}` block names; each family adds its own prefix, extras and heads."""

from __future__ import annotations

from tfcli.checkpoints.families.common import activation, unsupported
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, linear, norm, rule

INDEX_BUFFERS = r"embeddings\.(position_ids|token_type_ids)$"  # buffers, not weights
LAYERNORM_RENAMES = ((".gamma", ".weight"), (".beta", ".bias"))  # TF-era LayerNorm names


def require_absolute_positions(c: ConfigFields) -> None:
    """position_embedding_type (absent: absolute, as transformers 5 builds every such model):
    relative_key / relative_key_query added distance tables that tfcli does not model."""
    positions = c.optional_text("position_embedding_type")
    if positions not in (None, "absolute"):
        raise unsupported(c, f"position_embedding_type {shown(positions)} is not supported "
                             "(only 'absolute')")


def body_fields(c: ConfigFields, arch: Architecture) -> Config:
    """The spec fields of BERT's post-LN encoder body, read from BERT's key names (BERT,
    RoBERTa, XLM-R, ELECTRA, ALBERT); each family then adds or replaces its own."""
    return {
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


def body_rules() -> list[Rule]:
    """Embeddings (word, position, token type, LayerNorm) and BERT's post-LN blocks."""
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
    ]
