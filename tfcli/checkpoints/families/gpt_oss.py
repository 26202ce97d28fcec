"""gpt-oss (openai/gpt-oss-20b, -120b; `gpt_oss`, GptOssForCausalLM): LLaMA-like pre-norm blocks
with q/k/v/o biases, a learned attention sink per head (one more logit in each softmax,
`self_attn.sinks`), alternating sliding (128) / full layers (`layer_types`), YaRN, and every FFN
a top-k of `num_local_experts` experts: a router with a bias on its logits (softmax over the k
chosen), experts with biases and the clamped SwiGLU, (clip(up, -l, l) + 1) * g * sigmoid(1.702 g),
g = min(gate, l), l = `swiglu_limit`.

Its checkpoints stack each block's experts: `experts.gate_up_proj` (E, d, 2 d_ff), already
(in, out), its columns gate and up interleaved (gate 0::2, up 1::2), with `gate_up_proj_bias`
(E, 2 d_ff) likewise; `experts.down_proj` (E, d_ff, d) and `down_proj_bias` (E, d)."""

from __future__ import annotations

from tfcli.checkpoints.families import llama
from tfcli.checkpoints.families.gemma import attention_pattern
from tfcli.checkpoints.families.rope import rope_theta, with_rope_scaling
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import BARE, LM, Architecture
from tfcli.checkpoints.names import Table, rule, stacked

# GptOssConfig() defaults, for the keys read
DEFAULTS: Config = {
    "num_hidden_layers": 36, "num_local_experts": 128, "vocab_size": 201088,
    "hidden_size": 2880, "intermediate_size": 2880, "head_dim": 64, "num_attention_heads": 64,
    "num_key_value_heads": 8, "sliding_window": 128, "tie_word_embeddings": False,
    "hidden_act": "silu", "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
    "rope_theta": 150000.0, "rope_scaling": {
        "rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
        "truncate": False, "original_max_position_embeddings": 4096},
    "num_experts_per_tok": 4, "swiglu_alpha": 1.702, "swiglu_limit": 7.0,
    "attention_bias": True, "layer_types": None,
}
CLASSES: dict[str, Architecture] = {"GptOssForCausalLM": LM, "GptOssModel": BARE}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    # the experts' gate is their own clamped SwiGLU; hidden_act is read by nothing else, but a
    # config naming another activation is not gpt-oss
    llama.require_silu(c)
    fields: Config = llama.decoder_sizes(c) | {
        "activation": "swiglu_clamped", "swiglu_limit": c.number("swiglu_limit"),
        "swiglu_alpha": c.number("swiglu_alpha"),
        "norm": "rmsnorm", "norm_placement": "pre", "norm_eps": c.number("rms_norm_eps"),
        "positions": "rope", "rope_theta": rope_theta(c),
        "bias": False, "attention_bias": c.flag("attention_bias"), "ffn_bias": True,
        "attention_sinks": True,
        "n_experts": c.integer("num_local_experts"),
        "experts_per_token": c.integer("num_experts_per_tok"),
        "norm_topk_prob": True, "router_logits_bias": True,  # softmax over the k chosen logits
        "tie_embeddings": c.flag("tie_word_embeddings"), "lm_head": arch.lm_head,
    }
    with_rope_scaling(c, fields)
    fields |= attention_pattern(c, ["local", "global"])  # GptOssConfig's default layer_types
    return fields, []


def _table() -> Table:
    layer, b = "{base}layers.{i}", "decoder.blocks.{i}"
    mlp, experts = f"{layer}.mlp", f"{b}.ffn.experts.{{e}}"
    return llama.stacked_expert_table(
        [rule(f"{layer}.self_attn.sinks", f"{b}.attn.sinks")],
        [rule(f"{mlp}.router.weight", f"{b}.ffn.router", "linear"),
         rule(f"{mlp}.router.bias", f"{b}.ffn.router_b"),
         stacked(f"{mlp}.experts.gate_up_proj", (f"{experts}.w_gate", f"{experts}.w_up"),
                 "deinterleave"),
         stacked(f"{mlp}.experts.gate_up_proj_bias", (f"{experts}.b_gate", f"{experts}.b_up"),
                 "deinterleave"),
         stacked(f"{mlp}.experts.down_proj", f"{experts}.w_down"),
         stacked(f"{mlp}.experts.down_proj_bias", f"{experts}.b_down")])


TABLE = _table()
