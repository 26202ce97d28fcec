"""Phi-3 checkpoints through the CLI: params components, trace --execute, import-config round
trip, the config keys refused by name, the keys Phi3ForCausalLM ignores, and hostile values
(wrong types, huge sizes, a fused tensor of the wrong shape): one clear error each."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from tests.cli.guarded import json_output as _json
from tfcli.checkpoints import spec_from_config_dir
from tfcli.sources import load_spec

SMALL = {"hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
         "num_hidden_layers": 2, "intermediate_size": 48, "vocab_size": 64,
         "max_position_embeddings": 32, "original_max_position_embeddings": 8,
         "pad_token_id": 0, "sliding_window": 5,
         "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.2, 1.5, 2.0],
                          "long_factor": [1.0, 2.0, 4.0, 8.0]}}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory, torch: ModuleType,
              transformers: ModuleType) -> Path:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("phi3")
    config = transformers.Phi3Config(**copy.deepcopy(SMALL))  # transformers fills the rope dict in place
    transformers.Phi3ForCausalLM(config).save_pretrained(path, safe_serialization=True)
    return path


def _changed(model_dir: Path, tmp_path: Path, change: dict) -> Path:
    """The checkpoint with `change` merged into its config.json (weights shared by copy)."""
    shutil.copy(model_dir / "model.safetensors", tmp_path / "model.safetensors")
    config = json.loads((model_dir / "config.json").read_text()) | change
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


def _refused(invoke, path: Path, *named: str) -> str:  # noqa: ANN001
    result = invoke("params", str(path))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.stderr.splitlines()) == 1
    assert all(n in result.stderr for n in named), result.stderr
    return result.stderr


def test_trace_execute_matches_the_analytic_rows(invoke, model_dir: Path) -> None:  # noqa: ANN001
    data = _json(invoke, "trace", str(model_dir), "--seq-len", "12", "--batch", "2", "--execute")
    assert data["execute"]["ok"], data["execute"]


def test_params_name_the_split_projections(invoke, model_dir: Path) -> None:  # noqa: ANN001
    report = _json(invoke, "params", str(model_dir))
    text = json.dumps(report["components"])  # the spec's arrays; stored_weights names the file's
    for path in ("attn.wq", "attn.wk", "attn.wv", "ffn.w_gate", "ffn.w_up", "ffn.w_down"):
        assert f"decoder.blocks.*.{path}" in text
    assert "attn.bq" not in text and "qkv_proj" not in text
    stored = report["stored_weights"]  # ... which holds the fused tensors, exactly the spec's
    assert stored["equal"] and any("qkv_proj" in g["role"] for g in stored["groups"])


def test_import_config_round_trips(invoke, model_dir: Path, tmp_path: Path) -> None:  # noqa: ANN001
    result = invoke("import-config", str(model_dir))
    assert result.exit_code == 0, result.output
    file = tmp_path / "spec.yaml"
    file.write_text(result.stdout)
    exclude = {"name", "source", "description"}
    assert load_spec(str(file)).model_dump(exclude=exclude) == \
        spec_from_config_dir(model_dir).model_dump(exclude=exclude)


@pytest.mark.parametrize(("change", "named"), [
    ({"rope_scaling": {"type": "linear", "factor": 2.0}}, ["RoPE scaling", "'linear'"]),
    ({"hidden_act": "gelu"}, ["hidden_act", "'gelu'"]),
])
def test_unmodelled_keys_are_refused_by_name(invoke, model_dir: Path, tmp_path: Path,  # noqa: ANN001
                                             change: dict, named: list[str]) -> None:
    _refused(invoke, _changed(model_dir, tmp_path, change), *named)


def test_old_longrope_spellings_read_alike(model_dir: Path, tmp_path: Path) -> None:
    """'su' (the first 128k configs) is longrope to transformers' Phi3Config."""
    config = json.loads((model_dir / "config.json").read_text())
    rope = config.pop("rope_parameters")
    su = {"type": "su", "short_factor": rope["short_factor"], "long_factor": rope["long_factor"]}
    (tmp_path / "config.json").write_text(json.dumps(config | {"rope_scaling": su}))
    assert spec_from_config_dir(tmp_path).rope_scaling == spec_from_config_dir(model_dir).rope_scaling


def test_keys_phi3_ignores_change_nothing(invoke, model_dir: Path, tmp_path: Path) -> None:  # noqa: ANN001
    """Phi3ForCausalLM hard-codes its projections bias-free and its head unbiased."""
    stray = {"attention_bias": True, "mlp_bias": True, "lm_head_bias": True}
    changed = _changed(model_dir, tmp_path, stray)
    assert _json(invoke, "params", str(changed))["total"] == \
        _json(invoke, "params", str(model_dir))["total"]


@pytest.mark.parametrize(("change", "named"), [
    ({"original_max_position_embeddings": "8"}, ["original_max_position_embeddings", "integer"]),
    ({"original_max_position_embeddings": 10**40}, ["original_max_position_embeddings"]),
    ({"partial_rotary_factor": "half"}, ["partial_rotary_factor", "number"]),
    ({"partial_rotary_factor": 0.375}, ["partial_rotary_factor 0.375", "even"]),  # int(8 * 0.375) = 3
    ({"partial_rotary_factor": 0.3}, ["short_factor"]),  # int(8 * 0.3) = 2: 1 pair, 4 factors
    ({"partial_rotary_factor": 2.0}, ["partial_rotary_factor 2.0", "more than the whole head"]),
    ({"rope_scaling": ["longrope"]}, ["rope_scaling", "object"]),
    ({"rope_scaling": {"type": "longrope", "short_factor": [1.0], "long_factor": [1.0]}},
     ["short_factor"]),
    ({"rope_scaling": {"type": "longrope", "short_factor": "1.0", "long_factor": [1.0] * 4}},
     ["short_factor", "list"]),
    ({"num_key_value_heads": 3}, ["n_kv_heads"]),
    ({"sliding_window": -1}, ["sliding_window"]),
    ({"num_hidden_layers": 10**9}, ["needs about", "GiB"]),  # sized before any allocation
])
def test_hostile_values_give_one_clear_error(invoke, model_dir: Path, tmp_path: Path,  # noqa: ANN001
                                             change: dict, named: list[str]) -> None:
    # as the published configs spell it: top-level rope keys, the factors under rope_scaling
    published = {"rope_parameters": None, "rope_scaling": SMALL["rope_scaling"]}
    path = _changed(model_dir, tmp_path, published | change)
    result = invoke("run", str(path), "--seq-len", "4")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.stderr.splitlines()) == 1
    assert all(n in result.stderr for n in named), result.stderr


def test_a_fused_tensor_of_the_wrong_shape_is_named(invoke, model_dir: Path, tmp_path: Path,  # noqa: ANN001
                                                    torch: ModuleType) -> None:
    """qkv_proj as if every head had its own k and v (MHA): 32 + 2*32 rows, not 32 + 2*16."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(model_dir / "model.safetensors")
    tensors["model.layers.1.self_attn.qkv_proj.weight"] = torch.zeros(96, 32)
    save_file(tensors, tmp_path / "model.safetensors")
    shutil.copy(model_dir / "config.json", tmp_path / "config.json")
    result = invoke("run", str(tmp_path), "--seq-len", "4")
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "model.layers.1.self_attn.qkv_proj.weight" in result.stderr
    assert "[96, 32]" in result.stderr and "[64, 32]" in result.stderr
