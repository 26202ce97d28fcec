"""Cohere's readers (tfcli/checkpoints/families/cohere.py): the parallel block, interleaved RoPE
and logit scale (as logits_scaling, its inverse; none for a bare model); cohere2's layer
pattern from sliding_window_pattern or layer_types, its global layers NoPE; Command R+'s
per-head q/k norms refused by name (exit 2, one line, no traceback)."""

from __future__ import annotations

from pathlib import Path

from tests.checkpoints.test_configs import write_config
from tfcli.checkpoints.configs import spec_from_config_dir

COHERE = {"model_type": "cohere", "architectures": ["CohereForCausalLM"], "vocab_size": 64,
          "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 6,
          "num_attention_heads": 4, "num_key_value_heads": 2, "logit_scale": 0.25}
COHERE2 = COHERE | {"model_type": "cohere2", "architectures": ["Cohere2ForCausalLM"],
                    "head_dim": 8, "sliding_window": 16}


def test_command_r(tmp_path: Path) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, COHERE))
    assert (spec.parallel_residual, spec.norm, spec.rope_pairing, spec.logits_scaling,
            spec.tie_embeddings, spec.nope_layers) == \
        ("one_norm", "layernorm_nobias", "interleaved", 4.0, True, None)
    bare = spec_from_config_dir(write_config(tmp_path / "b", COHERE | {
        "architectures": ["CohereModel"]}))
    assert bare.logits_scaling is None and not bare.lm_head


def test_command_r7b_patterns(tmp_path: Path) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, COHERE2))  # the default: every 4th full
    assert (spec.layer_pattern, spec.nope_layers, spec.sliding_window) == \
        (["local", "local", "local", "global"], [3], 16)
    every_other = spec_from_config_dir(write_config(tmp_path / "p", COHERE2 | {
        "sliding_window_pattern": 2}))
    assert every_other.layer_pattern == ["local", "global"] and every_other.nope_layers == [1, 3, 5]
    listed = spec_from_config_dir(write_config(tmp_path / "l", COHERE2 | {"layer_types": [
        "full_attention", "sliding_attention"] * 3}))
    assert listed.layer_pattern == ["global", "local"] and listed.nope_layers == [0, 2, 4]


def test_per_head_qk_norms_are_read(tmp_path: Path) -> None:
    """Command R+'s use_qk_norm: a (heads, d_head) weight per norm; Cohere2 reads no such key
    (Cohere2Attention has no q/k norm), so neither does tfcli there."""
    spec = spec_from_config_dir(write_config(tmp_path, COHERE | {"use_qk_norm": True}))
    assert spec.qk_norm == "each_head"
    r7b = spec_from_config_dir(write_config(tmp_path / "2", COHERE2 | {"use_qk_norm": True}))
    assert r7b.qk_norm == "none"
