"""ERNIE 4.5 dense (baidu/ERNIE-4.5-0.3B; `ernie4_5`, Ernie4_5ForCausalLM): LLaMA's body and
tensor names with `use_bias` on every attention and MLP projection, and RoPE over the whole head
in interleaved pairs (2i, 2i + 1), GLM's way; tied by default.

ERNIE 4.5 MoE (baidu/ERNIE-4.5-21B-A3B, -300B-A47B; `ernie4_5_moe`): that attention; every
`moe_layer_interval`-th block from `moe_layer_start_index` to `moe_layer_end_index` routes each
token to `moe_k` of `moe_num_experts` SwiGLU experts - chosen on the softmax plus a correction
bias (`moe_statics.e_score_correction_bias`, (1, E), an nn.Parameter transformers counts), the
chosen probabilities renormalised - beside `moe_num_shared_experts` shared ones run as one
MLP; the other blocks are dense. Checkpoints (Baidu's, and transformers 5's save_pretrained,
which converts back) keep one module per expert and the bias beside the gate
(`mlp.moe_statics.`); transformers stacks them only in memory."""

from __future__ import annotations

from tfcli.checkpoints.families import llama
from tfcli.checkpoints.families.common import unsupported
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import BARE, LM, Architecture
from tfcli.checkpoints.names import Table, linear, rule

# Ernie4_5Config() defaults, for the keys read
DEFAULTS: Config = llama.LLAMA_DEFAULTS | {
    "vocab_size": 103424, "hidden_size": 1024, "intermediate_size": 3072,
    "num_hidden_layers": 18, "num_attention_heads": 16, "num_key_value_heads": 2,
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "tie_word_embeddings": True,
    "rope_theta": 500000.0, "use_bias": False, "head_dim": 128,
}
CLASSES: dict[str, Architecture] = {"Ernie4_5ForCausalLM": LM, "Ernie4_5Model": BARE}
TABLE = llama.TABLE  # LLaMA's tensor names, biases included


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    fields, notes = llama.read_llama(c, arch)
    fields.pop("sliding_window", None)
    biased = c.flag("use_bias")  # transformers reads no attention_bias / mlp_bias here
    fields |= {"attention_bias": biased, "attention_out_bias": biased, "ffn_bias": biased,
               "rope_pairing": "interleaved"}
    return fields, notes


# Ernie4_5_MoeConfig() defaults (ERNIE-4.5-21B-A3B's shape), for the keys read
MOE_DEFAULTS: Config = DEFAULTS | {
    "hidden_size": 2560, "intermediate_size": 12288, "num_hidden_layers": 28,
    "num_attention_heads": 20, "num_key_value_heads": 4, "head_dim": None,
    "moe_intermediate_size": 1536, "moe_num_shared_experts": 2, "moe_layer_start_index": 1, "moe_layer_end_index": -1,
    "moe_layer_interval": 1, "moe_norm_min": 1e-12,
}
MOE_CLASSES: dict[str, Architecture] = {"Ernie4_5_MoeForCausalLM": LM, "Ernie4_5_MoeModel": BARE}
MAX_LISTED_LAYERS = 1 << 16  # past it a per-layer list (dense_layers) is not built
_ALIASES = (("moe_num_experts", "num_experts", 64), ("moe_k", "num_experts_per_tok", 6))


def read_moe(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    if c.flag("use_bias"):  # its MLPs and shared experts take biases, its routed experts none
        raise unsupported(c, "use_bias = True is not supported (biased dense and shared MLPs "
                             "beside unbiased experts)")
    # config.json spells the experts moe_num_experts / moe_k, transformers' attribute_map
    # num_experts / num_experts_per_tok; the defaults are Ernie4_5_MoeConfig's
    values = c.values | {key: c.values.get(alias, default) for key, alias, default in _ALIASES
                         if key not in c.values}
    c = ConfigFields(values, c.file, c.prefix)
    fields, notes = read(c, arch)
    n_layers = fields["n_layers"]
    moe = _moe_layers(c, n_layers)
    if not moe:
        return fields, notes
    width, shared = c.integer("moe_intermediate_size"), c.integer("moe_num_shared_experts", minimum=0)
    fields |= {"n_experts": c.integer("moe_num_experts"),
               "experts_per_token": c.integer("moe_k"), "expert_d_ff": width,
               "router_scoring": "softmax", "router_bias": True, "router_bias_parameter": True,
               "norm_topk_prob": True}
    if shared:
        fields |= {"n_shared_experts": shared, "shared_expert_d_ff": width}
    if len(moe) < n_layers:
        if n_layers > MAX_LISTED_LAYERS:
            raise c.error("num_hidden_layers", f"{n_layers:,} layers, some dense, more than "
                                               f"tfcli lists ({MAX_LISTED_LAYERS:,})")
        fields["dense_layers"] = sorted(set(range(n_layers)) - moe)
    return fields, notes


def _moe_layers(c: ConfigFields, n_layers: int) -> set[int]:
    """The blocks Ernie4_5_MoeDecoderLayer makes MoE: (i + 1) a multiple of the interval, from
    the start index to the end one (-1: the last layer)."""
    interval = c.integer("moe_layer_interval")
    start = c.integer("moe_layer_start_index", minimum=0)
    end = c.integer("moe_layer_end_index", minimum=-1)
    last = n_layers - 1 if end == -1 else min(end, n_layers - 1)
    first = start + (interval - 1 - start) % interval  # the first i >= start, (i + 1) % interval 0
    if n_layers > MAX_LISTED_LAYERS and (first, interval, last) != (0, 1, n_layers - 1):
        raise c.error("num_hidden_layers", f"{n_layers:,} layers, some dense, more than tfcli "
                                           f"lists ({MAX_LISTED_LAYERS:,})")
    return set(range(first, last + 1, interval))


def _moe_table() -> Table:
    mlp, b = "{base}layers.{i}.mlp", "decoder.blocks.{i}.ffn"
    experts, projections = f"{b}.experts.{{e}}", ("gate", "up", "down")
    return Table(
        bases=llama.TABLE.bases, anchor=llama.TABLE.anchor, ignored=llama.TABLE.ignored,
        tied_copies=llama.TABLE.tied_copies,
        rules=(
            *[r for r in llama.TABLE.rules if "block_sparse_moe" not in r.hf],  # not Mixtral's
            rule(f"{mlp}.gate.weight", f"{b}.router", "linear"),
            rule(f"{mlp}.moe_statics.e_score_correction_bias", f"{b}.router_bias", "squeeze"),
            *[rule(f"{mlp}.experts.{{e}}.{p}_proj.weight", f"{experts}.w_{p}", "linear")
              for p in projections],
            *[r for p in projections
              for r in linear(f"{mlp}.shared_experts.{p}_proj", f"{b}.shared.w_{p}",
                              f"{b}.shared.b_{p}")],
        ),
    )


MOE_TABLE = _moe_table()
