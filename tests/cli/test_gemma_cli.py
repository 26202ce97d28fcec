"""Gemma checkpoints and bundled specs through the CLI: trace --execute (a saved Gemma 3 and the
bundled specs at 2 layers), params naming the new components and the hybrid KV cache,
import-config round trip, the config keys refused by name, the keys transformers ignores, and
hostile values: one clear error each."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from tests.cli.guarded import json_output as _json
from tfcli.checkpoints import spec_from_config_dir
from tfcli.sources import load_spec

SMALL = {"hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
         "num_hidden_layers": 3, "intermediate_size": 48, "vocab_size": 64,
         "max_position_embeddings": 32, "pad_token_id": 0, "sliding_window": 4,
         "sliding_window_pattern": 3, "final_logit_softcapping": 5.0}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory, torch: ModuleType,
              transformers: ModuleType) -> Path:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("gemma3")
    model = transformers.Gemma3ForCausalLM(transformers.Gemma3TextConfig(**SMALL))
    model.save_pretrained(path, safe_serialization=True)
    return path


def _changed(model_dir: Path, tmp_path: Path, change: dict) -> Path:
    """The checkpoint with `change` merged into its config.json (weights shared by copy)."""
    shutil.copy(model_dir / "model.safetensors", tmp_path / "model.safetensors")
    config = json.loads((model_dir / "config.json").read_text()) | change
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


def test_trace_execute_matches_the_analytic_rows(invoke, model_dir: Path) -> None:  # noqa: ANN001
    data = _json(invoke, "trace", str(model_dir), "--seq-len", "12", "--batch", "2", "--execute")
    assert data["execute"]["ok"], data["execute"]
    ops = {(r["path"], r["op"]) for r in data["rows"]}
    assert {("embed", "embed_scale"), ("head", "softcap")} <= ops


# Through the CLI for the smallest bundled Gemma only: tests/analysis/trace/test_build.py runs
# --execute's check on every bundled spec (narrowed), which covers gemma-2b and gemma-2-9b.
@pytest.mark.parametrize("name", ["gemma-3-1b"])
def test_bundled_trace_execute_at_two_layers(invoke, name: str) -> None:  # noqa: ANN001
    data = _json(invoke, "trace", name, "--execute", "--layers", "2", "--seq-len", "16")
    assert data["execute"]["ok"], data["execute"]


def test_params_name_the_new_components_and_the_hybrid_cache(invoke, model_dir: Path) -> None:  # noqa: ANN001
    text = json.dumps(_json(invoke, "params", str(model_dir)))
    for path in ("attn_post_norm.scale", "ffn_post_norm.scale", "attn.q_norm.scale"):
        assert f"decoder.blocks.*.{path}" in text
    kv = _json(invoke, "params", "gemma-2-9b", "--context", "8192")["kv_cache"]
    assert (kv["window"], kv["local_layers"], kv["layers"]) == (4096, 21, 42)
    table = invoke("params", "gemma-2-9b", "--context", "8192")
    assert "21 local layers × the last 4,096 tokens + 21 global × 8,192" in table.output


def test_import_config_round_trips(invoke, model_dir: Path, tmp_path: Path) -> None:  # noqa: ANN001
    result = invoke("import-config", str(model_dir))
    assert result.exit_code == 0, result.output
    file = tmp_path / "spec.yaml"
    file.write_text(result.stdout)
    exclude = {"name", "source", "description"}
    spec = load_spec(str(file))
    assert spec.model_dump(exclude=exclude) == spec_from_config_dir(model_dir).model_dump(exclude=exclude)
    assert spec.layer_pattern == ["local", "local", "global"] and spec.rope_local_theta == 10000.0


def _refused(invoke, path: Path, *named: str) -> None:  # noqa: ANN001
    result = invoke("params", str(path))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.stderr.splitlines()) == 1
    assert all(n in result.stderr for n in named), result.stderr


@pytest.mark.parametrize(("change", "named"), [
    ({"use_bidirectional_attention": True}, ["use_bidirectional_attention"]),
    ({"layer_types": ["sliding_attention", "chunked_attention", "full_attention"]},
     ["layer_types", "'chunked_attention'"]),
    ({"hidden_activation": "relu"}, ["hidden_activation", "'relu'"]),
    ({"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                          "sliding_attention": {"rope_type": "linear", "factor": 2.0}}},
     ["sliding_attention", "'linear'"]),
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e6}},
     ["rope_parameters", "full_attention"]),
    ({"rope_parameters": {"full_attention": {"rope_type": "llama4", "rope_theta": 1e6}}},
     ["RoPE scaling", "'llama4'"]),
    ({"sliding_window": None}, ["sliding_window null"]),
])
def test_unmodelled_keys_are_refused_by_name(invoke, model_dir: Path, tmp_path: Path,  # noqa: ANN001
                                             change: dict, named: list[str]) -> None:
    _refused(invoke, _changed(model_dir, tmp_path, change), *named)


def test_keys_gemma3_ignores_change_nothing(invoke, model_dir: Path, tmp_path: Path) -> None:  # noqa: ANN001
    """transformers 5's Gemma 3 never passes attn_logit_softcapping to its attention; its MLP
    has no bias whatever mlp_bias says; cache_implementation is generation's, not the model's."""
    stray = {"attn_logit_softcapping": 50.0, "mlp_bias": True, "cache_implementation": "hybrid"}
    identity = {"name", "source", "description"}
    assert spec_from_config_dir(_changed(model_dir, tmp_path, stray)).model_dump(exclude=identity) \
        == spec_from_config_dir(model_dir).model_dump(exclude=identity)


def test_all_global_layer_types_need_no_window(model_dir: Path, tmp_path: Path) -> None:
    spec = spec_from_config_dir(_changed(model_dir, tmp_path,
                                         {"layer_types": ["full_attention"] * 3}))
    assert (spec.layer_pattern, spec.sliding_window, spec.rope_local_theta) == (None, None, None)


@pytest.mark.parametrize(("change", "named"), [
    ({"query_pre_attn_scalar": 0}, ["query_pre_attn_scalar", "positive"]),
    ({"final_logit_softcapping": "30"}, ["final_logit_softcapping", "number"]),
    # saved configs list layer_types; without it the older sliding_window_pattern is read
    ({"layer_types": None, "sliding_window_pattern": 0}, ["sliding_window_pattern"]),
    ({"layer_types": ["sliding_attention"]}, ["layer_types", "1 entries for 3 layers"]),
    ({"layer_types": "sliding_attention"}, ["layer_types", "list of strings"]),
    ({"head_dim": 7}, ["d_head"]),  # RoPE needs an even width
    ({"num_hidden_layers": 10**9, "layer_types": None}, ["needs about", "GiB"]),  # sized first
])
def test_hostile_values_give_one_clear_error(invoke, model_dir: Path, tmp_path: Path,  # noqa: ANN001
                                             change: dict, named: list[str]) -> None:
    path = _changed(model_dir, tmp_path, change)
    result = invoke("run", str(path), "--seq-len", "4")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.stderr.splitlines()) == 1
    assert all(n in result.stderr for n in named), result.stderr
