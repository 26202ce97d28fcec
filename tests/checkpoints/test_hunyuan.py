"""Hunyuan dense's reader (tfcli/checkpoints/families/hunyuan.py): q/k norms after RoPE, the
published `dynamic` RoPE scaling with an `alpha` read as NTK-alpha's fixed base (from
rope_scaling or transformers 5's rope_parameters); a malformed alpha is one line naming the
file and field (exit 2, no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checkpoints.test_configs import write_config
from tfcli.checkpoints.configs import spec_from_config_dir

CONFIG = {"model_type": "hunyuan_v1_dense", "architectures": ["HunYuanDenseV1ForCausalLM"],
          "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
          "rope_theta": 10000.0, "attention_bias": True}
ALPHA = {"type": "dynamic", "alpha": 50.0, "factor": 1.0, "beta_fast": 32, "beta_slow": 1}


@pytest.mark.parametrize("extra", [
    {"rope_scaling": ALPHA},  # the published spelling
    {"rope_parameters": {"rope_type": "dynamic", "alpha": 50.0, "factor": 1.0,
                         "rope_theta": 10000.0}},  # transformers 5's saved one
])
def test_ntk_alpha_is_a_fixed_base(tmp_path: Path, extra: dict) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, CONFIG | extra))
    assert spec.rope_theta == pytest.approx(10000.0 * 50.0 ** (8 / 6), rel=1e-15)
    assert spec.rope_scaling is None and spec.max_seq_len == 2048
    assert (spec.qk_norm, spec.qk_norm_after_rope, spec.ffn_bias) == ("per_head", True, False)
    assert (spec.attention_bias, spec.attention_out_bias) == (True, True)


def test_dynamic_without_alpha_is_dynamic_ntk(tmp_path: Path) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, CONFIG | {
        "rope_scaling": {"type": "dynamic", "factor": 2.0}}))
    assert spec.rope_scaling is not None and spec.rope_scaling.type == "dynamic"
    assert spec.rope_theta == 10000.0


@pytest.mark.parametrize(("extra", "named"), [
    ({"rope_scaling": ALPHA | {"alpha": -1.0}}, "'rope_scaling.alpha'"),
    ({"rope_scaling": ALPHA | {"alpha": "fifty"}}, "'rope_scaling.alpha'"),
    ({"rope_scaling": ALPHA, "head_dim": 2}, "'head_dim'"),
    ({"rope_scaling": ALPHA | {"alpha": 1e300}, "head_dim": 4}, "past any float"),
])
def test_bad_fields_are_named(tmp_path: Path, invoke, extra: dict, named: str) -> None:
    result = invoke("params", str(write_config(tmp_path, CONFIG | extra)))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "config.json" in result.stderr
    assert named in result.stderr, result.stderr
