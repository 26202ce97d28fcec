"""gpt-oss's spec fields (attention_sinks, activation swiglu_clamped with swiglu_limit and
swiglu_alpha, router_logits_bias): each refused by name where it would mean nothing, the
clamp's constants within float32's range; and what the engine does with each, on one set of
weights (the parity against transformers: tests/parity/test_gpt_oss_parity.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import VALID_SPEC
from tests.spec.spec_refusals import assert_field_refused
from tfcli.engine.ffn import gate_
from tfcli.engine.init import init_weights
from tfcli.engine.model import forward
from tfcli.engine.ops import softmax, softmax_sink_
from tfcli.spec.load import parse_spec_text

CLAMPED = VALID_SPEC + "activation: swiglu_clamped\n"
MOE = VALID_SPEC + "n_experts: 4\nexperts_per_token: 2\nactivation: swiglu\n"

BAD = [  # (YAML, field, message part)
    (VALID_SPEC + "swiglu_limit: 3\n", "swiglu_limit", "needs activation: swiglu_clamped"),
    (VALID_SPEC + "swiglu_alpha: 2\n", "swiglu_alpha", "needs activation: swiglu_clamped"),
    (CLAMPED + "swiglu_limit: 1e300\n", "swiglu_limit", "float32 constant"),
    (CLAMPED + "swiglu_alpha: 0\n", "swiglu_alpha", "greater than 0"),
    (VALID_SPEC.replace("decoder", "encoder") + "attention_sinks: true\n", "attention_sinks",
     "family decoder"),
    (VALID_SPEC + "router_logits_bias: true\n", "router_logits_bias", "needs n_experts"),
    (MOE + "router_logits_bias: true\nrouter_scoring: sigmoid\n", "router_logits_bias",
     "router_scoring: softmax"),
]


@pytest.mark.parametrize(("text", "field", "message"), BAD)
def test_a_bad_field_is_named(invoke, write_spec, text: str, field: str, message: str) -> None:
    assert_field_refused(invoke, write_spec, text, field, message)


def test_the_clamped_swiglu_is_its_formula() -> None:
    spec = parse_spec_text(CLAMPED + "swiglu_limit: 1.5\n")
    rng = np.random.default_rng(0)
    gate, up = rng.normal(0, 2, (8, 32)), rng.normal(0, 2, (8, 32))
    g = np.minimum(gate, 1.5)
    want = (np.clip(up, -1.5, 1.5) + 1) * g / (1 + np.exp(-1.702 * g))
    np.testing.assert_allclose(gate_(spec, gate.copy(), up.copy()), want, rtol=1e-12)
    very_negative = gate_(spec, np.full((1, 2), -1e4), np.ones((1, 2)))  # exp overflows: 0
    assert np.all(very_negative == 0)


def test_a_sink_takes_mass_and_a_very_low_one_none() -> None:
    scores = np.random.default_rng(1).normal(size=(2, 3, 5))
    sink = np.array([0.5, -1e4])[:, None, None]  # head 0 a real sink, head 1 none
    probs = softmax_sink_(scores.copy(), sink)
    want0 = np.exp(scores[0]) / (np.exp(scores[0]).sum(-1, keepdims=True) + np.exp(0.5))
    np.testing.assert_allclose(probs[0], want0, rtol=1e-12)
    np.testing.assert_allclose(probs[1], softmax(scores[1]), rtol=1e-12)
    masked = softmax_sink_(np.full((1, 4), -np.inf), np.zeros((1, 1)))  # all keys hidden
    assert np.all(masked == 0)


def test_sinks_and_the_router_bias_move_the_logits() -> None:
    base = parse_spec_text(MOE.replace("swiglu", "swiglu_clamped") + "attention_sinks: true\n"
                           "router_logits_bias: true\nffn_bias: true\n")
    weights = init_weights(base, 0, np.float64)
    tokens = np.array([[3, 1, 4, 1, 5, 9]])
    plain = forward(base, weights, tokens).logits
    for block in weights.decoder.blocks:
        block.attn.sinks[:] = 2.0  # a sink now outweighs the keys
    sunk = forward(base, weights, tokens).logits
    assert np.abs(sunk - plain).max() > 1e-3 * np.abs(plain).max()
    for block in weights.decoder.blocks:
        block.ffn.router_b[:] = [5.0, 0, 0, -5.0]  # expert 0 always chosen, 3 never
    routed = forward(base, weights, tokens).logits
    assert np.abs(routed - sunk).max() > 1e-3 * np.abs(sunk).max()
