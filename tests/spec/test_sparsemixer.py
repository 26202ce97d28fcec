"""Phi-3.5-MoE's sparsemixer routing in a spec: what it needs (two experts, no renormalisation,
no groups) and router_jitter, each refused by name where it would mean nothing."""

from __future__ import annotations

import pytest

from tests.conftest import VALID_SPEC
from tests.spec.spec_refusals import assert_field_refused
from tfcli.spec.load import parse_spec_text

MOE = VALID_SPEC + ("activation: swiglu\nn_experts: 4\nexperts_per_token: 2\n"
                    "router_scoring: sparsemixer\nnorm_topk_prob: false\n")


def test_a_sparsemixer_spec_parses() -> None:
    spec = parse_spec_text(MOE + "router_jitter: 0.1\n")
    assert (spec.router_scoring, spec.router_jitter) == ("sparsemixer", 0.1)


@pytest.mark.parametrize(("text", "field", "message"), [
    (MOE + "experts_per_token: 3\n", "router_scoring", "picks exactly 2 experts"),
    (MOE + "norm_topk_prob: true\n", "router_scoring", "norm_topk_prob false"),
    (VALID_SPEC + "router_jitter: 0.1\n", "router_jitter", "needs router_scoring: sparsemixer"),
    (MOE + "router_jitter: 2\n", "router_jitter", "less than or equal to 1"),
])
def test_a_bad_field_is_named(invoke, write_spec, text: str, field: str, message: str) -> None:
    assert_field_refused(invoke, write_spec, text, field, message)
