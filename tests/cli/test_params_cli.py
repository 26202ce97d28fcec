"""`tfcli params`, `specs`, `validate`, `schema` through the CLI, JSON parsed."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.spec.test_counts import REFERENCE_TOTALS
from tests.conftest import VALID_SPEC
from tfcli.spec.load import _Loader, bundled_spec_path


@pytest.mark.parametrize("name", sorted(REFERENCE_TOTALS))
def test_params_json_totals(invoke, name: str) -> None:
    result = invoke("params", name, "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["total"] == REFERENCE_TOTALS[name]
    assert sum(c["count"] for c in data["components"]) == data["total"]
    for key in ("non_embedding", "active", "memory_bytes", "kv_cache_bytes"):
        assert key in data
    assert data["memory_bytes"]["float32"] == 4 * data["total"]


def test_params_kv_cache_options(invoke) -> None:
    result = invoke("params", "llama-2-7b", "-f", "json", "--context", "2048", "--batch", "2",
                    "--kv-dtype", "bfloat16")
    data = json.loads(result.stdout)
    assert data["kv_cache_bytes"] == 2 * 2048 * 2 * 32 * 4096 * 2


def test_params_shows_the_rolling_window_cache(invoke) -> None:
    table = invoke("params", "mistral-7b", "--context", "32768")
    assert table.exit_code == 0
    assert "KV cache, rolling window" in table.stdout and "1.00 GiB" in table.stdout
    data = json.loads(invoke("params", "mistral-7b", "-f", "json").stdout)
    assert data["kv_cache"]["window_bytes"] * 8 == data["kv_cache_bytes"]  # 4,096 of 32,768
    assert "rolling window" not in invoke("params", "llama-2-7b").stdout


def test_params_bad_kv_dtype(invoke) -> None:
    result = invoke("params", "gpt2", "--kv-dtype", "fp7")
    assert result.exit_code == 2
    assert "--kv-dtype" in result.stderr


def test_params_csv(invoke) -> None:
    result = invoke("params", "gpt2", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert rows[-1]["name"] == "total" and int(rows[-1]["count"]) == REFERENCE_TOTALS["gpt2"]
    assert sum(int(r["count"]) for r in rows[:-1]) == REFERENCE_TOTALS["gpt2"]


def test_params_table_mentions_the_essentials(invoke) -> None:
    result = invoke("params", "gpt2")
    assert result.exit_code == 0
    for text in ("124,439,808", "tied", "12·L·d²", "bfloat16", "KV cache", "subtotal × 12"):
        assert text in result.stdout


def test_specs_lists_every_bundled_spec(invoke) -> None:
    data = json.loads(invoke("specs", "-f", "json").stdout)
    assert {s["name"]: s["total"] for s in data["specs"]} == REFERENCE_TOTALS


def test_validate_good_and_bad(invoke, write_spec) -> None:
    good = write_spec(VALID_SPEC, "good.yaml")
    bad = write_spec(VALID_SPEC.replace("n_heads", "n_head"), "bad.yaml")
    ok = invoke("validate", str(good), "gpt2")
    assert ok.exit_code == 0 and ok.stdout.count("OK") == 2
    mixed = invoke("validate", str(good), str(bad), "-f", "json")
    assert mixed.exit_code == 2
    data = json.loads(mixed.stdout)
    assert [r["ok"] for r in data["results"]] == [True, False]
    assert "did you mean 'n_heads'" in data["results"][1]["error"]


def test_schema_validates_every_bundled_spec(invoke) -> None:
    schema = json.loads(invoke("schema").stdout)
    for name in REFERENCE_TOTALS:
        # YAML 1.2 (what editors use) reads 1e-5 as a number; tfcli's loader does too.
        document = yaml.load(bundled_spec_path(name).read_text(), Loader=_Loader)
        jsonschema.validate(document, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"name": "x", "n_head": 3}, schema)


def test_version_and_module_entry_point() -> None:
    out = subprocess.run([sys.executable, "-m", "tfcli", "--version"], capture_output=True,
                         text=True, check=True)
    assert out.stdout.startswith("tfcli ")


@pytest.mark.parametrize("target", ["llama-2-7b", "model-dir"])
def test_help_and_params_do_not_import_heavy_modules(target: str, tmp_path: Path) -> None:
    """A bundled spec and a Hugging Face directory alike: counting reads only config.json."""
    if target == "model-dir":
        (tmp_path / "config.json").write_text(json.dumps({
            "model_type": "llama", "vocab_size": 100, "hidden_size": 16, "intermediate_size": 32,
            "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 32}))
        target = str(tmp_path)
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from tfcli.cli.app import app\n"
        f"r = CliRunner().invoke(app, ['params', {target!r}, '-f', 'json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "heavy = {'torch', 'transformers', 'matplotlib', 'plotext', 'safetensors', 'numpy'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_command_has_help_with_an_example(invoke) -> None:
    from tfcli.cli.app import app

    for cmd in app.registered_commands:
        name = cmd.name or ""
        result = invoke(name, "--help")
        assert result.exit_code == 0
        assert "Example:" in result.stdout, name
