"""Granite's reader (tfcli/checkpoints/families/granite.py): LLaMA's fields with the four
multipliers (1 leaves the field out), attention_multiplier as the score scale; a bad multiplier
is one line naming the file and field (exit 2, no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checkpoints.test_configs import write_config
from tfcli.checkpoints.configs import spec_from_config_dir

CONFIG = {"model_type": "granite", "architectures": ["GraniteForCausalLM"], "vocab_size": 64,
          "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
          "embedding_multiplier": 12.0, "attention_multiplier": 0.125,
          "residual_multiplier": 0.22, "logits_scaling": 16.0}


def test_the_multipliers_are_read(tmp_path: Path) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, CONFIG))
    assert (spec.embedding_multiplier, spec.attention_scale, spec.residual_multiplier,
            spec.logits_scaling) == (12.0, 0.125, 0.22, 16.0)
    assert (spec.positions, spec.norm, spec.activation, spec.kv_heads) == \
        ("rope", "rmsnorm", "swiglu", 2)


def test_granite_config_defaults_leave_the_fields_out(tmp_path: Path) -> None:
    config = {k: v for k, v in CONFIG.items() if not k.endswith(("multiplier", "scaling"))}
    spec = spec_from_config_dir(write_config(tmp_path, config))
    assert (spec.embedding_multiplier, spec.residual_multiplier, spec.logits_scaling) == \
        (None, None, None)
    assert spec.attention_scale == 1.0  # GraniteConfig's attention_multiplier default


def test_the_bare_model_has_no_logits_to_scale(tmp_path: Path) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, CONFIG | {"architectures": ["GraniteModel"]}))
    assert not spec.lm_head and spec.logits_scaling is None


@pytest.mark.parametrize(("key", "value", "problem"), [
    ("residual_multiplier", 0, "positive"),
    ("embedding_multiplier", "twelve", "expected a number"),
    ("attention_multiplier", -1.0, "positive"),
    ("logits_scaling", float("inf"), "finite"),
])
def test_bad_multipliers_are_named(tmp_path: Path, invoke, key: str, value: object,
                                   problem: str) -> None:
    result = invoke("params", str(write_config(tmp_path, CONFIG | {key: value})))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "config.json" in result.stderr
    assert f"'{key}'" in result.stderr and problem in result.stderr, result.stderr
