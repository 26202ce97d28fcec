"""Llama 4's spec fields (chunked_attention, nope_temperature_scale / _floor, qk_norm l2,
router_scales_input): each refused by name where it would mean nothing, the temperature within
float32's range; and what the engine does with each (the parity against transformers:
tests/parity/test_llama4_parity.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import VALID_SPEC
from tests.spec.spec_refusals import assert_field_refused
from tfcli.engine.attention import _temperature
from tfcli.engine.init import init_weights
from tfcli.engine.model import ModelInput, forward
from tfcli.spec.counts import total_parameters
from tfcli.spec.load import parse_spec_text

ROPE = VALID_SPEC + "positions: rope\n"
NOPE = ROPE + "nope_layers: [1]\n"
CHUNKED = ROPE + "sliding_window: 4\nlayer_pattern: [local]\nchunked_attention: true\n"
MOE = VALID_SPEC + "n_experts: 4\nexperts_per_token: 1\nactivation: swiglu\n"

BAD = [  # (YAML, field, message part)
    (ROPE + "chunked_attention: true\n", "chunked_attention", "needs family decoder and local"),
    (CHUNKED.replace("decoder", "encoder"), "chunked_attention", "family decoder"),
    (ROPE + "nope_temperature_scale: 0.1\n", "nope_temperature_scale", "needs nope_layers"),
    (NOPE + "nope_temperature_scale: 1e300\n", "nope_temperature_scale", "float32 constant"),
    (NOPE + "nope_temperature_scale: 0\n", "nope_temperature_scale", "greater than 0"),
    (NOPE + "nope_temperature_floor: 4\n", "nope_temperature_floor",
     "needs nope_temperature_scale"),
    (NOPE + "nope_temperature_scale: 0.1\nnope_temperature_floor: 0\n",
     "nope_temperature_floor", "greater than 0"),
    (VALID_SPEC + "router_scales_input: true\n", "router_scales_input", "needs n_experts"),
]


@pytest.mark.parametrize(("text", "field", "message"), BAD)
def test_a_bad_field_is_named(invoke, write_spec, text: str, field: str, message: str) -> None:
    assert_field_refused(invoke, write_spec, text, field, message)


def _logits(text: str, ids: np.ndarray) -> np.ndarray:
    spec = parse_spec_text(text)
    return forward(spec, init_weights(spec, seed=0), ModelInput(ids[None])).logits[0]


def test_a_chunk_sees_only_its_own_tokens() -> None:
    """One local layer over chunks of 4: a token in positions 0-3 moves the logits there and
    none at 4-7; a sliding window of 4 lets it reach position 4 too."""
    ids = np.arange(1, 9)
    changed = ids.copy()
    changed[2] = 60
    one_layer = CHUNKED.replace("n_layers: 2", "n_layers: 1")
    moved = np.abs(_logits(one_layer, ids) - _logits(one_layer, changed)).max(axis=-1)
    assert np.all(moved[2:4] > 1e-3) and np.all(moved[4:] == 0), moved
    window = one_layer.replace("chunked_attention: true\n", "")
    moved = np.abs(_logits(window, ids) - _logits(window, changed)).max(axis=-1)
    assert moved[4] > 1e-3 and np.all(moved[6:] == 0), moved


def test_the_temperature_is_its_formula() -> None:
    spec = parse_spec_text(NOPE + "nope_temperature_scale: 0.5\nnope_temperature_floor: 3\n")
    positions = np.array([[0, 1, 2, 5, 8, 100]])
    want = 1 + 0.5 * np.log(1 + np.floor((positions + 1) / 3))
    got = _temperature(spec, positions, np.dtype(np.float64))
    assert got.shape == (1, 1, 6, 1)
    np.testing.assert_allclose(got[0, 0, :, 0], want[0], rtol=1e-15)
    assert got[0, 0, 0, 0] == 1.0  # floor(1 / 3) = 0: the first positions are unscaled


def test_the_temperature_changes_only_the_nope_layers() -> None:
    """A temperature on layer 1's queries moves the logits past position 0; one whose steps
    never start (floor past every position) moves nothing."""
    ids = np.arange(1, 9)
    plain = _logits(NOPE, ids)
    tuned = _logits(NOPE + "nope_temperature_scale: 2\nnope_temperature_floor: 2\n", ids)
    idle = _logits(NOPE + "nope_temperature_scale: 2\nnope_temperature_floor: 64\n", ids)
    assert np.abs(tuned[1:] - plain[1:]).max() > 1e-5  # random weights: small scores
    np.testing.assert_array_equal(tuned[0], plain[0])  # floor(1 / 2) = 0: position 0 unscaled
    np.testing.assert_array_equal(idle, plain)


def test_the_l2_norm_has_no_weights_and_unit_rms_heads() -> None:
    l2 = parse_spec_text(ROPE + "qk_norm: l2\nnorm: none\n")
    assert total_parameters(l2) == total_parameters(parse_spec_text(ROPE + "norm: none\n"))
    from tfcli.engine.attention import _self_qkv
    from tfcli.engine.init import init_weights
    spec = l2.replace(n_layers=1)
    w = init_weights(spec, seed=0).decoder.blocks[0].attn
    x = np.random.default_rng(0).normal(size=(2, 3, spec.d_model)) * 1000  # eps negligible
    normed, _, _ = _self_qkv(spec, w, x)  # (B, H, T, dh)
    np.testing.assert_allclose(np.sqrt(np.mean(normed ** 2, axis=-1)), 1, rtol=1e-6)


def test_the_routed_weight_scales_the_experts_input() -> None:
    """expert(w x) against w expert(x): a SwiGLU is not homogeneous, so the two differ."""
    ids = np.arange(1, 9)
    scaled = _logits(MOE + "router_scales_input: true\nrouter_scoring: sigmoid\n"
                     "norm_topk_prob: false\n", ids)
    outside = _logits(MOE + "router_scoring: sigmoid\nnorm_topk_prob: false\n", ids)
    assert np.abs(scaled - outside).max() > 1e-4
