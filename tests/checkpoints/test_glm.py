"""GLM's reader (tfcli/checkpoints/families/glm.py): the rotated part of each head from
`rope_parameters` or the older top-level `partial_rotary_factor`, interleaved pairs, q/k/v
biases and none on o, glm4's sandwich norms; a factor that rotates no whole pair is refused by
name (exit 2, one line, no traceback)."""

from __future__ import annotations

from pathlib import Path

from tests.checkpoints.test_configs import write_config
from tfcli.checkpoints.configs import spec_from_config_dir

CONFIG = {"model_type": "glm", "architectures": ["GlmForCausalLM"], "vocab_size": 64,
          "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16}


def test_the_fields_are_read(tmp_path: Path) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, CONFIG))  # GlmConfig's factor 0.5
    assert (spec.rotary_dim, spec.rope_pairing, spec.attention_bias, spec.attention_out_bias,
            spec.norm_placement) == (8, "interleaved", True, False, "pre")
    nested = spec_from_config_dir(write_config(tmp_path / "n", CONFIG | {
        "model_type": "glm4", "architectures": ["Glm4ForCausalLM"],
        "rope_parameters": {"rope_type": "default", "rope_theta": 500.0,
                            "partial_rotary_factor": 0.25}}))
    assert (nested.rotary_dim, nested.rope_theta, nested.norm_placement) == (4, 500.0, "sandwich")


def test_a_factor_rotating_no_pair_is_refused(tmp_path: Path, invoke) -> None:  # noqa: ANN001
    result = invoke("params", str(write_config(tmp_path, CONFIG | {"partial_rotary_factor": 0.05})))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "partial_rotary_factor 0.05 rotates 0 of each head's 16 dimensions" in result.stderr, \
        result.stderr
