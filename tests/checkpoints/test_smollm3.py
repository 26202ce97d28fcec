"""SmolLM3's reader (tfcli/checkpoints/families/smollm3.py): NoPE layers from no_rope_layers or
its interval, LLaMA's fields otherwise; a malformed flag list or a sliding window is one line
naming the file and field (exit 2, no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checkpoints.test_configs import write_config
from tfcli.checkpoints.configs import spec_from_config_dir

CONFIG = {"model_type": "smollm3", "architectures": ["SmolLM3ForCausalLM"], "vocab_size": 64,
          "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 8,
          "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64}


@pytest.mark.parametrize(("extra", "nope"), [
    ({}, [3, 7]),  # SmolLM3Config: every no_rope_layer_interval-th layer, interval 4
    ({"no_rope_layer_interval": 3}, [2, 5]),
    ({"no_rope_layers": [0, 1, 1, 1, 1, 1, 1, 0]}, [0, 7]),
    ({"no_rope_layers": [1] * 8}, None),  # every layer rotates: no field
])
def test_nope_layers_are_read(tmp_path: Path, extra: dict, nope: list[int] | None) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, CONFIG | extra))
    assert spec.nope_layers == nope
    assert (spec.positions, spec.tie_embeddings, spec.kv_heads) == ("rope", True, 2)


@pytest.mark.parametrize(("extra", "field", "problem"), [
    ({"no_rope_layers": [1, 0]}, "no_rope_layers", "a 0/1 flag per layer (8)"),
    ({"no_rope_layers": [2] * 8}, "no_rope_layers", "a 0/1 flag per layer"),
    ({"no_rope_layers": "every 4th"}, "no_rope_layers", "a 0/1 flag per layer"),
    ({"no_rope_layer_interval": 0}, "no_rope_layer_interval", "got 0"),
    ({"num_hidden_layers": 2**31 - 1}, "no_rope_layer_interval", "more than tfcli lists"),
    ({"use_sliding_window": True, "sliding_window": 16}, "", "use_sliding_window = True"),
])
def test_bad_fields_are_named(tmp_path: Path, invoke, extra: dict, field: str,
                              problem: str) -> None:
    result = invoke("params", str(write_config(tmp_path, CONFIG | extra)))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "config.json" in result.stderr
    assert not field or f"'{field}'" in result.stderr
    assert problem in result.stderr
