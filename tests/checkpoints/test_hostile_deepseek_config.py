"""The deepseek_v2 / deepseek_v3 readers on hostile config.json values: wrong types, negatives,
huge values and the combinations transformers cannot build (key/value heads apart from the
query heads, an unknown topk_method, groups that do not divide the experts) each end in one
short message naming config.json and the key, exit 2, no traceback; any JSON in the keys they
read ends in a spec or in one BadInputError (the property test of test_hostile_config.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.checkpoints.hostile import only_bad_input
from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.families.deepseek import DEEPSEEK_V2_DEFAULTS, DEEPSEEK_V3_DEFAULTS
from tfcli.spec.model import Spec

SMALL = {"hidden_size": 16, "num_attention_heads": 2, "num_key_value_heads": 2,
         "num_hidden_layers": 3, "intermediate_size": 32, "vocab_size": 50,
         "max_position_embeddings": 64, "n_routed_experts": 4, "num_experts_per_tok": 2,
         "moe_intermediate_size": 8, "kv_lora_rank": 8, "q_lora_rank": 12,
         "qk_nope_head_dim": 4, "qk_rope_head_dim": 4, "v_head_dim": 4, "n_shared_experts": 1,
         "first_k_dense_replace": 1}
V2 = SMALL | {"model_type": "deepseek_v2", "architectures": ["DeepseekV2ForCausalLM"],
              "topk_method": "group_limited_greedy", "n_group": 2, "topk_group": 1}
V3 = SMALL | {"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"],
              "n_group": 2, "topk_group": 1}
BASES = {"v2": V2, "v3": V3}

# (base, changes, the key the message must name)
HOSTILE = [
    ("v2", {"hidden_size": "16"}, "hidden_size"),
    ("v3", {"kv_lora_rank": 8.5}, "kv_lora_rank"),
    ("v2", {"q_lora_rank": "big"}, "q_lora_rank"),
    ("v3", {"rope_interleave": "yes"}, "rope_interleave"),
    ("v3", {"norm_topk_prob": 1}, "norm_topk_prob"),
    ("v2", {"first_k_dense_replace": -1}, "first_k_dense_replace"),
    ("v3", {"n_shared_experts": -2}, "n_shared_experts"),
    ("v3", {"n_shared_experts": None}, "n_shared_experts"),
    ("v2", {"qk_rope_head_dim": -4}, "qk_rope_head_dim"),
    ("v3", {"qk_rope_head_dim": 5}, "qk_rope_head_dim"),
    ("v2", {"v_head_dim": 0}, "v_head_dim"),
    ("v3", {"routed_scaling_factor": -1.0}, "routed_scaling_factor"),
    ("v3", {"routed_scaling_factor": 1e9}, "routed_scaling_factor"),
    ("v3", {"num_nextn_predict_layers": -1}, "num_nextn_predict_layers"),
    ("v2", {"n_routed_experts": 10**30}, "n_routed_experts"),
    ("v3", {"kv_lora_rank": 2**31}, "kv_lora_rank"),
    ("v3", {"num_hidden_layers": 10**6, "first_k_dense_replace": 5000}, "first_k_dense_replace"),
    ("v2", {"num_key_value_heads": 1}, "num_key_value_heads"),
    ("v3", {"num_key_value_heads": 128}, "num_key_value_heads"),  # DeepseekV3Config's default
    ("v2", {"topk_method": "noaux_tc"}, "topk_method"),
    ("v2", {"topk_method": None}, "topk_method"),
    ("v2", {"n_group": 3}, "n_group"),
    ("v3", {"n_group": 3}, "n_group"),
    ("v3", {"n_group": None}, "n_group"),
    ("v3", {"n_group": 4}, "n_group"),  # 1 expert per group: V3 scores a group by its best two
    ("v3", {"topk_group": 0}, "topk_group"),
    ("v2", {"topk_group": 3}, "topk_group"),
    ("v3", {"num_experts_per_tok": 3}, "num_experts_per_tok"),  # more than 1 group of 2 holds
    ("v2", {"num_experts_per_tok": 0}, "num_experts_per_tok"),
    ("v3", {"num_experts_per_tok": 9}, "num_experts_per_tok"),
    ("v2", {"mlp_bias": True}, "mlp_bias"),
    ("v3", {"hidden_act": "gelu"}, "hidden_act"),
]


@pytest.mark.parametrize(("base", "changes", "key"), HOSTILE,
                         ids=[f"{b}-{k}-{i}" for i, (b, _, k) in enumerate(HOSTILE)])
def test_each_hostile_value_is_one_message_naming_the_key(invoke, tmp_path: Path, base: str,
                                                          changes: dict, key: str) -> None:
    (tmp_path / "config.json").write_text(json.dumps(BASES[base] | changes))
    result = invoke("import-config", str(tmp_path))
    assert result.exit_code == 2, result.output
    text = "".join(result.output.split())  # the message wrapped to the terminal, rejoined
    assert "Traceback" not in result.output
    assert "config.json" in text and key in text, result.output


@pytest.mark.parametrize("base", list(BASES))
def test_the_bases_are_valid(base: str) -> None:
    """The hostile values above are what makes each config fail, not the base."""
    assert spec_from_config(BASES[base], "x").group_limited


def _latent_with_moe_layers(spec: Spec) -> None:
    assert spec.latent_attention and spec.moe_layer_count(spec.n_layers) >= (
        1 if spec.n_experts else 0)


FIELDS = sorted(set(DEEPSEEK_V2_DEFAULTS) | set(DEEPSEEK_V3_DEFAULTS)
                | {"num_experts", "num_local_experts", "scoring_func", "num_mtp_layers"})
SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(-3, 8)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5), max_leaves=10)


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(fields=st.dictionaries(st.sampled_from(FIELDS), JSON, min_size=1, max_size=4))
def test_any_json_in_the_keys_deepseek_reads(fields: dict) -> None:
    for base in BASES.values():
        only_bad_input(base | fields, _latent_with_moe_layers)
