"""StarCoder2 against transformers' Starcoder2ForCausalLM (the table-driven modules run its rows'
logits, generation, --check-cache, counts and trace --execute; here what is StarCoder2's own):
the sliding window, the LayerNorms' biases and the MLP's biases each move the logits by far
more than the tolerance when switched off in transformers, and the float64 logits match to
1e-10."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.parity.family_checks import (assert_float64_logits_match,
                                        layers, saved_rows, switch_test, no_norm_biases)
from tests.parity.parity_families import starcoder2
from tests.parity.test_hf_parity import _rope_f64

pytestmark = pytest.mark.slow


saved = saved_rows({"starcoder2": starcoder2})


def _no_window(model: object) -> None:
    model.config.sliding_window = None  # type: ignore[attr-defined]
    for layer in layers(model):
        layer.self_attn.sliding_window = None


def _no_mlp_biases(model: object) -> None:
    for layer in layers(model):
        layer.mlp.c_fc.bias.data.zero_()
        layer.mlp.c_proj.bias.data.zero_()


SWITCHES: dict[str, Callable[[object], None]] = {
    "sliding window": _no_window, "LayerNorm biases": no_norm_biases,
    "MLP biases": _no_mlp_biases,
}


test_each_feature_moves_the_logits_far_past_the_tolerance = switch_test(SWITCHES)


def test_float64_logits_match(saved: tuple[object, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """StarCoder2's RoPE tables are float32 whatever the dtype: the float64 reference replaces
    them (its LayerNorm runs in the model's dtype)."""
    from transformers.models.starcoder2 import modeling_starcoder2 as module
    monkeypatch.setattr(module.Starcoder2RotaryEmbedding, "forward", _rope_f64)
    model, path = saved
    assert_float64_logits_match(model, path)  # type: ignore[arg-type]
