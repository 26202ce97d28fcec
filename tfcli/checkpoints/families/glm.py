"""GLM-4 (THUDM/glm-4-9b-chat-hf; `glm`) and GLM-4-0414 (`glm4`): a LLaMA-like pre-norm body
with biases on q, k and v (none on o), RoPE on the first `partial_rotary_factor` (0.5) of each
head in interleaved pairs (2i, 2i + 1), and a fused `gate_up_proj` (gate | up). GLM-4-0414
adds RMSNorms on each sublayer's output inside the residual (post_self_attn_layernorm,
post_mlp_layernorm): norm_placement sandwich.

GLM-4.5 / 4.5-Air (`glm4_moe`) keep GQA with q/k/v biases and partial RoPE - rotate_half's
pairs here, not interleaved - with optional per-head q/k RMSNorms (`use_qk_norm`), and route
each token DeepSeek-V3's way: sigmoid scores plus the e_score_correction_bias buffer choose k
experts within the topk_group best groups, renormalised with norm_topk_prob, times
routed_scaling_factor, beside n_shared_experts; the first_k_dense_replace blocks are dense. Its
multi-token-prediction layer (num_nextn_predict_layers, stored after the last layer) is not
built by transformers, nor counted here."""

from __future__ import annotations

from tfcli.checkpoints.families import deepseek, llama
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
GLM4_MOE_DEFAULTS: Config = DEFAULTS | {  # Glm4MoeConfig()
    "intermediate_size": 10944, "num_hidden_layers": 46, "num_attention_heads": 96,
    "num_key_value_heads": 8, "head_dim": None, "rms_norm_eps": 1e-5, "attention_bias": False,
    "moe_intermediate_size": 1408, "num_experts_per_tok": 8, "n_shared_experts": 1,
    "n_routed_experts": 128, "routed_scaling_factor": 1.0, "n_group": 1, "topk_group": 1,
    "first_k_dense_replace": 1, "norm_topk_prob": True, "use_qk_norm": False,
    "num_nextn_predict_layers": 1,
}
CLASSES: dict[str, Architecture] = {"GlmForCausalLM": LM, "GlmModel": BARE}
GLM4_CLASSES: dict[str, Architecture] = {"Glm4ForCausalLM": LM, "Glm4Model": BARE}
GLM4_MOE_CLASSES: dict[str, Architecture] = {"Glm4MoeForCausalLM": LM, "Glm4MoeModel": BARE}


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


def read_moe(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    fields, notes = read(c, arch)
    fields |= {"rope_pairing": "half", "norm_placement": "pre", "ffn_bias": False}
    if c.flag("use_qk_norm"):
        fields["qk_norm"] = "per_head"
    moe, mtp_notes = deepseek.v3_experts(c, fields["n_layers"])
    return fields | moe, notes + mtp_notes


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

# GLM-4.5's tensor names: LLaMA's attention (Qwen3's q/k norm names), norms and dense MLP, and
# DeepSeek's MoE block (router, correction bias, experts one by one, shared experts). The
# released checkpoints store the multi-token-prediction layer as the layer after the last:
# model.layers.46 (GLM-4.5-Air) or 92 (GLM-4.5), ignored as transformers ignores it.
MOE_TABLE = Table(
    bases=llama.TABLE.bases, anchor=llama.TABLE.anchor,
    rules=tuple(r for r in deepseek.TABLE.rules if ".self_attn." not in r.hf)
    + tuple(r for r in llama.TABLE.rules if ".self_attn." in r.hf),
    ignored=llama.TABLE.ignored + (r"^model\.layers\.(46|92)\.",),
    tied_copies=llama.TABLE.tied_copies,
)
