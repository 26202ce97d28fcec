"""Llama 4 text's reader (tfcli/checkpoints/families/llama4.py): NoPE layers from
no_rope_layers or its interval with their temperature, chunked local layers from
attention_chunk_size, the MoE blocks from moe_layers or the interleave step; a malformed key is
one line naming the file and field (exit 2, no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checkpoints.test_configs import write_config
from tfcli.checkpoints.configs import spec_from_config_dir

CONFIG = {"model_type": "llama4_text", "architectures": ["Llama4ForCausalLM"],
          "vocab_size": 64, "hidden_size": 32, "intermediate_size": 16,
          "intermediate_size_mlp": 48, "num_hidden_layers": 8, "num_attention_heads": 4,
          "num_key_value_heads": 2, "head_dim": 8, "max_position_embeddings": 64}


def test_the_defaults_are_scouts_recipe(tmp_path: Path) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, CONFIG))
    assert spec.nope_layers == [3, 7]  # every no_rope_layer_interval-th layer, interval 4
    assert spec.layer_pattern == ["local", "local", "local", "global"]
    assert (spec.chunked_attention, spec.sliding_window, spec.qk_norm) == (True, 8192, "l2")
    assert (spec.nope_temperature_scale, spec.nope_temperature_floor) == (0.1, 8192)
    assert (spec.n_experts, spec.experts_per_token, spec.n_shared_experts) == (16, 1, 1)
    assert (spec.d_ff, spec.expert_d_ff, spec.shared_expert_d_ff) == (48, 16, 16)
    assert (spec.router_scoring, spec.norm_topk_prob, spec.router_scales_input) == \
        ("sigmoid", False, True)
    assert spec.moe_layer_step == 1 and spec.dense_layers is None


@pytest.mark.parametrize(("extra", "want"), [
    # Meta's published configs say 4: read by its truth, as transformers' code reads it
    ({"attn_temperature_tuning": 4}, {"nope_temperature_scale": 0.1}),
    ({"attn_temperature_tuning": False}, {"nope_temperature_scale": None}),
    ({"attention_chunk_size": None}, {"layer_pattern": None, "chunked_attention": False,
                                      "sliding_window": None}),
    ({"no_rope_layers": [1] * 8}, {"nope_layers": None, "nope_temperature_scale": None,
                                   "layer_pattern": ["local"], "sliding_window": 8192}),
    ({"no_rope_layers": [1, 0] * 4}, {"nope_layers": [1, 3, 5, 7],
                                      "layer_pattern": ["local", "global"]}),
    ({"no_rope_layers": [1, 1, 1, 0] * 3}, {"nope_layers": [3, 7]}),  # read to n_layers
    ({"interleave_moe_layer_step": 2}, {"moe_layer_step": 2, "dense_layers": None}),
    ({"moe_layers": [1, 3, 5, 7]}, {"moe_layer_step": 1, "dense_layers": [0, 2, 4, 6]}),
    ({"moe_layers": [1, 3, 5, 7], "interleave_moe_layer_step": 2}, {"moe_layer_step": 2}),
    ({"moe_layers": [], "interleave_moe_layer_step": 2}, {"n_experts": 0}),
    ({"use_qk_norm": False}, {"qk_norm": "none"}),
    # past the layers: every layer rotates (no period list as long as the interval is built)
    ({"no_rope_layer_interval": 10**9}, {"nope_layers": None, "layer_pattern": ["local"]}),
])
def test_variants_are_read(tmp_path: Path, extra: dict, want: dict) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, CONFIG | extra))
    assert {key: getattr(spec, key) for key in want} == want


@pytest.mark.parametrize(("extra", "field", "problem"), [
    ({"attn_temperature_tuning": "yes"}, "attn_temperature_tuning", "expected true or false"),
    ({"moe_layers": "all"}, "moe_layers", "a list of layer indices"),
    ({"moe_layers": [1, True]}, "moe_layers", "a list of layer indices"),
    ({"no_rope_layers": [1, 0]}, "no_rope_layers", "a 0/1 flag per layer (8)"),
    ({"no_rope_layer_interval": 0}, "no_rope_layer_interval", "got 0"),
    ({"attention_chunk_size": 0}, "attention_chunk_size", "got 0"),
    ({"num_hidden_layers": 2**31 - 1}, "no_rope_layer_interval", "more than tfcli lists"),
    ({"layer_types": ["chunked_attention", "full_attention"] * 4, "attention_chunk_size": None},
     "attention_chunk_size", "is null"),
    ({"layer_types": ["sliding_attention", "full_attention"] * 4}, "layer_types",
     "'sliding_attention' is not supported"),
    ({"layer_types": ["full_attention"] * 2}, "layer_types", "has 2 entries for 8 layers"),
    ({"hidden_act": "gelu"}, "hidden_act", "gelu"),
])
def test_bad_fields_are_named(tmp_path: Path, invoke, extra: dict, field: str,
                              problem: str) -> None:
    result = invoke("params", str(write_config(tmp_path, CONFIG | extra)))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "config.json" in result.stderr
    assert field in result.stderr, result.stderr
    assert problem in result.stderr, result.stderr
