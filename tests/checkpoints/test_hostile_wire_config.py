"""The falcon and olmo2 readers on hostile config.json values: any JSON in the keys they read
ends in a spec or in one short BadInputError, never another exception (the property tests of
test_hostile_config.py, over a small Falcon and OLMo 2 base)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.checkpoints.hostile import only_bad_input
from tfcli.checkpoints.families import falcon, olmo2
from tfcli.checkpoints.fields import MAX_SIZE
from tfcli.spec.model import Spec

FALCON = {"model_type": "falcon", "architectures": ["FalconForCausalLM"], "hidden_size": 16,
          "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 50,
          "new_decoder_architecture": True, "num_kv_heads": 2}
OLMO2 = {"model_type": "olmo2", "architectures": ["Olmo2ForCausalLM"], "hidden_size": 16,
         "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 2,
         "intermediate_size": 32, "vocab_size": 50}
EXTRA = {"n_embed", "rope_parameters", "rope_scaling", "partial_rotary_factor", "head_dim"}
SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(-3, 70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12)
           | st.sampled_from(["gelu", "silu", "relu", "linear", "dynamic", "default"]))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5)
                    | st.dictionaries(st.text(max_size=6) | st.sampled_from(["rope_type", "factor"]),
                                      inner, max_size=4), max_leaves=10)


def _heads_in_whole_groups(spec: Spec) -> None:
    assert spec.n_layers <= MAX_SIZE and spec.n_heads % spec.kv_heads == 0


@settings(max_examples=400, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(fields=st.dictionaries(st.sampled_from(sorted(set(falcon.DEFAULTS) | EXTRA)), JSON,
                              min_size=1, max_size=4))
def test_any_json_in_the_keys_falcon_reads(fields: dict) -> None:
    for base in (FALCON, FALCON | {"new_decoder_architecture": False}):
        only_bad_input(base | fields, _heads_in_whole_groups)


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(fields=st.dictionaries(st.sampled_from(sorted(set(olmo2.DEFAULTS) | EXTRA)), JSON,
                              min_size=1, max_size=4))
def test_any_json_in_the_keys_olmo2_reads(fields: dict) -> None:
    only_bad_input(OLMO2 | fields, _heads_in_whole_groups)
