"""Granite's scalar multipliers (embedding_multiplier, residual_multiplier, logits_scaling): the
default changes nothing, and each is refused by name where it would not mean Granite's x*m."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import VALID_SPEC
from tests.spec.spec_refusals import assert_field_refused
from tests.engine.engine_specs import make_spec
from tfcli.engine.init import init_weights
from tfcli.engine.model import forward
from tfcli.spec.load import parse_spec_text

PRE = VALID_SPEC + "norm_placement: pre\n"


def test_defaults_are_none_and_valid_values_parse() -> None:
    spec = parse_spec_text(PRE)
    assert (spec.embedding_multiplier, spec.residual_multiplier, spec.logits_scaling) == \
        (None, None, None)
    spec = parse_spec_text(PRE + "embedding_multiplier: 12\nresidual_multiplier: 0.22\n"
                                 "logits_scaling: 16\n")
    assert (spec.embedding_multiplier, spec.residual_multiplier, spec.logits_scaling) == \
        (12.0, 0.22, 16.0)


BAD = [  # (YAML, field, message part)
    (PRE + "embedding_multiplier: 0\n", "embedding_multiplier", "greater than 0"),
    (PRE + "embedding_multiplier: 2\nscale_embeddings: true\n", "embedding_multiplier",
     "set one"),
    (VALID_SPEC + "norm_placement: post\nresidual_multiplier: 0.5\n", "residual_multiplier",
     "norm_placement: pre"),
    (PRE + "parallel_residual: one_norm\nresidual_multiplier: 0.5\n", "residual_multiplier",
     "parallel_residual"),
    (PRE + "lm_head: false\nlogits_scaling: 4\n", "logits_scaling", "needs lm_head"),
    (PRE + "logits_scaling: -1\n", "logits_scaling", "greater than 0"),
    (PRE + "residual_multiplier: 1e308\n", "residual_multiplier", "float32 constant"),
    (PRE + "embedding_multiplier: 1e-320\n", "embedding_multiplier", "float32 constant"),
]


@pytest.mark.parametrize(("text", "field", "message"), BAD)
def test_a_bad_multiplier_names_the_field(invoke, write_spec, text: str, field: str,
                                          message: str) -> None:
    assert_field_refused(invoke, write_spec, text, field, message)


def test_each_multiplier_is_what_the_engine_does() -> None:
    """On one set of weights of a 1-block model: logits_scaling divides the logits exactly; a
    multiplier of 1 changes nothing and one of 3 moves the logits (the parity against
    transformers is tests/parity/test_granite_parity.py)."""
    base = make_spec("llama_gqa", n_layers=1)
    weights = init_weights(base, 0, np.float64)
    tokens = np.array([[3, 1, 4, 1, 5]])
    plain = forward(base, weights, tokens).logits
    scaled = forward(base.replace(logits_scaling=4.0), weights, tokens).logits
    np.testing.assert_allclose(scaled, plain / 4.0, rtol=1e-12)
    # a residual multiplier of 1 or an embedding multiplier of 1 changes nothing
    for field in ("residual_multiplier", "embedding_multiplier"):
        same = forward(base.replace(**{field: 1.0}), weights, tokens).logits
        np.testing.assert_allclose(same, plain, rtol=1e-12)
        moved = forward(base.replace(**{field: 3.0}), weights, tokens).logits
        assert np.abs(moved - plain).max() > 1e-3 * np.abs(plain).max()
