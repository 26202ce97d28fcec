"""Granite's reader (tfcli/checkpoints/families/granite.py): LLaMA's fields with the four
multipliers (1 leaves the field out), attention_multiplier as the score scale; a bad multiplier
is one line naming the file and field (exit 2, no traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
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


# --- GraniteMoE: the same reader with every FFN routed; experts stored stacked --------------

MOE = CONFIG | {"model_type": "granitemoe", "architectures": ["GraniteMoeForCausalLM"],
                "num_local_experts": 3, "num_experts_per_tok": 2, "tie_word_embeddings": True}
D, F, E, LAYERS, VOCAB = 32, 48, 3, 2, 64


def _moe_tensors(experts: int = E, layers: int = LAYERS) -> dict[str, np.ndarray]:
    """GraniteMoeForCausalLM's tensors at MOE's sizes (tied), random, as transformers saves
    them: each block's experts in one (E, 2 d_ff, d) input_linear and one (E, d, d_ff)
    output_linear."""
    rng = np.random.default_rng(0)
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (VOCAB, D),
                                          "model.norm.weight": (D,)}
    for i in range(layers):
        layer = f"model.layers.{i}"
        shapes |= {f"{layer}.input_layernorm.weight": (D,),
                   f"{layer}.post_attention_layernorm.weight": (D,),
                   f"{layer}.self_attn.q_proj.weight": (D, D),
                   f"{layer}.self_attn.k_proj.weight": (D // 2, D),
                   f"{layer}.self_attn.v_proj.weight": (D // 2, D),
                   f"{layer}.self_attn.o_proj.weight": (D, D),
                   f"{layer}.block_sparse_moe.router.layer.weight": (experts, D),
                   f"{layer}.block_sparse_moe.input_linear.weight": (experts, 2 * F, D),
                   f"{layer}.block_sparse_moe.output_linear.weight": (experts, D, F)}
    return {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}


def _save_moe(path: Path, tensors: dict[str, np.ndarray], config: dict = MOE) -> Path:
    from safetensors.numpy import save_file
    write_config(path, config)
    save_file(tensors, str(path / "model.safetensors"))
    return path


def test_granitemoe_reads_the_multipliers_and_the_routed_experts(tmp_path: Path) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, MOE))
    assert (spec.n_experts, spec.experts_per_token, spec.norm_topk_prob, spec.d_ff) == \
        (3, 2, True, 48)
    assert (spec.embedding_multiplier, spec.attention_scale, spec.residual_multiplier,
            spec.logits_scaling) == (12.0, 0.125, 0.22, 16.0)
    assert not spec.ffn_bias  # GraniteMoeConfig has no mlp_bias


def test_each_expert_takes_its_slice_of_the_stacked_tensors(tmp_path: Path) -> None:
    from tfcli.checkpoints import load_weights
    tensors = _moe_tensors()
    path = _save_moe(tmp_path, tensors)
    weights = load_weights(path, spec_from_config_dir(path))
    stacked_in = tensors["model.layers.1.block_sparse_moe.input_linear.weight"]
    stacked_out = tensors["model.layers.1.block_sparse_moe.output_linear.weight"]
    for e, expert in enumerate(weights.decoder.blocks[1].ffn.experts):
        np.testing.assert_array_equal(expert.w_gate, stacked_in[e, :F].T)  # gate | up
        np.testing.assert_array_equal(expert.w_up, stacked_in[e, F:].T)
        np.testing.assert_array_equal(expert.w_down, stacked_out[e].T)


def test_a_stacked_tensor_of_the_wrong_expert_count_is_named(tmp_path: Path, invoke) -> None:
    tensors = _moe_tensors()
    name = "model.layers.0.block_sparse_moe.input_linear.weight"
    tensors[name] = tensors[name][:2]  # 2 experts where the config says 3
    path = _save_moe(tmp_path, tensors)
    result = invoke("params", str(path), "-f", "json")
    assert result.exit_code == 0, result.output  # params reads headers: a verdict, not a refusal
    assert json.loads(result.stdout)["stored_weights"]["differences"] == \
        [f"{name} is [2, 96, 32], the spec's is [3, 96, 32]"]
    result = invoke("run", str(path), "--tokens", "1,2")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"tensor '{name}' has shape [2, 96, 32], expected [3, 96, 32]" in result.stderr


def test_stacked_experts_are_not_counted_as_tensors_of_their_own(tmp_path: Path,
                                                                 invoke) -> None:
    """40 experts x 2 blocks is more than the 20 tensors stored, which is right for stacked
    experts: the bound that refuses a spec of more blocks than the checkpoint holds tensors
    counts one tensor per block here, not one per expert."""
    path = _save_moe(tmp_path, _moe_tensors(experts=40), MOE | {"num_local_experts": 40})
    result = invoke("params", str(path))
    assert result.exit_code == 0, result.output
    assert "equal: every tensor is the spec's" in result.output
    result = invoke("run", str(path), "--tokens", "1,2")
    assert result.exit_code == 0, result.output
