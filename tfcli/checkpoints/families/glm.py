"""GLM-4 (THUDM/glm-4-9b-chat-hf; `glm`) and GLM-4-0414 (`glm4`): a LLaMA-like pre-norm body
with biases on q, k and v (none on o), RoPE on the first `partial_rotary_factor` (0.5) of each
head in interleaved pairs (2i, 2i + 1), and a fused `gate_up_proj` (gate | up). GLM-4-0414
adds RMSNorms on each sublayer's output inside the residual (post_self_attn_layernorm,
post_mlp_layernorm): norm_placement sandwich."""

from __future__ import annotations

from tfcli.checkpoints.families import llama
from tfcli.checkpoints.families.partial_rope import partial_rope
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import BARE, LM, Architecture
from tfcli.checkpoints.names import Rule, Table, rule

# GlmConfig() / Glm4Config() defaults, for the keys read
DEFAULTS: Config = {
    "vocab_size": 151552, "hidden_size": 4096, "intermediate_size": 13696,
    "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 2,
    "head_dim": 128, "hidden_act": "silu", "max_position_embeddings": 131072,
    "rms_norm_eps": 1.5625e-07, "tie_word_embeddings": False, "rope_theta": 10000.0,
    "partial_rotary_factor": 0.5, "attention_bias": True,
}
CLASSES: dict[str, Architecture] = {"GlmForCausalLM": LM, "GlmModel": BARE}
GLM4_CLASSES: dict[str, Architecture] = {"Glm4ForCausalLM": LM, "Glm4Model": BARE}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    llama.require_silu(c)
    fields: Config = llama.decoder_sizes(c) | {
        "activation": "swiglu", "norm": "rmsnorm",
        "norm_placement": "sandwich" if c.values["model_type"] == "glm4" else "pre",
        "norm_eps": c.number("rms_norm_eps"), "rope_pairing": "interleaved",
        "bias": False, "attention_bias": c.flag("attention_bias"), "attention_out_bias": False,
        "tie_embeddings": c.flag("tie_word_embeddings"), "lm_head": arch.lm_head,
    }
    return fields | partial_rope(c, fields["d_head"], "partial_rotary_factor", "rope_theta"), []


def _rules() -> list[Rule]:
    layer, b = "{base}layers.{i}", "decoder.blocks.{i}"
    attention = [r for r in llama.TABLE.rules if ".self_attn." in r.hf and "_norm." not in r.hf]
    return [
        rule("{base}embed_tokens.weight", "token_embedding"),
        rule(f"{layer}.input_layernorm.weight", f"{b}.attn_norm.scale"),
        *attention,
        rule(f"{layer}.post_self_attn_layernorm.weight", f"{b}.attn_post_norm.scale"),  # glm4
        rule(f"{layer}.post_attention_layernorm.weight", f"{b}.ffn_norm.scale"),
        Rule(f"{layer}.mlp.gate_up_proj.weight", (f"{b}.ffn.w_gate", f"{b}.ffn.w_up"),
             "split_linear"),
        rule(f"{layer}.mlp.down_proj.weight", f"{b}.ffn.w_down", "linear"),
        rule(f"{layer}.post_mlp_layernorm.weight", f"{b}.ffn_post_norm.scale"),  # glm4
        rule("{base}norm.weight", "decoder.final_norm.scale"),
        rule("lm_head.weight", "lm_head", "linear"),
    ]


TABLE = Table(bases=llama.TABLE.bases, anchor=llama.TABLE.anchor, rules=tuple(_rules()),
              ignored=llama.TABLE.ignored, tied_copies=llama.TABLE.tied_copies)
