"""StarCoder2's reader (tfcli/checkpoints/families/starcoder2.py): LayerNorm, the plain MLP's
activation, biases from use_bias, a window only when it hides something; an activation tfcli
does not run is refused by name (exit 2, one line, no traceback)."""

from __future__ import annotations

from pathlib import Path

from tests.checkpoints.test_configs import write_config
from tfcli.checkpoints.configs import spec_from_config_dir

CONFIG = {"model_type": "starcoder2", "architectures": ["Starcoder2ForCausalLM"],
          "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128,
          "sliding_window": 16}


def test_the_fields_are_read(tmp_path: Path) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, CONFIG))
    assert (spec.norm, spec.activation, spec.bias, spec.sliding_window, spec.kv_heads,
            spec.tie_embeddings) == ("layernorm", "gelu_tanh", True, 16, 2, True)
    wide = spec_from_config_dir(write_config(tmp_path / "w", CONFIG | {
        "sliding_window": 128, "use_bias": False}))
    assert wide.sliding_window is None and not wide.bias  # a window as long as the context


def test_an_unknown_activation_is_named(tmp_path: Path, invoke) -> None:  # noqa: ANN001
    result = invoke("params", str(write_config(tmp_path, CONFIG | {"hidden_act": "mish"})))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "hidden_act 'mish' is not supported" in result.stderr, result.stderr
