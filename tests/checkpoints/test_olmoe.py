"""OLMoE's reader (tfcli/checkpoints/families/olmoe.py): full q/k norms, the routed experts and
norm_topk_prob as the config says; clip_qkv, which transformers applies as a clamp of q, k and
v, refused by name (exit 2, one line, no traceback)."""

from __future__ import annotations

from pathlib import Path

from tests.checkpoints.test_configs import write_config
from tfcli.checkpoints.configs import spec_from_config_dir

CONFIG = {"model_type": "olmoe", "architectures": ["OlmoeForCausalLM"], "vocab_size": 64,
          "hidden_size": 32, "intermediate_size": 16, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_experts": 6, "num_experts_per_tok": 2}


def test_the_fields_are_read(tmp_path: Path) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, CONFIG))
    assert (spec.qk_norm, spec.n_experts, spec.experts_per_token, spec.norm_topk_prob,
            spec.d_ff, spec.kv_heads) == ("full", 6, 2, False, 16, 4)
    renormalised = spec_from_config_dir(write_config(tmp_path / "r", CONFIG | {
        "norm_topk_prob": True}))
    assert renormalised.norm_topk_prob


def test_clip_qkv_is_refused_by_name(tmp_path: Path, invoke) -> None:  # noqa: ANN001
    result = invoke("params", str(write_config(tmp_path, CONFIG | {"clip_qkv": 8.0})))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "clip_qkv 8.0 is not supported" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1
