"""The checks of a Spec's mixture-of-experts fields: each field needs experts to mean anything,
and the routing fields (groups, scoring, bias) must describe a routing that can pick k experts.

Kept apart from tfcli/spec/model.py, which calls them from its validator; they read the Spec only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfcli.core.errors import SpecConsistencyError, shown

if TYPE_CHECKING:
    from tfcli.spec.model import Spec


def check_moe(spec: Spec) -> None:
    if spec.experts_per_token > spec.n_experts:
        raise SpecConsistencyError(
            "experts_per_token",
            f"{spec.experts_per_token} exceeds n_experts {spec.n_experts}",
        )
    if spec.n_experts and not spec.experts_per_token:
        raise SpecConsistencyError("experts_per_token", "must be at least 1 when n_experts > 0")


def check_moe_layout(spec: Spec) -> None:
    """Expert widths, shared experts, which layers are MoE: each needs experts to mean anything."""
    changed = {"expert_d_ff": spec.expert_d_ff is not None, "n_shared_experts":
               spec.n_shared_experts > 0, "moe_layer_step": spec.moe_layer_step != 1,
               "dense_layers": spec.dense_layers is not None, "norm_topk_prob": not spec.norm_topk_prob,
               "router_scoring": spec.router_scoring != "softmax", "router_bias": spec.router_bias,
               "router_logits_bias": spec.router_logits_bias,
               "router_scales_input": spec.router_scales_input,
               "expert_groups": spec.expert_groups != 1, "topk_groups": spec.topk_groups is not None,
               "group_score": spec.group_score != "max",
               "routed_scaling_factor": spec.routed_scaling_factor != 1.0}
    for field, is_set in changed.items():
        if is_set and not spec.n_experts:
            raise SpecConsistencyError(field, "needs n_experts > 0")
    for field in ("shared_expert_d_ff", "shared_expert_gate"):
        if getattr(spec, field) not in (None, False) and not spec.n_shared_experts:
            raise SpecConsistencyError(field, "needs n_shared_experts > 0")
    if (changed["moe_layer_step"] or changed["dense_layers"]) and spec.family != "decoder":
        field = "moe_layer_step" if changed["moe_layer_step"] else "dense_layers"
        raise SpecConsistencyError(field, "only applies to family 'decoder'")
    layers = spec.dense_layers or []
    bad = [i for i in layers if not 0 <= i < spec.n_layers]
    if bad:
        raise SpecConsistencyError("dense_layers", f"layer {bad[0]} is not one of the "
                                   f"{spec.n_layers:,} layers (0 to {spec.n_layers - 1:,})")
    if len(set(layers)) != len(layers):
        raise SpecConsistencyError("dense_layers", "lists a layer twice")
    if spec.n_experts and not spec.moe_layer_count(spec.n_layers):
        raise SpecConsistencyError("dense_layers" if layers else "moe_layer_step",
                                   "leaves no MoE layer (set n_experts: 0)")
    check_routing(spec)


# Beyond it a sum of k weights could overflow float32 (k <= n_experts, weights <= 1 each):
# real factors are 1 to 2.5 (DeepSeek-V3 2.5; 16 in DeepSeek-V2).
ROUTED_SCALE_RANGE = (1e-3, 1e3)


def check_routing(spec: Spec) -> None:
    """Scoring, bias and groups: a routing that can always choose experts_per_token experts."""
    if spec.router_bias_parameter and not spec.router_bias:
        raise SpecConsistencyError("router_bias_parameter", "needs router_bias")
    if spec.router_bias and spec.router_scoring == "sparsemixer":
        raise SpecConsistencyError("router_bias", "needs router_scoring: softmax or sigmoid (the "
                                   "correction bias of DeepSeek-V3 and ERNIE 4.5)")
    if spec.router_scoring == "sparsemixer" and (spec.experts_per_token != 2
                                                 or spec.norm_topk_prob or spec.group_limited):
        raise SpecConsistencyError("router_scoring", "'sparsemixer' picks exactly 2 experts, "
                                   "unrenormalised and without groups (experts_per_token 2, "
                                   "norm_topk_prob false)")
    if spec.router_jitter != 0.01 and spec.router_scoring != "sparsemixer":
        raise SpecConsistencyError("router_jitter", "needs router_scoring: sparsemixer")
    if spec.router_logits_bias and spec.router_scoring != "softmax":
        raise SpecConsistencyError("router_logits_bias", "needs router_scoring: softmax (the "
                                   "biased logits of gpt-oss's router)")
    low, high = ROUTED_SCALE_RANGE
    if not low <= spec.routed_scaling_factor <= high:
        raise SpecConsistencyError("routed_scaling_factor", f"must lie in [{low:g}, {high:g}] "
                                   f"(got {shown(spec.routed_scaling_factor)})")
    groups, chosen = spec.expert_groups, spec.topk_groups
    if groups != 1 and chosen is None:
        raise SpecConsistencyError("expert_groups", "needs topk_groups (how many groups a token "
                                   "picks its experts from)")
    if chosen is None:
        if spec.group_score != "max":
            raise SpecConsistencyError("group_score", "needs topk_groups (group-limited routing)")
        return
    if spec.n_experts % groups:
        raise SpecConsistencyError("expert_groups", f"{groups:,} does not divide n_experts "
                                   f"{spec.n_experts:,} into equal groups")
    if chosen > groups:
        raise SpecConsistencyError("topk_groups", f"{chosen:,} exceeds expert_groups {groups:,}")
    per_group = spec.n_experts // groups
    if spec.experts_per_token > chosen * per_group:
        raise SpecConsistencyError("experts_per_token", f"{spec.experts_per_token:,} exceeds "
                                   f"the {chosen * per_group:,} experts of the topk_groups "
                                   f"{chosen:,} groups a token may use")
    if spec.group_score == "top2_sum" and per_group < 2:
        raise SpecConsistencyError("group_score", f"'top2_sum' needs at least 2 experts per "
                                   f"group (got {per_group})")
