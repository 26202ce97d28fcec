"""Qwen2 / Qwen3 checkpoints through the CLI: --check-cache, params components, trace
--execute, import-config round trip, and the config keys tfcli refuses by name."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.cli.guarded import json_output as _json
from tfcli.checkpoints import spec_from_config_dir
from tfcli.sources import load_spec

SMALL = {"hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
         "num_hidden_layers": 2, "intermediate_size": 64, "vocab_size": 64,
         "max_position_embeddings": 32}


@pytest.fixture(scope="module", params=["qwen2", "qwen3"])
def model_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
              torch: ModuleType, transformers: ModuleType) -> Path:
    torch.manual_seed(0)
    model = (transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**SMALL))
             if request.param == "qwen2" else
             transformers.Qwen3ForCausalLM(transformers.Qwen3Config(**SMALL, head_dim=16)))
    path = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(path, safe_serialization=True)
    return path


def test_check_cache_passes(invoke, model_dir: Path) -> None:
    data = _json(invoke, "generate", str(model_dir), "--tokens", "5,6,7", "--max-new-tokens", "6",
                 "--check-cache")
    assert data["check"]["ok"] and data["check"]["identical_tokens"]


def test_trace_execute_matches_the_analytic_rows(invoke, model_dir: Path) -> None:
    data = _json(invoke, "trace", str(model_dir), "--seq-len", "5", "--batch", "2", "--execute")
    assert data["execute"]["ok"], data["execute"]


def test_params_name_the_new_components(invoke, model_dir: Path) -> None:
    text = json.dumps(_json(invoke, "params", str(model_dir)))
    qwen3 = spec_from_config_dir(model_dir).qk_norm == "per_head"
    assert ("attn.q_norm.scale" in text) == qwen3 and ("attn.k_norm.scale" in text) == qwen3
    assert ("attn.bq" in text) != qwen3  # Qwen2: q/k/v biases; Qwen3 (attention_bias false): none
    assert "attn.bo" not in text


def test_import_config_round_trips(invoke, model_dir: Path, tmp_path: Path) -> None:
    result = invoke("import-config", str(model_dir))
    assert result.exit_code == 0, result.output
    file = tmp_path / "spec.yaml"
    file.write_text(result.stdout)
    imported = spec_from_config_dir(model_dir)
    assert load_spec(str(file)).model_dump(exclude={"name", "source", "description"}) == \
        imported.model_dump(exclude={"name", "source", "description"})


@pytest.mark.parametrize(("change", "named"), [
    ({"layer_types": ["sliding_attention", "full_attention"]}, "use_sliding_window"),
    ({"use_sliding_window": True, "sliding_window": None,
      "layer_types": ["sliding_attention", "full_attention"]}, "sliding_window"),
])
def test_unmodelled_keys_are_refused_by_name(invoke, model_dir: Path, tmp_path: Path,
                                             change: dict, named: str) -> None:
    config = json.loads((model_dir / "config.json").read_text()) | change
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = invoke("params", str(tmp_path))
    assert result.exit_code == 2 and named in result.stderr
    assert "Traceback" not in result.output


def test_qk_norm_without_a_norm_is_refused(invoke, write_spec) -> None:
    path = write_spec("name: x\nfamily: decoder\nvocab_size: 8\nmax_seq_len: 8\nd_model: 8\n"
                      "n_heads: 2\nd_ff: 16\nn_layers: 1\nnorm: none\nqk_norm: per_head\n")
    result = invoke("validate", str(path))
    assert result.exit_code == 2 and "qk_norm" in result.output and "Traceback" not in result.output


def test_keys_the_qwen_classes_ignore_change_nothing(invoke, model_dir: Path, tmp_path: Path) -> None:
    """transformers hard-codes Qwen's biases (Qwen2: q/k/v, never o; no MLP bias in either): a
    stray `mlp_bias` (or, for Qwen2, `attention_bias`) in config.json changes no count."""
    config = json.loads((model_dir / "config.json").read_text())
    stray = {"mlp_bias": True} | ({"attention_bias": False} if config["model_type"] == "qwen2" else {})
    (tmp_path / "config.json").write_text(json.dumps(config | stray))
    assert _json(invoke, "params", str(tmp_path))["total"] == \
        _json(invoke, "params", str(model_dir))["total"]
