"""Qwen MoE: Qwen1.5-MoE / Qwen2-MoE (`qwen2_moe`) and Qwen3-MoE (`qwen3_moe`). The attention is
Qwen2's (q, k, v biases from `qkv_bias`) or Qwen3's (per-head q/k RMSNorm); the FFN of a block
is MoE when (i + 1) % decoder_sparse_step == 0 and i is not in mlp_only_layers, else a dense
MLP of intermediate_size. Experts are moe_intermediate_size wide; Qwen2-MoE adds one shared
expert of shared_expert_intermediate_size behind a sigmoid gate. The checkpoints store every
expert on its own (`mlp.experts.{e}.gate_proj`), as transformers 5 saves them."""

from __future__ import annotations

from tfcli.checkpoints.families import llama
from tfcli.checkpoints.families.common import require_false
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import Architecture
from tfcli.checkpoints.names import Rule, Table, rule

# Qwen2MoeConfig() / Qwen3MoeConfig() defaults, for the keys read
QWEN2_MOE_DEFAULTS: Config = llama.QWEN2_DEFAULTS | {
    "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24,
    "num_attention_heads": 16, "num_key_value_heads": 16, "sliding_window": 4096,
    "decoder_sparse_step": 1, "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632, "num_experts_per_tok": 4, "num_experts": 60,
    "norm_topk_prob": False, "mlp_only_layers": None, "qkv_bias": True,
}
QWEN3_MOE_DEFAULTS: Config = llama.QWEN2_DEFAULTS | {
    "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 24,
    "num_attention_heads": 32, "num_key_value_heads": 4, "sliding_window": 4096,
    "decoder_sparse_step": 1, "moe_intermediate_size": 768, "num_experts_per_tok": 8,
    "num_experts": 128, "norm_topk_prob": False, "mlp_only_layers": None,
}


def _dense_layers(c: ConfigFields, n_layers: int) -> list[int]:
    """mlp_only_layers as sorted distinct indices; those past the last layer name no layer
    (transformers never meets them) and are left out."""
    value = c.values.get("mlp_only_layers")
    if value is None:
        return []
    if not isinstance(value, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in value):
        raise c.error("mlp_only_layers", f"expected a list of layer indices, got {shown(value)}")
    return sorted({i for i in value if i < n_layers})


def _moe_fields(c: ConfigFields, n_layers: int, shared: bool) -> Config:
    """The MoE fields of either family; num_experts 0 is a dense model (every MLP dense).
    Qwen3MoeConfig maps num_experts to num_local_experts, the name transformers 5 saves."""
    n_experts = c.integer("num_local_experts" if c.has("num_local_experts") else "num_experts",
                          minimum=0)
    if not n_experts:
        return {}
    fields: Config = {
        "n_experts": n_experts, "experts_per_token": c.integer("num_experts_per_tok"),
        "expert_d_ff": c.integer("moe_intermediate_size"),
        "norm_topk_prob": c.flag("norm_topk_prob"),
    }
    step, dense = c.integer("decoder_sparse_step"), _dense_layers(c, n_layers)
    if step != 1:
        fields["moe_layer_step"] = step
    if dense:
        fields["dense_layers"] = dense
    if shared:  # Qwen2MoeSparseMoeBlock always builds its shared expert and gate
        fields |= {"n_shared_experts": 1, "shared_expert_gate": True,
                   "shared_expert_d_ff": c.integer("shared_expert_intermediate_size")}
    return fields


def read_qwen2_moe(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    """Qwen2's attention with biases on q, k, v from `qkv_bias` (none on o), no q/k norms."""
    # transformers 5 saves sliding_window 0 without use_sliding_window (refused when true),
    # and the window is read only with it
    require_false(c, "use_sliding_window")  # its windows differ from Qwen2's: refused
    c = ConfigFields(c.values | {"sliding_window": None}, c.file, c.prefix)
    fields, notes = llama.read_qwen(c, arch)  # its Qwen3 branch: q/k norms, undone here
    fields.pop("qk_norm", None)
    fields |= {"attention_bias": c.flag("qkv_bias"), "attention_out_bias": False}
    return fields | _moe_fields(c, fields["n_layers"], shared=True), notes


def read_qwen3_moe(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    """Qwen3's attention (per-head q/k RMSNorm, `attention_bias` on all four projections)."""
    require_false(c, "use_sliding_window")  # one window on every layer, unlike Qwen3's: refused
    fields, notes = llama.read_qwen(c, arch)
    return fields | _moe_fields(c, fields["n_layers"], shared=False), notes


def _moe_rules() -> list[Rule]:
    mlp, b = "{base}layers.{i}.mlp", "decoder.blocks.{i}.ffn"
    projections = ("gate", "up", "down")
    return [
        rule(f"{mlp}.gate.weight", f"{b}.router", "linear"),
        *[rule(f"{mlp}.experts.{{e}}.{p}_proj.weight", f"{b}.experts.{{e}}.w_{p}", "linear")
          for p in projections],
        *[rule(f"{mlp}.shared_expert.{p}_proj.weight", f"{b}.shared.w_{p}", "linear")
          for p in projections],
        rule(f"{mlp}.shared_expert_gate.weight", f"{b}.shared_gate", "linear"),  # (1, d)
    ]


# LLaMA's rules (attention, norms, the dense MLP of dense blocks, head; not Mixtral's
# block_sparse_moe) and the MoE block's
_LLAMA_RULES = tuple(r for r in llama.TABLE.rules if "block_sparse_moe" not in r.hf)
TABLE = Table(
    bases=llama.TABLE.bases, anchor=llama.TABLE.anchor,
    rules=_LLAMA_RULES + tuple(_moe_rules()), ignored=llama.TABLE.ignored,
    tied_copies=llama.TABLE.tied_copies,
)
