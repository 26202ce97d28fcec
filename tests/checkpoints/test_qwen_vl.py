"""Qwen2.5-VL's language model (tfcli/checkpoints/families/qwen_vl.py): read from a flat
config.json (the published form) or from text_config (transformers 5's), M-RoPE read as the
1-D RoPE it is on text, head_dim ignored as Qwen2_5_VLAttention ignores it; a malformed
mrope_section is one line naming the file and field (exit 2, no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checkpoints.test_configs import write_config
from tfcli.checkpoints.configs import spec_from_config_dir

TEXT = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
        "rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]}}
FLAT = {"model_type": "qwen2_5_vl", "architectures": ["Qwen2_5_VLForConditionalGeneration"],
        "vision_config": {"depth": 1}, **TEXT}
NESTED = {"model_type": "qwen2_5_vl", "text_config": {"model_type": "qwen2_5_vl_text", **TEXT},
          "tie_word_embeddings": True}


@pytest.mark.parametrize(("config", "tied"), [(FLAT, False), (NESTED, True)])
def test_the_language_model_is_read(tmp_path: Path, config: dict, tied: bool) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, config))
    assert (spec.d_model, spec.n_layers, spec.kv_heads, spec.d_head) == (32, 2, 2, 8)
    assert spec.rope_scaling is None and spec.positions == "rope"
    assert (spec.attention_bias, spec.attention_out_bias, spec.tie_embeddings) == \
        (True, False, tied)
    assert "its language model and head only" in spec.description
    assert "not counted" in spec.description


def test_head_dim_is_ignored(tmp_path: Path) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, FLAT | {"head_dim": 16}))
    assert spec.d_head == 8


@pytest.mark.parametrize("sections", [[1, 1, 1], [0, 2, 2], "16,24,24", [1.5, 1, 1.5],
                                      [1] * 9, [True, 1, 2]])
def test_bad_sections_are_named(tmp_path: Path, invoke, sections: object) -> None:
    bad = FLAT | {"rope_scaling": {"type": "mrope", "mrope_section": sections}}
    result = invoke("params", str(write_config(tmp_path, bad)))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "config.json" in result.stderr
    assert "'rope_scaling.mrope_section'" in result.stderr and "sum to d_head / 2 = 4" in \
        result.stderr, result.stderr
