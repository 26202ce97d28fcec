"""ERNIE 4.5 MoE's reader (tfcli/checkpoints/families/ernie.py): which blocks are MoE from the
start index, end index and interval as Ernie4_5_MoeDecoderLayer decides, the experts from
moe_num_experts / moe_k (or transformers' attribute names); a key tfcli does not model, or a
malformed one, is one line naming the file and field (exit 2, no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checkpoints.test_configs import write_config
from tfcli.checkpoints.configs import spec_from_config_dir

CONFIG = {"model_type": "ernie4_5_moe", "architectures": ["Ernie4_5_MoeForCausalLM"],
          "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 6,
          "num_attention_heads": 4, "num_key_value_heads": 2, "moe_intermediate_size": 16,
          "moe_num_experts": 8, "moe_k": 2, "moe_num_shared_experts": 2}


@pytest.mark.parametrize(("extra", "dense"), [
    ({}, [0]),  # Ernie4_5_MoeConfig: from block 1 to the last, every block
    ({"moe_layer_start_index": 0}, None),
    ({"moe_layer_interval": 2}, [0, 2, 4]),  # (i + 1) % 2 == 0: blocks 1, 3, 5
    ({"moe_layer_interval": 2, "moe_layer_start_index": 2, "moe_layer_end_index": 4},
     [0, 1, 2, 4, 5]),
    ({"moe_layer_end_index": 3}, [0, 4, 5]),
    ({"moe_layer_end_index": 99}, [0]),
])
def test_the_moe_blocks_are_read(tmp_path: Path, extra: dict, dense: list[int] | None) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, CONFIG | extra))
    assert spec.dense_layers == dense
    assert (spec.n_experts, spec.experts_per_token, spec.expert_d_ff) == (8, 2, 16)
    assert (spec.n_shared_experts, spec.shared_expert_d_ff, spec.d_ff) == (2, 16, 48)
    assert (spec.router_bias, spec.router_bias_parameter, spec.norm_topk_prob) == \
        (True, True, True)


def test_transformers_attribute_names_are_read(tmp_path: Path) -> None:
    config = {k: v for k, v in CONFIG.items() if k not in ("moe_num_experts", "moe_k")}
    spec = spec_from_config_dir(write_config(tmp_path, config | {"num_experts": 4,
                                                                 "num_experts_per_tok": 1}))
    assert (spec.n_experts, spec.experts_per_token) == (4, 1)


def test_no_moe_block_is_a_dense_model(tmp_path: Path) -> None:
    spec = spec_from_config_dir(write_config(tmp_path, CONFIG | {"moe_layer_start_index": 6}))
    assert spec.n_experts == 0 and spec.router_bias is False


@pytest.mark.parametrize(("extra", "named"), [
    ({"use_bias": True}, "use_bias = True is not supported"),
    ({"moe_layer_interval": 0}, "'moe_layer_interval'"),
    ({"moe_layer_start_index": -1}, "'moe_layer_start_index'"),
    ({"moe_layer_end_index": -2}, "'moe_layer_end_index'"),
    ({"moe_num_experts": [64, 64]}, "'moe_num_experts'"),  # ERNIE-VL's per-modality lists
    ({"moe_k": 9}, "experts_per_token"),
    ({"num_hidden_layers": 2**31 - 1}, "more than tfcli lists"),
])
def test_bad_fields_are_named(tmp_path: Path, invoke, extra: dict, named: str) -> None:
    result = invoke("params", str(write_config(tmp_path, CONFIG | extra)))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "config.json" in result.stderr
    assert named in result.stderr, result.stderr
