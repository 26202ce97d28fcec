"""Granite's four multipliers against transformers' GraniteForCausalLM and GraniteMoeForCausalLM
(the table-driven modules run their rows' logits, generation, counts and trace; here what is
Granite's own): each multiplier moves the logits by far more than the tolerance, so that a
parity that ignored one would fail, and the float64 logits match to 1e-10. GraniteMoE's routing
(softmax over the chosen logits) is checked against its renormalised-top-k reading."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parity.parity_families import granite, granitemoe
from tests.parity.family_checks import (assert_float64_logits_match,
                                        assert_switch_moves_the_logits, saved_rows)
from tests.parity.test_hf_parity import _rms_norm_f64, _rope_f64

pytestmark = pytest.mark.slow


BUILDERS = {"granite": granite, "granitemoe": granitemoe}


saved = saved_rows(BUILDERS)


def _switch_off(model: object, multiplier: str) -> None:
    """Set one multiplier to 1 where GraniteForCausalLM reads it (most are copied at init)."""
    inner = model.model  # type: ignore[attr-defined]
    if multiplier == "embedding_multiplier":
        inner.embedding_multiplier = 1.0
    elif multiplier == "residual_multiplier":
        for layer in inner.layers:
            layer.residual_multiplier = 1.0
    elif multiplier == "attention_multiplier":
        for layer in inner.layers:
            layer.self_attn.scaling = 1.0
    else:
        model.config.logits_scaling = 1.0  # type: ignore[attr-defined]


@pytest.mark.parametrize("multiplier", ["embedding_multiplier", "residual_multiplier",
                                        "attention_multiplier", "logits_scaling"])
def test_each_multiplier_moves_the_logits_far_past_the_tolerance(saved: tuple[object, Path],
                                                                 multiplier: str) -> None:
    model, path = saved
    assert_switch_moves_the_logits(model, path,  # type: ignore[arg-type]
                                   lambda m: _switch_off(m, multiplier))


def _router_f64(self: object, x: object) -> tuple:
    """GraniteMoeTopKRouter in float64 (transformers casts its logits to float32), written as
    tfcli reads it: the top-k of the softmax over all experts, renormalised - equal to the
    softmax over the k chosen logits."""
    import torch
    logits = torch.nn.functional.linear(x, self.weight)  # type: ignore[attr-defined]
    top, index = torch.topk(logits.softmax(dim=-1), self.top_k, dim=-1)  # type: ignore[attr-defined]
    return logits, top / top.sum(dim=-1, keepdim=True), index


def test_float64_logits_match(saved: tuple[object, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Granite's RMSNorm, RoPE and router run in float32 inside transformers whatever the
    dtype: the float64 reference replaces them, as test_hf_parity.py does LLaMA's."""
    from transformers.models.granite import modeling_granite as granite_module
    from transformers.models.granitemoe import modeling_granitemoe as moe_module
    for module, prefix in ((granite_module, "Granite"), (moe_module, "GraniteMoe")):
        monkeypatch.setattr(getattr(module, f"{prefix}RMSNorm"), "forward", _rms_norm_f64)
        monkeypatch.setattr(getattr(module, f"{prefix}RotaryEmbedding"), "forward", _rope_f64)
    monkeypatch.setattr(moe_module.GraniteMoeTopKRouter, "forward", _router_f64)
    model, path = saved
    assert_float64_logits_match(model, path)  # type: ignore[arg-type]
