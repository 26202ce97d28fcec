"""ERNIE 4.5 MoE against transformers' Ernie4_5_MoeForCausalLM (the table-driven modules run
its rows' logits, generation, --check-cache, counts and trace --execute; here what is its own):
the correction bias (which experts a token gets), the renormalisation of the chosen
probabilities and the shared experts each move the logits by far more than the tolerance when
switched off in transformers, and the float64 logits match to 1e-10."""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.parity.family_checks import (assert_float64_logits_match, layers, saved_rows,
                                        switch_test)
from tests.parity.parity_families import ernie4_5_moe, ernie4_5_moe_interval
from tests.parity.test_hf_parity import _rms_norm_f64, _rope_f64
from tests.parity.test_llama_variants_parity import _apply_rope_f64

pytestmark = pytest.mark.slow

saved = saved_rows({"ernie4_5-moe": ernie4_5_moe, "ernie4_5-moe-interval": ernie4_5_moe_interval})
shared = saved_rows({"ernie4_5-moe": ernie4_5_moe})


def _routers(model: object) -> list:
    return [layer.mlp.gate for layer in layers(model) if hasattr(layer.mlp, "gate")]


def _no_correction_bias(model: object) -> None:
    for router in _routers(model):
        router.moe_statics.e_score_correction_bias.data.zero_()


def _not_renormalised(model: object) -> None:
    """A router that keeps the chosen probabilities as the softmax gave them."""
    import torch

    def route(self: torch.nn.Module, hidden: torch.Tensor) -> tuple:
        logits = torch.nn.functional.linear(hidden.float(), self.weight.float())
        probs = torch.softmax(logits, dim=1)
        _, chosen = torch.topk(self.moe_statics(probs), self.top_k, dim=-1)
        return logits, torch.gather(probs, -1, chosen).to(hidden.dtype), chosen
    for router in _routers(model):
        router.forward = types.MethodType(route, router)


def _no_shared_experts(model: object) -> None:
    for layer in layers(model):
        if getattr(layer.mlp, "shared_experts", None) is not None:
            layer.mlp.shared_experts.down_proj.weight.data.zero_()


SWITCHES: dict[str, Callable[[object], None]] = {
    "correction bias": _no_correction_bias, "renormalisation": _not_renormalised}

test_each_feature_moves_the_logits_far_past_the_tolerance = switch_test(SWITCHES)
test_the_shared_experts_move_the_logits = switch_test({"shared experts": _no_shared_experts},
                                                      "shared")


def _router_f64(self: object, hidden: object) -> tuple:
    """Ernie4_5_MoeTopKRouter without its float32 casts."""
    import torch
    logits = torch.nn.functional.linear(hidden, self.weight)  # type: ignore[arg-type, attr-defined]
    probs = torch.softmax(logits, dim=1)
    _, chosen = torch.topk(self.moe_statics(probs), self.top_k, dim=-1)  # type: ignore[attr-defined]
    weights = torch.gather(probs, -1, chosen)
    return logits, weights / weights.sum(dim=-1, keepdim=True), chosen


def test_float64_logits_match(saved: tuple[object, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """ERNIE's RMSNorm, RoPE tables and rotation, and its router, run in float32 inside
    transformers whatever the dtype: the float64 reference replaces each."""
    from transformers.models.ernie4_5_moe import modeling_ernie4_5_moe as module
    monkeypatch.setattr(module.Ernie4_5_MoeRMSNorm, "forward", _rms_norm_f64)
    monkeypatch.setattr(module.Ernie4_5_MoeRotaryEmbedding, "forward", _rope_f64)
    monkeypatch.setattr(module, "apply_rotary_pos_emb", _apply_rope_f64)
    monkeypatch.setattr(module.Ernie4_5_MoeTopKRouter, "forward", _router_f64)
    model, path = saved
    assert_float64_logits_match(model, path)  # type: ignore[arg-type]
