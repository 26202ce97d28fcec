"""OLMoE against transformers' OlmoeForCausalLM (the table-driven modules run its rows' logits,
generation, --check-cache, counts and trace --execute; here what is OLMoE's own): the full q/k
norms and the unrenormalised routing each move the logits by far more than the tolerance when
switched in transformers, and the float64 logits match to 1e-10."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.parity.parity_families import olmoe
from tests.parity.family_checks import (assert_float64_logits_match,
                                        no_qk_norms,
                                        saved_rows, switch_test)
from tests.parity.test_hf_parity import _rms_norm_f64, _rope_f64

pytestmark = pytest.mark.slow


saved = saved_rows({"olmoe": olmoe})


def _renormalised(model: object) -> None:
    for layer in model.model.layers:  # type: ignore[attr-defined]
        layer.mlp.gate.norm_topk_prob = True


SWITCHES: dict[str, Callable[[object], None]] = {"full q/k norms": no_qk_norms,
                                                 "unrenormalised routing": _renormalised}


test_each_feature_moves_the_logits_far_past_the_tolerance = switch_test(SWITCHES)


def _router_f64(self: object, x: object) -> tuple:
    """OlmoeTopKRouter with its softmax in the model's dtype (transformers: float32)."""
    import torch
    flat = x.reshape(-1, self.hidden_dim)  # type: ignore[attr-defined]
    logits = torch.nn.functional.linear(flat, self.weight)  # type: ignore[attr-defined]
    top, index = torch.topk(logits.softmax(dim=-1), self.top_k, dim=-1)  # type: ignore[attr-defined]
    if self.norm_topk_prob:  # type: ignore[attr-defined]
        top = top / top.sum(dim=-1, keepdim=True)
    return logits, top, index


def test_float64_logits_match(saved: tuple[object, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers.models.olmoe import modeling_olmoe as module
    monkeypatch.setattr(module.OlmoeRMSNorm, "forward", _rms_norm_f64)
    monkeypatch.setattr(module.OlmoeRotaryEmbedding, "forward", _rope_f64)
    monkeypatch.setattr(module.OlmoeTopKRouter, "forward", _router_f64)
    model, path = saved
    assert_float64_logits_match(model, path)  # type: ignore[arg-type]
