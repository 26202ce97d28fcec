"""OLMoE (allenai/OLMoE-1B-7B; `olmoe`, OlmoeForCausalLM): a LLaMA pre-norm body with OLMo 2's
RMSNorm over the whole q and k projections before RoPE (qk_norm full), and every FFN a top-k of
`num_experts` SwiGLU experts of `intermediate_size`, the softmax over all experts renormalised
over the k chosen only with `norm_topk_prob` (false in OLMoE-1B-7B). `clip_qkv` (a clamp of
q, k and v) is refused by name when set. Experts are stored one by one, as Qwen-MoE's."""

from __future__ import annotations

from tfcli.checkpoints.families import llama, qwen_moe
from tfcli.checkpoints.families.common import unsupported
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import BARE, LM, Architecture
from tfcli.checkpoints.names import Table

# OlmoeConfig() defaults, for the keys read (read_llama reads mlp_bias and sliding_window)
DEFAULTS: Config = {
    "vocab_size": 50304, "hidden_size": 2048, "intermediate_size": 2048,
    "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": None,
    "head_dim": None, "hidden_act": "silu", "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "rope_theta": 10000.0,
    "attention_bias": False, "mlp_bias": False, "sliding_window": None, "clip_qkv": None,
    "num_experts_per_tok": 8, "num_experts": 64, "norm_topk_prob": False,
}
CLASSES: dict[str, Architecture] = {"OlmoeForCausalLM": LM, "OlmoeModel": BARE}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    clip = c.values.get("clip_qkv")
    if clip is not None:
        raise unsupported(c, f"clip_qkv {shown(clip)} is not supported (only null: q, k and v "
                             "unclamped)")
    fields, notes = llama.read_llama(c, arch)
    fields.pop("sliding_window", None)  # OLMoE has none: a stray key means nothing to it
    fields |= {"qk_norm": "full", "ffn_bias": False,
               "n_experts": c.integer("num_experts"),
               "experts_per_token": c.integer("num_experts_per_tok"),
               "norm_topk_prob": c.flag("norm_topk_prob")}
    return fields, notes


# Qwen-MoE's table (LLaMA's attention and norms, Qwen3's q/k norm names, the experts one by one)
# without its shared expert
TABLE = Table(
    bases=qwen_moe.TABLE.bases, anchor=qwen_moe.TABLE.anchor, ignored=qwen_moe.TABLE.ignored,
    tied_copies=qwen_moe.TABLE.tied_copies,
    rules=tuple(r for r in qwen_moe.TABLE.rules if "shared_expert" not in r.hf),
)
