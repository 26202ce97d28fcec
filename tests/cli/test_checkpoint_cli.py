"""Hugging Face directories through the CLI: import-config, run/generate --weights, --layers."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tfcli.spec.load import parse_spec_text


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory: pytest.TempPathFactory, torch: ModuleType,
             transformers: ModuleType) -> Path:
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=300, n_positions=64, n_embd=32, n_head=4, n_layer=3))
    path = tmp_path_factory.mktemp("ckpt") / "tiny-gpt2"
    model.save_pretrained(path)
    return path


def test_import_config_round_trips(invoke, gpt2_dir: Path) -> None:
    result = invoke("import-config", str(gpt2_dir))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# generated from")
    spec = parse_spec_text(result.stdout)
    assert (spec.d_model, spec.n_layers, spec.activation) == (32, 3, "gelu_tanh")


def test_a_config_json_path_stands_for_its_directory(invoke, gpt2_dir: Path) -> None:
    config = str(gpt2_dir / "config.json")
    by_file, by_dir = invoke("import-config", config), invoke("import-config", str(gpt2_dir))
    assert by_file.exit_code == 0 and f"name: {gpt2_dir.name}" in by_file.stdout
    assert by_file.stdout.splitlines()[1:] == by_dir.stdout.splitlines()[1:]  # after the comment
    params = invoke("params", config, "-f", "json")
    assert params.exit_code == 0, params.output
    by_dir_params = invoke("params", str(gpt2_dir), "-f", "json")
    assert json.loads(params.stdout) == json.loads(by_dir_params.stdout)


def test_directory_as_spec_and_as_weights_agree(invoke, gpt2_dir: Path, tmp_path: Path) -> None:
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(invoke("import-config", str(gpt2_dir)).stdout)
    a = invoke("run", str(gpt2_dir), "--tokens", "1,2,3", "-f", "json")
    b = invoke("run", str(spec_file), "--weights", str(gpt2_dir), "--tokens", "1,2,3", "-f", "json")
    assert a.exit_code == b.exit_code == 0, a.output + b.output
    assert json.loads(a.stdout)["hidden_norms"] == json.loads(b.stdout)["hidden_norms"]
    assert json.loads(a.stdout)["weights"] == str(gpt2_dir)


def test_layers_truncates_a_checkpoint(invoke, gpt2_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.npz"
    result = invoke("run", str(gpt2_dir), "--layers", "1", "--tokens", "4,5", "--save-npz", str(out))
    assert result.exit_code == 0, result.output
    assert np.load(out)["hidden"].shape == (1, 2, 32)


def test_generate_with_weights(invoke, gpt2_dir: Path) -> None:
    result = invoke("generate", str(gpt2_dir), "--tokens", "1,2", "--max-new-tokens", "4",
                    "--check-cache", "-f", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["check"]["ok"]


def test_weights_that_do_not_match_the_spec(invoke, gpt2_dir: Path) -> None:
    result = invoke("run", "gpt2", "--weights", str(gpt2_dir), "--tokens", "1")
    assert result.exit_code == 2
    assert "tensor" in result.stderr and "Traceback" not in result.output


def test_import_config_errors(invoke, tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mamba"}))
    result = invoke("import-config", str(tmp_path))
    assert result.exit_code == 2 and "mamba" in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert invoke("import-config", str(empty)).exit_code == 2


def test_text_uses_the_checkpoints_tokenizer_json(invoke, gpt2_dir: Path, tmp_path: Path) -> None:
    import shutil

    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    model_dir = tmp_path / "with-tokenizer"
    shutil.copytree(gpt2_dir, model_dir)
    tokenizer = Tokenizer(WordLevel({"[UNK]": 0, "hello": 7, "world": 42}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.save(str(model_dir / "tokenizer.json"))
    data = json.loads(invoke("run", str(model_dir), "--text", "hello world", "-f", "json").stdout)
    assert data["tokens"] == [[7, 42]]
    gen = json.loads(invoke("generate", str(model_dir), "--text", "world hello",
                            "--max-new-tokens", "2", "-f", "json").stdout)
    assert gen["prompt_tokens"] == [42, 7]
