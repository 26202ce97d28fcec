"""init_weights allocates exactly the parameters tfcli.spec.counts counts."""

from __future__ import annotations

import numpy as np
import pytest
from tests.engine.engine_specs import VARIANTS, make_spec

from tfcli.spec.counts import total_parameters
from tfcli.engine.init import init_weights
from tfcli.engine.weights import count_parameters
from tfcli.sources import load_spec

BUNDLED_SMALL = ["lesson-tiny", "t5-small", "transformer-base", "bert-base", "gpt2"]


@pytest.mark.parametrize("name", BUNDLED_SMALL)
def test_bundled_spec_allocates_its_analytic_total(name):
    spec = load_spec(name)
    weights = init_weights(spec, seed=0, dtype=np.float32)
    assert count_parameters(weights, spec) == total_parameters(spec)


@pytest.mark.parametrize(
    "variant, changes",
    [(v, {}) for v in VARIANTS]
    + [
        ("gpt", {"tie_embeddings": False}),  # untied head
        ("gpt", {"norm": "layernorm_noaffine"}),
        ("gpt", {"norm": "none", "final_norm": False}),
        ("llama_gqa", {"n_kv_heads": 1}),  # MQA + RoPE
        ("moe", {"n_experts": 8, "experts_per_token": 1, "activation": "gelu", "bias": True}),
        ("t5", {"tie_embeddings": False, "tied_head_rescale": False}),
        ("gpt", {"d_head": 12}),  # d_head != d_model / n_heads
    ],
)
def test_small_variant_allocates_its_analytic_total(variant, changes):
    spec = make_spec(variant, **changes)
    assert count_parameters(init_weights(spec, seed=1), spec) == total_parameters(spec)
