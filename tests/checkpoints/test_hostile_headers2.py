"""Checkpoint headers, second sweep: each class found here failed before its fix.

- safetensors entries whose bytes overlap another tensor's, leave a gap, or leave a tail were
  read as they said (two tensors sharing bytes read each other's values); the format (and the
  safetensors library that transformers loads with) requires the tensors to tile the data;
- a checkpoint whose metadata claims a billion layers (a GGUF block_count, a config.json
  n_layer) over a file of a few tensors: `params` and `memory` listed the spec's expected tensor
  names one by one, billions of them (20 s and 3.5 GB before the 20 s timeout; 24 GB in process).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from tests.checkpoints.gguf_files import llama_metadata, llama_tensors, write_gguf
from tests.cli.guarded import run_in_memory
from tests.checkpoints.test_configs import GPT2_CONFIG, gpt2_tensors


def _refused(*args: str) -> str:
    code, out, err = run_in_memory(*args)
    assert code == 2, (args, code, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def _model(root: Path, config: dict = GPT2_CONFIG) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps(config))
    save_file(gpt2_tensors(np.random.default_rng(0)), str(root / "model.safetensors"))
    return root


def _rewrite(path: Path, edit) -> None:
    """The file with its JSON header changed by edit(header, data) -> (header, data)."""
    blob = path.read_bytes()
    (length,) = struct.unpack("<Q", blob[:8])
    header, data = edit(json.loads(blob[8:8 + length]), blob[8 + length:])
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def _first_two(header: dict) -> tuple[str, str]:
    names = sorted((k for k in header if k != "__metadata__"),
                   key=lambda k: header[k]["data_offsets"][0])
    return names[0], names[1]


def _shift_into_next(header: dict, data: bytes) -> tuple[dict, bytes]:
    """The second tensor starts 4 bytes early, inside the first's bytes; a gap at its end."""
    _, second = _first_two(header)
    start, end = header[second]["data_offsets"]
    header[second]["data_offsets"] = [start - 4, end - 4]
    return header, data


def _gap(header: dict, data: bytes) -> tuple[dict, bytes]:
    for info in header.values():
        if isinstance(info, dict) and "data_offsets" in info:
            info["data_offsets"] = [offset + 64 for offset in info["data_offsets"]]
    return header, b"\0" * 64 + data


def _tail(header: dict, data: bytes) -> tuple[dict, bytes]:
    return header, data + b"\0" * 64


@pytest.mark.parametrize(("edit", "problem"), [
    (_shift_into_next, "inside another tensor's bytes"),
    (_gap, "after 64 bytes no tensor owns"),
    (_tail, "64 bytes after the last tensor belong to no tensor"),
])
@pytest.mark.parametrize("command", [("run", "--tokens", "1,2"), ("run", "--tokens", "1", "-f", "json"),
                                     ("generate", "--tokens", "1", "--max-new-tokens", "2")])
def test_tensor_bytes_must_tile_the_data(tmp_path: Path, edit, problem: str,
                                         command: tuple[str, ...]) -> None:
    model = _model(tmp_path / "m")
    _rewrite(model / "model.safetensors", edit)
    line = _refused(command[0], str(model), *command[1:])
    assert "model.safetensors: cannot be opened as safetensors" in line and problem in line, line


def test_params_reports_the_layout_in_its_verdict(tmp_path: Path) -> None:
    model = _model(tmp_path / "m")
    _rewrite(model / "model.safetensors", _shift_into_next)
    code, out, err = run_in_memory("params", str(model), "-f", "json")
    assert code == 0, err
    (difference,) = json.loads(out)["stored_weights"]["differences"]
    assert "inside another tensor's bytes" in difference


def test_zero_size_tensors_and_an_untouched_file_still_load(tmp_path: Path) -> None:
    model = _model(tmp_path / "m")
    code, _, err = run_in_memory("run", str(model), "--tokens", "1,2", "-f", "json")
    assert code == 0, err

    def add_empty(header: dict, data: bytes) -> tuple[dict, bytes]:
        header["extra.empty"] = {"dtype": "F32", "shape": [0, 4], "data_offsets": [0, 0]}
        return header, data

    _rewrite(model / "model.safetensors", add_empty)
    code, out, err = run_in_memory("params", str(model), "-f", "json")
    assert code == 0, err
    assert "cannot be opened" not in out


# --- a billion layers claimed over a few tensors -----------------------------------------------


@pytest.fixture
def claimed_billion(tmp_path: Path) -> dict[str, Path]:
    gguf = write_gguf(tmp_path / "deep.gguf", "llama",
                      llama_metadata() | {"llama.block_count": 10**9}, llama_tensors())
    folder = _model(tmp_path / "deep", GPT2_CONFIG | {"n_layer": 10**9})
    return {"gguf": gguf, "safetensors": folder}


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kind", ["gguf", "safetensors"])
def test_a_billion_claimed_layers_are_compared_by_count(claimed_billion: dict[str, Path],
                                                        kind: str) -> None:
    path = str(claimed_billion[kind])
    code, out, err = run_in_memory("params", path, "-f", "json")
    assert code == 0, err
    (difference,) = json.loads(out)["stored_weights"]["differences"]
    assert difference.startswith("the spec has 1,000,000,000 blocks but the checkpoint stores "
                                 "only ") and difference.endswith(" tensors")
    code, out, err = run_in_memory("params", path)
    assert code == 0 and "differs: the spec has 1,000,000,000 blocks" in out, err
    for args in (("memory", path), ("memory", path, "--train"), ("perf", path, "--gpu", "h100"),
                 ("diff", path, "lesson-tiny")):
        code, _, err = run_in_memory(*args)
        assert code == 0, (args, err)


def test_a_checkpoint_with_every_block_is_still_compared_by_name(tmp_path: Path) -> None:
    tensors = llama_tensors()
    tensors.pop("blk.1.ffn_up.weight")
    path = write_gguf(tmp_path / "cut.gguf", "llama", llama_metadata(), tensors)
    code, out, err = run_in_memory("params", str(path), "-f", "json")
    assert code == 0, err
    assert json.loads(out)["stored_weights"]["differences"] == [
        "missing blk.1.ffn_up.weight [24, 16]"]
