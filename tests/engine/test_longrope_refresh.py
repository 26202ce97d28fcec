"""LongRoPE in cached generation: the slot at which the table switches to the long factors,
where generate re-encodes the sequence (keys cached before were rotated with the short ones)."""

from __future__ import annotations

import numpy as np

from tfcli.engine.generate import UNBATCHED, Batch, GenerationRequest, generate, rope_refresh_slot
from tfcli.engine.init import init_weights
from tfcli.spec.model import Spec

LONGROPE = {"type": "longrope", "factor": 4.0, "original_max_seq_len": 8,
            "short_factor": [1.0, 1.5], "long_factor": [2.0, 4.0]}
SPEC = Spec(name="t", family="decoder", vocab_size=32, max_seq_len=32, d_model=16, n_heads=4,
            n_layers=2, d_ff=32, activation="swiglu", norm="rmsnorm", positions="rope",
            bias=False, rope_scaling=LONGROPE, init_std=0.3)


def test_the_slot_whose_position_reaches_the_original_length() -> None:
    assert rope_refresh_slot(SPEC, UNBATCHED, prompt_len=5, max_len=20) == 8
    assert rope_refresh_slot(SPEC, UNBATCHED, prompt_len=8, max_len=20) == 8  # first decode slot
    assert rope_refresh_slot(SPEC, UNBATCHED, prompt_len=9, max_len=20) is None  # long already
    assert rope_refresh_slot(SPEC, UNBATCHED, prompt_len=5, max_len=8) is None  # never crosses


def test_left_padding_counts_positions_not_slots() -> None:
    """Row 1 is padded by 3: the largest position per slot is row 0's."""
    positions = np.maximum(np.arange(12)[None, :] - np.array([[0], [3]]), 0)  # (2, 12)
    batch = Batch(positions, positions > 0)
    assert rope_refresh_slot(SPEC, batch, prompt_len=4, max_len=12) == 8
    shifted = Batch(positions[::-1].copy(), None)
    assert rope_refresh_slot(SPEC, shifted, prompt_len=4, max_len=12) == 8


def test_other_specs_never_refresh() -> None:
    for spec in (SPEC.replace(rope_scaling=None),
                 SPEC.replace(rope_scaling={"type": "linear", "factor": 2.0})):
        assert rope_refresh_slot(spec, UNBATCHED, prompt_len=2, max_len=30) is None


def test_cached_generation_equals_recomputation_across_the_switch() -> None:
    weights = init_weights(SPEC, seed=0)
    request = GenerationRequest([[3, 1, 4, 1, 5]], max_new_tokens=10)
    cached = list(generate(SPEC, weights, request))
    uncached = list(generate(SPEC, weights, request, use_cache=False))
    assert [s.tokens.tolist() for s in cached] == [s.tokens.tolist() for s in uncached]
    for a, b in zip(cached, uncached):
        np.testing.assert_allclose(a.logits, b.logits, rtol=1e-4, atol=1e-5)
