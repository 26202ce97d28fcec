"""Where `generate` stops by default: the checkpoint's end-of-sequence ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.checkpoints.gguf_files import llama_metadata, llama_tensors, write_gguf
from tests.cli.guarded import run_in_memory
from tfcli.checkpoints.eos import eos_tokens
from tfcli.core.errors import BadInputError


def _folder(tmp_path: Path, config: dict[str, object], generation: object = None) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(config))
    if generation is not None:
        (tmp_path / "generation_config.json").write_text(json.dumps(generation))
    return tmp_path


def test_generation_config_wins_over_config(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"eos_token_id": 5}, {"eos_token_id": [7, 3, 7]})
    assert eos_tokens(str(folder), 100) == (7, 3)


def test_config_is_the_fallback_and_none_means_none(tmp_path: Path) -> None:
    assert eos_tokens(str(_folder(tmp_path, {"eos_token_id": 5}, {"do_sample": False})), 100) == (5,)
    assert eos_tokens(str(_folder(tmp_path, {}, None)), 100) == ()
    assert eos_tokens(None, 100) == ()


def test_ids_past_the_vocabulary_are_dropped(tmp_path: Path) -> None:
    assert eos_tokens(str(_folder(tmp_path, {}, {"eos_token_id": [50256, 4]})), 100) == (4,)


@pytest.mark.parametrize("bad", [-1, "2", True, [1, "x"], list(range(65)), {"a": 1}, 2.0])
def test_malformed_ids_are_refused(tmp_path: Path, bad: object) -> None:
    with pytest.raises(BadInputError, match="eos_token_id"):
        eos_tokens(str(_folder(tmp_path, {}, {"eos_token_id": bad})), 100)


def test_generate_stops_at_the_gguf_eos_unless_told(tmp_path: Path) -> None:
    plain = write_gguf(tmp_path / "plain.gguf", "llama", llama_metadata(), llama_tensors())
    code, out, err = run_in_memory("generate", str(plain), "--tokens", "1,2,3",
                                   "--max-new-tokens", "6", "--format", "json")
    assert code == 0, err
    first = json.loads(out)["tokens"][0]
    meta = llama_metadata() | {"tokenizer.ggml.eos_token_id": first}
    stopping = write_gguf(tmp_path / "eos.gguf", "llama", meta, llama_tensors())
    code, out, err = run_in_memory("generate", str(stopping), "--tokens", "1,2,3",
                                   "--max-new-tokens", "6", "--format", "json")
    result = json.loads(out)
    assert code == 0 and result["tokens"] == [first]
    assert any("stopped at the stop token" in n for n in result["notes"])
    code, out, _ = run_in_memory("generate", str(stopping), "--tokens", "1,2,3",
                                 "--max-new-tokens", "6", "--ignore-eos", "--format", "json")
    assert code == 0 and len(json.loads(out)["tokens"]) == 6
