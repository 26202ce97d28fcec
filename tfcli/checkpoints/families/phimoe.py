"""Phi-3.5-MoE (microsoft/Phi-3.5-MoE-instruct; `phimoe`, PhimoeForCausalLM): Mixtral's body
and tensor names (block_sparse_moe, experts w1 / w3 / w2) with LayerNorms (scale and bias,
eps `rms_norm_eps`), `attention_bias`, an `lm_head_bias`, and sparsemixer routing: two experts,
each weighted by its softmax among the logits within 2 x `router_jitter_noise` of it. Its
LongRoPE multiplies cos and sin by `short_mscale` / `long_mscale`: read as the attention
factor when the two are equal (they are in the published model), refused otherwise."""

from __future__ import annotations

from tfcli.checkpoints.families import llama
from tfcli.checkpoints.families.common import unsupported
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import BARE, LM, Architecture

# PhimoeConfig() defaults, for the keys read
DEFAULTS: Config = llama.MIXTRAL_DEFAULTS | {
    "vocab_size": 32064, "intermediate_size": 6400, "num_local_experts": 16,
    "num_experts_per_tok": 2, "max_position_embeddings": 131072, "rope_theta": 1e6,
    "router_jitter_noise": 0.01, "input_jitter_noise": 0.0, "attention_bias": False,
    "lm_head_bias": False, "tie_word_embeddings": False, "sliding_window": None,
}
# PhiMoEForCausalLM: the published config's name for its remote-code class, the same model
CLASSES: dict[str, Architecture] = {"PhimoeForCausalLM": LM, "PhimoeModel": BARE,
                                    "PhiMoEForCausalLM": LM}


def _mscale(c: ConfigFields, fields: Config) -> None:
    """LongRoPE's cos / sin multiplier: short_mscale = long_mscale as attention_factor."""
    scaling = fields.get("rope_scaling")
    if not isinstance(scaling, dict) or scaling.get("type") != "longrope":
        return
    params = c.section("rope_parameters") if c.has("rope_parameters") else c.section("rope_scaling")
    short, long = params.number("short_mscale"), params.number("long_mscale")
    if short != long:
        raise unsupported(c, f"short_mscale {shown(short)} and long_mscale {shown(long)} differ "
                             "(supported: one multiplier for both lengths)")
    scaling["attention_factor"] = short


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    fields, notes = llama.read_llama(c, arch)  # Mixtral's experts (model_type phimoe: below)
    fields.pop("sliding_window", None)
    window = c.optional_integer("sliding_window")
    if window is not None and window < fields["max_seq_len"]:
        fields["sliding_window"] = window
    _mscale(c, fields)
    fields |= {"norm": "layernorm", "attention_out_bias": c.flag("attention_bias"),
               "ffn_bias": False, "n_experts": c.integer("num_local_experts"),
               "experts_per_token": c.integer("num_experts_per_tok"),
               "router_scoring": "sparsemixer", "norm_topk_prob": False,
               "router_jitter": c.number("router_jitter_noise")}
    if arch.lm_head and c.flag("lm_head_bias"):
        fields["lm_head_bias"] = True
    return fields, notes


TABLE = llama.TABLE  # Mixtral's names, with the LayerNorms' and the head's biases
