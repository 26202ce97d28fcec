"""OLMo 2: a LLaMA body (SwiGLU, RMSNorm, RoPE) with the norms moved onto the sublayers'
outputs, inside the residual (x + N(F(x)): norm_placement sublayer_post), and RMSNorm over the
whole q and k projections before RoPE (qk_norm full). `attention_bias` is on all four
projections; the MLP never has biases."""

from __future__ import annotations

from tfcli.checkpoints.families.llama import read_llama
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, linear, rule

# Olmo2Config() defaults, for the keys read (read_llama reads them)
DEFAULTS: Config = {
    "vocab_size": 50304, "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
    "head_dim": None, "hidden_act": "silu", "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "rope_theta": 10000.0,
    "attention_bias": False, "mlp_bias": False, "sliding_window": None,
}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    fields, notes = read_llama(c, arch)
    fields.pop("sliding_window", None)  # Olmo2 has none: a stray key means nothing to it
    fields |= {"norm_placement": "sublayer_post", "qk_norm": "full", "ffn_bias": False}
    return fields, notes


def _rules() -> list[Rule]:
    layer, b = "{base}layers.{i}", "decoder.blocks.{i}"
    attn = [r for x in "qkvo" for r in linear(f"{layer}.self_attn.{x}_proj", f"{b}.attn.w{x}",
                                                 f"{b}.attn.b{x}")]
    mlp = [rule(f"{layer}.mlp.{p}_proj.weight", f"{b}.ffn.w_{p}", "linear")
           for p in ("gate", "up", "down")]
    return [
        rule("{base}embed_tokens.weight", "token_embedding"),
        *attn,
        rule(f"{layer}.self_attn.q_norm.weight", f"{b}.attn.q_norm.scale"),
        rule(f"{layer}.self_attn.k_norm.weight", f"{b}.attn.k_norm.scale"),
        rule(f"{layer}.post_attention_layernorm.weight", f"{b}.attn_post_norm.scale"),
        *mlp,
        rule(f"{layer}.post_feedforward_layernorm.weight", f"{b}.ffn_post_norm.scale"),
        rule("{base}norm.weight", "decoder.final_norm.scale"),
        rule("lm_head.weight", "lm_head", "linear"),
    ]


TABLE = Table(
    bases=("model.", ""), anchor="embed_tokens.weight", rules=tuple(_rules()),
    # RoPE frequencies are recomputed from rope_theta; score: the classifier of a body-only spec
    ignored=(r"rotary_emb\.inv_freq$", r"^score\."),
    tied_copies=("lm_head.weight",),
)
