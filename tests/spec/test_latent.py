"""Multi-head latent attention and DeepSeek routing fields: what they derive, the combinations
refused (one SpecConsistencyError naming the field; through the CLI exit 2 with file, line and
field), and a round trip through the minimal YAML import-config writes."""

from __future__ import annotations

import math

import pytest

from tests.engine.engine_specs import make_spec
from tfcli.checkpoints.export import minimal_fields, spec_to_yaml
from tfcli.core.errors import SpecConsistencyError
from tfcli.spec.load import parse_spec_text
from tfcli.sources import load_spec


def test_latent_widths_are_derived() -> None:
    spec = make_spec("deepseek_v3")  # nope 6 + rope 4, v 5, 4 heads
    assert (spec.head_dim, spec.rotary_width, spec.kv_heads, spec.value_dim) == (10, 4, 4, 5)
    assert spec.latent_attention and spec.group_limited
    mscale = 0.1 * 1.0 * math.log(4.0) + 1.0  # yarn factor 4, mscale_all_dim 1
    assert spec.scale == pytest.approx(10 ** -0.5 * mscale ** 2, rel=1e-15)
    plain = make_spec("deepseek_v2")  # no rope_scaling: no correction
    assert plain.scale == pytest.approx(16 ** -0.5, rel=1e-15)
    assert not make_spec("llama_gqa").latent_attention


def test_deepseek_v3_scale_is_transformers() -> None:
    """(0.1 ln 40 + 1)^2 / sqrt(192), transformers' yarn_apply_mscale for DeepSeek-V3."""
    spec = load_spec("deepseek-v3")
    assert spec.scale == pytest.approx((0.1 * math.log(40) + 1) ** 2 / math.sqrt(192), rel=1e-15)


BAD = [  # (changes to the deepseek_v3 variant, field, message part)
    ({"qk_rope_head_dim": 3}, "qk_rope_head_dim", "even"),
    ({"v_head_dim": None}, "v_head_dim", "required with kv_lora_rank"),
    ({"d_head": 8}, "d_head", "derives it from"),
    ({"rotary_dim": 2}, "rotary_dim", "derives it from"),
    ({"n_kv_heads": 2}, "n_kv_heads", "derives it from"),
    ({"qk_norm": "per_head"}, "qk_norm", "latent"),
    ({"positions": "learned", "rope_scaling": None, "rope_pairing": "half"}, "kv_lora_rank", "rope"),
    ({"kv_lora_rank": None}, "q_lora_rank", "needs kv_lora_rank"),
    ({"router_scoring": "sparsemixer", "experts_per_token": 2, "norm_topk_prob": False},
     "router_bias", "softmax or sigmoid"),
    ({"expert_groups": 3}, "expert_groups", "does not divide"),
    ({"topk_groups": 5}, "topk_groups", "exceeds expert_groups"),
    ({"topk_groups": 1, "experts_per_token": 3}, "experts_per_token", "exceeds"),
    ({"expert_groups": 8, "topk_groups": 4}, "group_score", "at least 2 experts"),
    ({"topk_groups": None}, "expert_groups", "needs topk_groups"),
    ({"routed_scaling_factor": 1e9}, "routed_scaling_factor", "must lie in"),
    ({"latent_norm_eps": 0.0}, "latent_norm_eps", "greater than 0"),
]


@pytest.mark.parametrize(("changes", "field", "message"), BAD)
def test_bad_combinations_name_the_field(changes: dict, field: str, message: str) -> None:
    with pytest.raises((SpecConsistencyError, ValueError)) as info:
        make_spec("deepseek_v3", **changes)
    assert field in str(info.value) and message in str(info.value)


@pytest.mark.parametrize("field", ["router_scoring", "routed_scaling_factor", "topk_groups"])
def test_routing_fields_need_experts(field: str) -> None:
    value = {"router_scoring": "sigmoid", "routed_scaling_factor": 2.0, "topk_groups": 1}[field]
    with pytest.raises(SpecConsistencyError) as info:
        make_spec("llama_gqa", **{field: value})
    assert info.value.field == field and "needs n_experts" in info.value.detail


def test_a_bad_latent_field_in_yaml_names_file_line_and_field(invoke, write_spec) -> None:
    text = spec_to_yaml(make_spec("deepseek_v3")).replace("qk_rope_head_dim: 4", "qk_rope_head_dim: 5")
    path = write_spec(text)
    result = invoke("params", str(path))
    assert result.exit_code == 2 and "Traceback" not in result.output
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.startswith("qk_rope_head_dim"))
    assert f"{path}:{line}:" in result.stderr and "'qk_rope_head_dim'" in result.stderr


@pytest.mark.parametrize("spec", [make_spec("deepseek_v3"), make_spec("deepseek_v2"),
                                  load_spec("deepseek-v3"), load_spec("deepseek-v2-lite")],
                         ids=["v3", "v2", "deepseek-v3", "deepseek-v2-lite"])
def test_latent_specs_round_trip_without_derived_widths(spec) -> None:
    fields = minimal_fields(spec)
    assert not {"d_head", "rotary_dim", "n_kv_heads"} & set(fields)
    assert parse_spec_text(spec_to_yaml(spec)) == spec
