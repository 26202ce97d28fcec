"""Llama 4 text (meta-llama/Llama-4-Scout-17B-16E, -Maverick-17B-128E; `llama4_text`,
Llama4ForCausalLM, and the language model of `llama4` wrappers): LLaMA's pre-norm blocks with
RoPE in interleaved pairs (transformers' complex view), NoPE every `no_rope_layer_interval`-th
layer (`no_rope_layers` flags 0), chunked attention on the rotated layers (`attention_chunk_size`
8192: a query sees the keys of its own chunk), full attention on the NoPE ones, whose queries
are scaled by the attention temperature (`attn_temperature_tuning`, `attn_scale`,
`floor_scale`), weightless L2 q/k norms on the rotated layers (`use_qk_norm`), and on the MoE
layers (`moe_layers`, else every `interleave_moe_layer_step`-th) a shared expert plus top-k
routed experts scored by the sigmoid of their logits, each routed weight multiplying its
expert's input. Dense layers are `intermediate_size_mlp` wide, experts `intermediate_size`.

Its checkpoints stack each block's experts: `experts.gate_up_proj` (E, d, 2 d_ff), already
(in, out), gate then up along the last axis; `experts.down_proj` (E, d_ff, d)."""

from __future__ import annotations

from tfcli.checkpoints.families import llama, smollm3
from tfcli.checkpoints.families.gemma import layer_pattern, shortest_period
from tfcli.checkpoints.families.rope import rope_theta, with_rope_scaling
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import BARE, LM, Architecture
from tfcli.checkpoints.names import Table, linear, rule, stacked

# Llama4TextConfig() defaults, for the keys read
DEFAULTS: Config = {
    "vocab_size": 202048, "hidden_size": 5120, "intermediate_size": 8192,
    "intermediate_size_mlp": 16384, "num_hidden_layers": 48, "num_attention_heads": 40,
    "num_key_value_heads": 8, "head_dim": 128, "hidden_act": "silu",
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
    "rope_theta": 500000.0, "attention_bias": False, "num_experts_per_tok": 1,
    "num_local_experts": 16, "moe_layers": None, "interleave_moe_layer_step": 1,
    "use_qk_norm": True, "no_rope_layers": None, "no_rope_layer_interval": 4,
    "attention_chunk_size": 8192, "layer_types": None, "attn_temperature_tuning": True,
    "floor_scale": 8192, "attn_scale": 0.1,
}
CLASSES: dict[str, Architecture] = {"Llama4ForCausalLM": LM, "Llama4TextModel": BARE}
MAX_LISTED_LAYERS = 1 << 16  # past it a per-layer list (dense_layers) is not built
_KINDS = {"chunked_attention": "local", "full_attention": "global"}


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    llama.require_silu(c)
    fields: Config = llama.decoder_sizes(c) | {
        "d_ff": c.integer("intermediate_size_mlp"), "activation": "swiglu", "norm": "rmsnorm",
        "norm_placement": "pre", "norm_eps": c.number("rms_norm_eps"), "positions": "rope",
        "rope_theta": rope_theta(c), "rope_pairing": "interleaved", "bias": False,
        "attention_bias": c.flag("attention_bias"), "ffn_bias": False,
        "tie_embeddings": c.flag("tie_word_embeddings"), "lm_head": arch.lm_head,
    }
    with_rope_scaling(c, fields)
    n_layers = fields["n_layers"]
    rotates = _rotated(c, n_layers)
    fields |= _attention(c, rotates)
    if c.flag("use_qk_norm"):
        fields["qk_norm"] = "l2"
    return fields | _experts(c, n_layers), []


def _rotated(c: ConfigFields, n_layers: int) -> list[bool] | int:
    """Which layers rotate: a flag per layer from `no_rope_layers` (1 = RoPE; an empty list,
    as null, means the default, longer lists are read to n_layers as transformers indexes
    them), or the interval n of the default (every n-th layer NoPE)."""
    flags = c.values.get("no_rope_layers")
    if not flags:
        return c.integer("no_rope_layer_interval")
    if isinstance(flags, list) and len(flags) > n_layers:
        flags = flags[:n_layers]
    nope = set(smollm3.nope_layers(ConfigFields(c.values | {"no_rope_layers": flags}, c.file,
                                                c.prefix), n_layers))
    return [i not in nope for i in range(n_layers)]


def _attention(c: ConfigFields, rotates: list[bool] | int) -> Config:
    """nope_layers with their temperature, and the chunked local layers (layer_pattern from
    `layer_types`, else chunked where a layer rotates and `attention_chunk_size` is set)."""
    n_layers = c.integer("num_hidden_layers")
    if isinstance(rotates, int):
        if n_layers // rotates > smollm3.MAX_NOPE_LAYERS:
            smollm3.nope_layers(c, n_layers)  # raises: too many to list
        # an interval past the layers leaves every layer rotated (and builds no list that long)
        period = [True] * (rotates - 1) + [False] if rotates <= n_layers else [True]
        nope = list(range(rotates - 1, n_layers, rotates))
    else:
        period, nope = shortest_period(rotates), [i for i, r in enumerate(rotates) if not r]
    fields: Config = {}
    if nope:
        fields["nope_layers"] = nope
        if _tuned(c):
            fields |= {"nope_temperature_scale": c.number("attn_scale"),
                       "nope_temperature_floor": c.integer("floor_scale")}
    chunk = c.optional_integer("attention_chunk_size")
    kinds = layer_pattern(c, ["local" if r and chunk is not None else "global"
                              for r in period], _KINDS)
    if "local" not in kinds:
        return fields
    if chunk is None:
        raise c.error("attention_chunk_size", "is null but layer_types has chunked_attention "
                                              "layers")
    return fields | {"layer_pattern": kinds, "sliding_window": chunk, "chunked_attention": True}


def _tuned(c: ConfigFields) -> bool:
    """attn_temperature_tuning: a bool in transformers, an integer (4) in Meta's published
    configs, which transformers reads by its truth."""
    value = c.values.get("attn_temperature_tuning", True)
    if isinstance(value, bool) or (isinstance(value, int) and 0 <= value <= 1 << 16):
        return bool(value)
    raise c.error("attn_temperature_tuning", f"expected true or false, got {shown(value)}")


def _experts(c: ConfigFields, n_layers: int) -> Config:
    """The MoE layers' experts, a shared one beside them, and which layers are dense."""
    step, listed = c.integer("interleave_moe_layer_step"), c.values.get("moe_layers")
    if listed is not None and (not isinstance(listed, list)
                               or not all(isinstance(i, int) and not isinstance(i, bool)
                                          for i in listed)):
        raise c.error("moe_layers", f"expected a list of layer indices, got {shown(listed)}")
    moe = sorted({i for i in listed if 0 <= i < n_layers}) if listed is not None else None
    if moe == []:
        return {}  # every layer dense: no experts at all
    width = c.integer("intermediate_size")
    fields: Config = {
        "n_experts": c.integer("num_local_experts"),
        "experts_per_token": c.integer("num_experts_per_tok"), "expert_d_ff": width,
        "n_shared_experts": 1, "shared_expert_d_ff": width, "router_scoring": "sigmoid",
        "norm_topk_prob": False, "router_scales_input": True,
    }
    if moe is None or (len(moe) == len(range(step - 1, n_layers, step))
                       and all(i % step == step - 1 for i in moe)):
        return fields | ({"moe_layer_step": step} if step != 1 else {})
    if n_layers > MAX_LISTED_LAYERS:
        raise c.error("moe_layers", f"names MoE layers of {n_layers:,}, more than tfcli lists "
                                    f"({MAX_LISTED_LAYERS:,})")
    chosen = set(moe)
    return fields | {"dense_layers": [i for i in range(n_layers) if i not in chosen]}


def _table() -> Table:
    layer, b = "{base}layers.{i}", "decoder.blocks.{i}"
    ff, experts = f"{layer}.feed_forward", f"{b}.ffn.experts.{{e}}"
    dense = [r for p in ("gate", "up", "down")
             for r in linear(f"{ff}.{p}_proj", f"{b}.ffn.w_{p}", f"{b}.ffn.b_{p}")]
    shared = [rule(f"{ff}.shared_expert.{p}_proj.weight", f"{b}.ffn.shared.w_{p}", "linear")
              for p in ("gate", "up", "down")]
    return llama.stacked_expert_table([], [
        *dense,
        rule(f"{ff}.router.weight", f"{b}.ffn.router", "linear"),
        stacked(f"{ff}.experts.gate_up_proj", (f"{experts}.w_gate", f"{experts}.w_up"), "split"),
        stacked(f"{ff}.experts.down_proj", f"{experts}.w_down"),
        *shared])


TABLE = _table()
