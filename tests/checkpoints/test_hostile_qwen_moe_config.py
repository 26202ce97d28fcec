"""The qwen2_moe / qwen3_moe readers on hostile config.json values: any JSON in the keys they
read ends in a spec or in one short BadInputError, never another exception (the property tests
of test_hostile_config.py, over small Qwen MoE bases)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.checkpoints.hostile import only_bad_input
from tfcli.checkpoints.families.qwen_moe import QWEN2_MOE_DEFAULTS, QWEN3_MOE_DEFAULTS
from tfcli.spec.model import Spec

SMALL = {"hidden_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1,
         "num_hidden_layers": 4, "intermediate_size": 32, "vocab_size": 50,
         "max_position_embeddings": 64, "num_experts": 4, "num_experts_per_tok": 2,
         "moe_intermediate_size": 8}
BASES = [SMALL | {"model_type": "qwen2_moe", "architectures": ["Qwen2MoeForCausalLM"],
                  "shared_expert_intermediate_size": 24},
         SMALL | {"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"]}]
FIELDS = sorted(set(QWEN2_MOE_DEFAULTS) | set(QWEN3_MOE_DEFAULTS) | {"num_local_experts"})
SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(-3, 8)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5), max_leaves=10)


def _moe_layers_when_experts(spec: Spec) -> None:
    assert spec.moe_layer_count(spec.n_layers) >= (1 if spec.n_experts else 0)


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(fields=st.dictionaries(st.sampled_from(FIELDS), JSON, min_size=1, max_size=4))
def test_any_json_in_the_keys_qwen_moe_reads(fields: dict) -> None:
    for base in BASES:
        only_bad_input(base | fields, _moe_layers_when_experts)
