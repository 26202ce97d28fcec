"""GLM-4 (glm) and GLM-4-0414 (glm4) against transformers (the table-driven modules run their
rows' logits, generation, --check-cache, counts and trace --execute; here what is GLM's own):
the q/k/v biases, the (partial, interleaved) RoPE and glm4's post-sublayer norms each move the
logits by far more than the tolerance when switched off in transformers - with RoPE shown to
matter, the parity at 1e-4 pins which dimensions it rotates and how it pairs them - and the
float64 logits match to 1e-10."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.parity.family_checks import (assert_float64_logits_match,
                                        assert_switch_moves_the_logits, layers, no_qk_norms,
                                        no_rope, saved_rows, switch_test)
from tests.parity.parity_families import glm, glm4, glm4_moe
from tests.parity.saved_models import save_random
from tests.parity.test_hf_parity import _rms_norm_f64, _rope_f64

pytestmark = pytest.mark.slow

BUILDERS = {"glm": glm, "glm4": glm4}


saved = saved_rows(BUILDERS)


def _no_qkv_biases(model: object) -> None:
    for layer in layers(model):
        for proj in ("q_proj", "k_proj", "v_proj"):
            getattr(layer.self_attn, proj).bias.data.zero_()


def _no_post_norms(model: object) -> None:
    import torch
    for layer in layers(model):
        layer.post_self_attn_layernorm = torch.nn.Identity()
        layer.post_mlp_layernorm = torch.nn.Identity()


SWITCHES: dict[str, Callable[[object], None]] = {"q/k/v biases": _no_qkv_biases,
                                                 "partial interleaved RoPE": no_rope}


test_each_feature_moves_the_logits_far_past_the_tolerance = switch_test(SWITCHES)


def test_glm4_post_norms_move_the_logits(tmp_path: Path) -> None:
    model = save_random(glm4, tmp_path, std=0.15)
    assert_switch_moves_the_logits(model, tmp_path, _no_post_norms)  # type: ignore[arg-type]


def test_float64_logits_match(saved: tuple[object, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """GLM's RMSNorm and RoPE tables run in float32 inside transformers whatever the dtype: the
    float64 reference replaces them (its rotation takes the tables' first half, as here)."""
    from transformers.models.glm import modeling_glm
    from transformers.models.glm4 import modeling_glm4
    for module, prefix in ((modeling_glm, "Glm"), (modeling_glm4, "Glm4")):
        monkeypatch.setattr(getattr(module, f"{prefix}RMSNorm"), "forward", _rms_norm_f64)
        monkeypatch.setattr(getattr(module, f"{prefix}RotaryEmbedding"), "forward", _rope_f64)
    model, path = saved
    assert_float64_logits_match(model, path)  # type: ignore[arg-type]


# --- GLM-4.5 (glm4_moe) -------------------------------------------------------------------------


def _no_correction_bias(model: object) -> None:
    for layer in layers(model)[1:]:  # the MoE blocks
        layer.mlp.gate.e_score_correction_bias.zero_()


def _unscaled_routing(model: object) -> None:
    for layer in layers(model)[1:]:
        layer.mlp.gate.routed_scaling_factor = 1.0


MOE_SWITCHES: dict[str, Callable[[object], None]] = {
    "correction bias": _no_correction_bias, "per-head q/k norms": no_qk_norms,
    "routed scaling": _unscaled_routing, "partial RoPE": no_rope,
}
saved_moe = saved_rows({"glm4-moe": glm4_moe})


test_each_glm4_moe_feature_moves_the_logits = switch_test(MOE_SWITCHES, fixture="saved_moe")


def _router_f64(self: object, x: object) -> tuple:
    """Glm4MoeTopkRouter in the model's dtype (transformers: float32), else as it is."""
    import torch
    flat = x.view(-1, self.hidden_dim)  # type: ignore[attr-defined]
    logits = torch.nn.functional.linear(flat, self.weight)  # type: ignore[attr-defined]
    scores = logits.sigmoid()
    choice = (scores + self.e_score_correction_bias.to(scores.dtype))  # type: ignore[attr-defined]
    groups, size = self.num_group, self.num_experts // self.num_group  # type: ignore[attr-defined]
    group_scores = choice.view(-1, groups, size).topk(2, dim=-1)[0].sum(dim=-1)
    best = torch.topk(group_scores, k=self.topk_group, dim=-1)[1]  # type: ignore[attr-defined]
    keep = torch.zeros_like(group_scores).scatter_(1, best, 1).bool()
    choice = choice.masked_fill(~keep.unsqueeze(-1).expand(-1, groups, size).reshape(
        -1, self.num_experts), float("-inf"))  # type: ignore[attr-defined]
    index = torch.topk(choice, k=self.top_k, dim=-1)[1]  # type: ignore[attr-defined]
    weights = scores.gather(1, index)
    if self.norm_topk_prob:  # type: ignore[attr-defined]
        weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
    return logits, weights * self.routed_scaling_factor, index  # type: ignore[attr-defined]


def test_glm4_moe_float64_logits_match(saved_moe: tuple[object, Path],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers.models.glm4_moe import modeling_glm4_moe as module
    monkeypatch.setattr(module.Glm4MoeRMSNorm, "forward", _rms_norm_f64)
    monkeypatch.setattr(module.Glm4MoeRotaryEmbedding, "forward", _rope_f64)
    monkeypatch.setattr(module.Glm4MoeTopkRouter, "forward", _router_f64)
    model, path = saved_moe
    assert_float64_logits_match(model, path)  # type: ignore[arg-type]
