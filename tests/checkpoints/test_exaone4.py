"""EXAONE 4.0's reader (tfcli/checkpoints/families/exaone4.py): the published 32B config's
string sliding_window_pattern ("LLLG") beside its layer_types list, which is what is read; a
string pattern without the list is refused naming the field (transformers cannot derive the
layers from it either); no window: every layer full and rotated."""

from __future__ import annotations

from pathlib import Path

from tests.checkpoints.test_configs import write_config
from tfcli.checkpoints.configs import spec_from_config_dir

CONFIG = {"model_type": "exaone4", "architectures": ["Exaone4ForCausalLM"], "vocab_size": 64,
          "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 8,
          "num_attention_heads": 4, "num_key_value_heads": 2, "sliding_window": 16,
          "sliding_window_pattern": "LLLG",
          "layer_types": ["sliding_attention"] * 3 + ["full_attention"]
          + ["sliding_attention"] * 3 + ["full_attention"]}


def test_layer_types_are_read_beside_a_string_pattern(tmp_path: Path) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, CONFIG))
    assert (spec.layer_pattern, spec.nope_layers, spec.sliding_window, spec.qk_norm,
            spec.norm_placement) == (["local", "local", "local", "global"], [3, 7], 16,
                                     "per_head", "sublayer_post")


def test_no_window_means_every_layer_full_and_rotated(tmp_path: Path) -> None:
    config = CONFIG | {"sliding_window": None, "layer_types": ["full_attention"] * 8}
    spec = spec_from_config_dir(write_config(tmp_path, config))
    assert (spec.layer_pattern, spec.nope_layers, spec.sliding_window) == (None, None, None)


def test_a_string_pattern_without_layer_types_is_named(tmp_path: Path, invoke) -> None:  # noqa: ANN001
    config = {k: v for k, v in CONFIG.items() if k != "layer_types"}
    result = invoke("params", str(write_config(tmp_path, config)))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "'sliding_window_pattern'" in result.stderr, result.stderr
