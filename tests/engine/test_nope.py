"""NoPE layers (spec.nope_layers, tfcli.engine.model.layer_specs): such a layer's attention
rotates nothing, so it sees token order only through the causal mask. Shifting every position
by the same offset then changes nothing in a NoPE stack, and does change a RoPE one (RoPE's
scores depend on relative offsets only, but the reference below shifts the queries alone)."""

from __future__ import annotations

import numpy as np

from tests.conftest import VALID_SPEC
from tfcli.engine.init import init_weights
from tfcli.engine.model import ModelInput, forward, layer_specs
from tfcli.spec.load import parse_spec_text

SPEC = VALID_SPEC + "positions: rope\nnorm: rmsnorm\nactivation: swiglu\n"
TOKENS = np.array([[3, 9, 27, 4, 11, 50]])


def _logits(spec, positions: np.ndarray) -> np.ndarray:
    weights = init_weights(spec, seed=2, dtype=np.float64)
    return forward(spec, weights, ModelInput(TOKENS, positions=positions)).logits


def test_every_nope_layer_runs_without_rope_and_the_others_with_it() -> None:
    spec = parse_spec_text(SPEC.replace("n_layers: 2", "n_layers: 5") + "nope_layers: [1, 4]\n")
    views = layer_specs(spec, 5)
    assert [v.positions for v in views] == ["rope", "none", "rope", "rope", "none"]
    assert all(v.nope_layers is None for v in views)  # a view runs as a one-block stack too


def test_a_nope_stack_ignores_absolute_positions_and_a_rope_stack_does_not() -> None:
    nope = parse_spec_text(SPEC + "nope_layers: [0, 1]\n")
    rope = parse_spec_text(SPEC)
    plain, shifted = np.arange(6), np.arange(6) * 2  # spread: relative offsets change
    np.testing.assert_allclose(_logits(nope, plain), _logits(nope, shifted), rtol=1e-12, atol=1e-12)
    assert not np.allclose(_logits(rope, plain), _logits(rope, shifted), rtol=1e-6, atol=1e-9)


def test_nope_layers_change_no_count_and_no_weight() -> None:
    nope = parse_spec_text(SPEC + "nope_layers: [1]\n")
    rope = parse_spec_text(SPEC)
    a, b = init_weights(nope, 0), init_weights(rope, 0)
    np.testing.assert_array_equal(a.decoder.blocks[1].attn.wq, b.decoder.blocks[1].attn.wq)
