"""The Spec model itself: checks that hold however a Spec is built (YAML, config.json, replace)."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from tests.conftest import VALID_SPEC
from tfcli.spec.model import Spec
from tfcli.spec.load import parse_spec_text

# Every float field, found from the model so that a new one is covered without editing this list.
FLOAT_FIELDS = [name for name, field in Spec.model_fields.items()
                if field.annotation in (float, float | None)]


def test_the_float_fields_are_found() -> None:
    assert {"norm_eps", "rope_theta", "attention_scale", "init_std"} <= set(FLOAT_FIELDS)


@pytest.mark.parametrize("field", FLOAT_FIELDS)
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_every_float_field_must_be_finite(field: str, value: float) -> None:
    spec = parse_spec_text(VALID_SPEC)
    with pytest.raises(ValidationError) as info:
        spec.replace(**{field: value})
    assert [(e["loc"], e["type"]) for e in info.value.errors()] == [((field,), "finite_number")]


# Fields with a documented range of their own (tfcli.spec.model._check_scales, tested in
# tests/analysis/run/test_nonfinite.py; tfcli.spec.moe.ROUTED_SCALE_RANGE; Granite's multipliers,
# float32 constants: tests/spec/test_multipliers.py; gpt-oss's swiglu_limit and swiglu_alpha,
# likewise: tests/spec/test_gpt_oss_fields.py; Llama 4's nope_temperature_scale:
# tests/spec/test_llama4_fields.py): there, 1e300 is refused.
RANGED_FIELDS = {"norm_eps", "init_std", "latent_norm_eps", "routed_scaling_factor",
                 "embedding_multiplier", "residual_multiplier", "logits_scaling", "swiglu_limit",
                 "swiglu_alpha", "router_jitter",  # router_jitter: at most 1 (a relative gap)
                 "nope_temperature_scale"}


# Fields that mean something only beside others (tfcli.spec.model._check_gemma): set with those.
COMPANIONS: dict[str, dict[str, object]] = {
    "rope_local_theta": {"positions": "rope", "sliding_window": 8,
                         "layer_pattern": ["local", "global"]},
}


@pytest.mark.parametrize("field", [f for f in FLOAT_FIELDS if f not in RANGED_FIELDS])
def test_large_finite_floats_are_still_accepted(field: str) -> None:
    changes = COMPANIONS.get(field, {}) | {field: 1e300}
    assert getattr(parse_spec_text(VALID_SPEC).replace(**changes), field) == 1e300
