"""BART (BartForConditionalGeneration, BartModel): an encoder-decoder of post-LN blocks with
biases everywhere. Each stack has its own learned position table (BartLearnedPositionalEmbedding:
max_position_embeddings + 2 rows, read at position + 2) and its own layernorm_embedding; the
token table `shared` is one, optionally scaled by sqrt(d_model) (scale_embedding); the LM head
is tied to it, plus the final_logits_bias buffer. config.json reader and checkpoint names."""

from __future__ import annotations

from tfcli.checkpoints.families.common import activation, unsupported
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, norm, rule

# BartConfig() defaults, for the keys read
DEFAULTS: Config = {
    "vocab_size": 50265, "max_position_embeddings": 1024, "d_model": 1024,
    "encoder_layers": 12, "decoder_layers": 12, "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096,
    "encoder_attention_heads": 16, "decoder_attention_heads": 16,
    "activation_function": "gelu", "scale_embedding": False, "tie_word_embeddings": True,
    "decoder_start_token_id": 2,
}
POSITION_OFFSET = 2  # BartLearnedPositionalEmbedding.offset, fixed in transformers
LAYER_NORM_EPS = 1e-5  # nn.LayerNorm's default: BART's norms take no eps from the config


def _same(c: ConfigFields, encoder_key: str, decoder_key: str) -> int:
    """One width for both stacks: tfcli's spec has one d_ff and one head count."""
    encoder, decoder = c.integer(encoder_key), c.integer(decoder_key)
    if encoder != decoder:
        raise unsupported(c, f"{encoder_key} {encoder:,} and {decoder_key} {decoder:,} differ "
                             "(tfcli's stacks share one width)")
    return encoder


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    tied = c.flag("tie_word_embeddings")
    if arch.lm_head and not tied:
        raise unsupported(c, "an untied BART head is not supported (transformers ties it)")
    fields: Config = {
        "family": "encoder-decoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("max_position_embeddings"), "d_model": c.integer("d_model"),
        "n_heads": _same(c, "encoder_attention_heads", "decoder_attention_heads"),
        "n_layers": c.integer("encoder_layers"), "n_decoder_layers": c.integer("decoder_layers"),
        "d_ff": _same(c, "encoder_ffn_dim", "decoder_ffn_dim"),
        "activation": activation(c, c.text("activation_function"), "activation_function"),
        "norm": "layernorm", "norm_placement": "post", "norm_eps": LAYER_NORM_EPS,
        "positions": "learned", "position_offset": POSITION_OFFSET,
        "per_stack_embeddings": True, "embedding_norm": True,
        "scale_embeddings": c.flag("scale_embedding"), "bias": True,
        "tie_embeddings": tied, "lm_head": arch.lm_head, "final_logits_bias": arch.lm_head,
        "decoder_start_token_id": c.integer("decoder_start_token_id", minimum=0),
    }
    return fields, []


def _attention(layer: str, module: str, ours: str, norm_name: str, norm_path: str) -> list[Rule]:
    rules = [r for x, w in (("q", "q"), ("k", "k"), ("v", "v"), ("out", "o"))
             for r in linear(f"{layer}.{module}.{x}_proj", f"{ours}.w{w}", f"{ours}.b{w}")]
    return rules + norm(f"{layer}.{norm_name}", norm_path)


def _stack(stack: str) -> list[Rule]:
    layer, b = f"{{base}}{stack}.layers.{{i}}", f"{stack}.blocks.{{i}}"
    rules = [rule(f"{{base}}{stack}.embed_positions.weight", f"{stack}.position_embedding"),
             *norm(f"{{base}}{stack}.layernorm_embedding", f"{stack}.embedding_norm"),
             *_attention(layer, "self_attn", f"{b}.attn", "self_attn_layer_norm",
                         f"{b}.attn_norm")]
    if stack == "decoder":
        rules += _attention(layer, "encoder_attn", f"{b}.cross_attn", "encoder_attn_layer_norm",
                            f"{b}.cross_norm")
    return [*rules, *linear(f"{layer}.fc1", f"{b}.ffn.w_up", f"{b}.ffn.b_up"),
            *linear(f"{layer}.fc2", f"{b}.ffn.w_down", f"{b}.ffn.b_down"),
            *norm(f"{layer}.final_layer_norm", f"{b}.ffn_norm")]


TABLE = Table(
    bases=("model.", ""), anchor="shared.weight",
    rules=(rule("{base}shared.weight", "token_embedding"), *_stack("encoder"), *_stack("decoder"),
           rule("final_logits_bias", "final_logits_bias")),
    # each stack's embed_tokens is `shared`; the head is tied to it
    ignored=(r"^(model\.)?(encoder|decoder)\.embed_tokens\.weight$",),
    tied_copies=("lm_head.weight",),
)
