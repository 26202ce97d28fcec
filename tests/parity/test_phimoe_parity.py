"""Phi-3.5-MoE against transformers' PhimoeForCausalLM (the table-driven modules run its row's
logits, generation, --check-cache, counts and trace --execute; here what is its own): the
sparsemixer's relative masks, the LayerNorms' biases and the head's bias each move the logits
by far more than the tolerance when switched off in transformers, and the float64 logits match
to 1e-10; tfcli's sparsemixer equals transformers' on random logits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.parity.family_checks import (assert_float64_logits_match,
                                        layers, saved_rows, switch_test, no_norm_biases)
from tests.parity.parity_families import phimoe
from tests.parity.test_hf_parity import _rope_f64

pytestmark = pytest.mark.slow

saved = saved_rows({"phimoe": phimoe})


def _no_masks(model: object) -> None:
    for layer in layers(model):  # a jitter of 1e9: no logit is ever past it
        layer.mlp.router.router_jitter_noise = 1e9


def _no_head_bias(model: object) -> None:
    model.lm_head.bias.data.zero_()  # type: ignore[attr-defined]


SWITCHES: dict[str, Callable[[object], None]] = {
    "sparsemixer masks": _no_masks, "LayerNorm biases": no_norm_biases,
    "head bias": _no_head_bias,
}


test_each_feature_moves_the_logits_far_past_the_tolerance = switch_test(SWITCHES)


@pytest.mark.parametrize("jitter", [0.01, 0.1, 0.5])
def test_sparsemixer_equals_transformers(jitter: float) -> None:
    import torch
    from transformers.models.phimoe.modeling_phimoe import sparsemixer as reference

    from tfcli.engine.ffn import sparsemixer
    logits = np.random.default_rng(3).normal(size=(64, 8)) * 2
    logits[0] = logits[0, 0]  # a row of ties: the lower expert id first, as torch.max
    want_weights, want_ids = reference(torch.from_numpy(logits), jitter_eps=jitter,
                                       training=False)
    ids, weights = sparsemixer(logits, jitter)
    np.testing.assert_array_equal(ids, want_ids.numpy())
    np.testing.assert_allclose(weights, want_weights.numpy(), rtol=1e-12)


def test_float64_logits_match(saved: tuple[object, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Phi-3.5-MoE's RoPE tables run in float32 inside transformers whatever the dtype (its
    LayerNorm and router in the model's): the float64 reference replaces them."""
    from transformers.models.phimoe import modeling_phimoe as module
    monkeypatch.setattr(module.PhimoeRotaryEmbedding, "forward", _rope_f64)
    model, path = saved
    assert_float64_logits_match(model, path)  # type: ignore[arg-type]
