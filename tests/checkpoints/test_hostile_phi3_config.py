"""The phi3 reader on hostile config.json values: any JSON in the keys it reads (its RoPE
objects and their keys included) ends in a spec or in one short BadInputError, never another
exception (the property tests of test_hostile_config.py, over a Phi-3 base)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.checkpoints.hostile import only_bad_input
from tfcli.checkpoints.families.phi3 import DEFAULTS
from tfcli.checkpoints.fields import MAX_SIZE
from tfcli.spec.model import Spec

BASE = {"model_type": "phi3", "architectures": ["Phi3ForCausalLM"], "hidden_size": 16,
        "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 2,
        "intermediate_size": 32, "vocab_size": 50, "max_position_embeddings": 64,
        "original_max_position_embeddings": 16, "sliding_window": 8}
LONGROPE = {"type": "longrope", "short_factor": [1.0, 1.5, 2.0, 3.0],
            "long_factor": [1.0, 2.0, 4.0, 8.0]}
ROPE_KEYS = ["type", "rope_type", "short_factor", "long_factor", "factor", "attention_factor",
             "original_max_position_embeddings", "rope_theta", "partial_rotary_factor"]
FIELDS = sorted(set(DEFAULTS) | set(ROPE_KEYS) | {"rope_scaling", "rope_parameters"})
SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(-3, 70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12)
           | st.sampled_from(["longrope", "su", "yarn", "default", "linear", "silu"]))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5)
                    | st.dictionaries(st.sampled_from(ROPE_KEYS) | st.text(max_size=6), inner,
                                      max_size=4), max_leaves=10)
BASES = [BASE, BASE | {"rope_scaling": LONGROPE}, BASE | {"rope_parameters": LONGROPE}]


def _rotary_within_the_head(spec: Spec) -> None:
    assert spec.n_layers <= MAX_SIZE and spec.rotary_width <= spec.head_dim


@settings(max_examples=400, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(fields=st.dictionaries(st.sampled_from(FIELDS), JSON, min_size=1, max_size=4))
def test_any_json_in_the_keys_phi3_reads(fields: dict) -> None:
    for base in BASES:
        only_bad_input(base | fields, _rotary_within_the_head)


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(rope=st.dictionaries(st.sampled_from(ROPE_KEYS), JSON, max_size=5))
def test_any_rope_object(rope: dict) -> None:
    for key in ("rope_scaling", "rope_parameters"):
        only_bad_input(BASE | {key: LONGROPE | rope}, _rotary_within_the_head)
