"""Shard indexes, safetensors headers and tensor dtypes: downloaded input, checked before use.

Files are written byte by byte (`safetensors_bytes`) so that every malformed header, every dtype
(float8 included, which NumPy cannot hold) and every hostile index is one edit from a valid one.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.checkpoints.test_configs import GPT2_CONFIG, gpt2_tensors, write_config
from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.checkpoints.safetensors_header import _header_length
from tfcli.checkpoints.tensors import float8_table
from tfcli.core.errors import BadInputError

NAME = "transformer.ln_f.bias"  # a (8,) float32 tensor of the GPT-2 fixture


def safetensors_bytes(entries: dict[str, tuple[str, list[int], bytes]],
                      header: dict | None = None) -> bytes:
    """A safetensors file from (dtype, shape, raw bytes) per tensor, or from a given header."""
    data, offsets = b"", {}
    for name, (dtype, shape, raw) in entries.items():
        offsets[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(offsets if header is None else header).encode()
    return struct.pack("<Q", len(text)) + text + data


def _entries(tensors: dict[str, np.ndarray]) -> dict[str, tuple[str, list[int], bytes]]:
    return {n: ("F32", list(a.shape), a.astype("<f4").tobytes()) for n, a in tensors.items()}


@pytest.fixture
def tensors() -> dict[str, np.ndarray]:
    return gpt2_tensors(np.random.default_rng(0))


def _model(path: Path, entries: dict, config: dict = GPT2_CONFIG) -> Path:
    write_config(path, config)
    (path / "model.safetensors").write_bytes(safetensors_bytes(entries))
    return path


def _refused(path: Path) -> str:
    with pytest.raises(BadInputError) as info:
        load_weights(path, spec_from_config_dir(path))
    message = info.value.message
    assert "\n" not in message and len(message) < 400 and message.isprintable()
    return message


def _sharded(path: Path, tensors: dict, weight_map: object) -> Path:
    write_config(path, GPT2_CONFIG)
    (path / "shard.safetensors").write_bytes(safetensors_bytes(_entries(tensors)))
    (path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return path


# --- the shard index ----------------------------------------------------------------------------


@pytest.mark.parametrize(("weight_map", "problem"), [
    (["shard.safetensors"], "no 'weight_map' object"),
    ("shard.safetensors", "no 'weight_map' object"),
    ({NAME: 5}, "weight_map value 5 is not a file name"),
    ({NAME: None}, "weight_map value None is not a file name"),
    ({NAME: "../x.safetensors"}, "shard '../x.safetensors' is outside the model directory"),
    ({NAME: "/etc/passwd"}, "shard '/etc/passwd' is outside the model directory"),
    ({NAME: "sub/../../shard.safetensors"}, "is outside the model directory"),
    ({NAME: "absent.safetensors"}, "shard 'absent.safetensors' is missing"),
    ({"not.in.the.shard": "shard.safetensors"},
     "tensor 'not.in.the.shard' is mapped to shard.safetensors, which does not hold it"),
    ({"\x1b[2J" * 50: "shard.safetensors"}, r"tensor '\x1b[2J\x1b[2J"),
])
def test_a_bad_index_is_one_message(tmp_path: Path, tensors: dict, weight_map: object,
                                    problem: str) -> None:
    path = _sharded(tmp_path / "m", tensors, weight_map)
    message = _refused(path)
    assert message.startswith(f"{path / 'model.safetensors.index.json'}: ") and problem in message


def test_index_top_level_and_duplicates(tmp_path: Path, tensors: dict) -> None:
    path = _sharded(tmp_path / "m", tensors, {})
    index = path / "model.safetensors.index.json"
    index.write_text("[]")
    assert "no 'weight_map' object" in _refused(path)
    index.write_text('{"weight_map": {"a": "shard.safetensors", "a": "other.safetensors"}}')
    assert "key 'a' appears twice" in _refused(path)


def test_fifos_are_never_opened(tmp_path: Path, tensors: dict) -> None:
    """A FIFO nobody writes to would block a reader forever."""
    path = _sharded(tmp_path / "m", tensors, {n: "fifo.safetensors" for n in tensors})
    os.mkfifo(path / "fifo.safetensors")
    assert "shard 'fifo.safetensors' is not a regular file" in _refused(path)
    (path / "model.safetensors.index.json").unlink()
    os.mkfifo(path / "model.safetensors.index.json")
    assert "not a regular file" in _refused(path)
    single = write_config(tmp_path / "single", GPT2_CONFIG)
    os.mkfifo(single / "model.safetensors")
    assert "model.safetensors: not a regular file" in _refused(single)


def test_hub_cache_symlinks_to_blobs_outside_the_directory_load(tmp_path: Path, tensors: dict) -> None:
    blob = tmp_path / "blobs" / "0123abcd"
    blob.parent.mkdir()
    blob.write_bytes(safetensors_bytes(_entries(tensors)))
    snapshot = write_config(tmp_path / "snapshots" / "main", GPT2_CONFIG)
    (snapshot / "model-00001-of-00001.safetensors").symlink_to(blob)
    index = {"weight_map": {n: "model-00001-of-00001.safetensors" for n in tensors}}
    (snapshot / "model.safetensors.index.json").write_text(json.dumps(index))
    weights = load_weights(snapshot, spec_from_config_dir(snapshot))
    np.testing.assert_array_equal(weights.decoder.final_norm.bias, tensors[NAME])


# --- safetensors headers ------------------------------------------------------------------------


def _with_header_entry(tensors: dict, info: object) -> dict:
    header = {n: {"dtype": "F32", "shape": list(a.shape), "data_offsets": [0, a.nbytes]}
              for n, a in tensors.items()}
    header[NAME] = info
    return header


@pytest.mark.parametrize(("info", "problem"), [
    ({"dtype": "F32", "shape": [8], "data_offsets": [0, 10**12]}, "lie outside the file's"),
    ({"dtype": "F32", "shape": [8], "data_offsets": [32, 0]}, "lie outside the file's"),
    ({"dtype": "F32", "shape": [8], "data_offsets": [0, 16]}, "16 bytes do not hold a F32 tensor of shape [8]"),
    ({"dtype": "F32", "shape": [True, 8], "data_offsets": [0, 32]}, "is not a list of sizes"),
    ({"dtype": "F32", "shape": [-8], "data_offsets": [0, 32]}, "is not a list of sizes"),
    ({"dtype": "F32", "shape": [8], "data_offsets": [0]}, "are not two byte offsets"),
    ({"dtype": "F32", "shape": [8], "data_offsets": [0, 1 + 10**30]}, "are not two byte offsets"),
    ({"dtype": 4, "shape": [8], "data_offsets": [0, 32]}, "dtype 4 is not a string"),
    ([1, 2], "entry is [1, 2], not an object"),
])
def test_a_bad_header_entry_is_named(tmp_path: Path, tensors: dict, info: object, problem: str) -> None:
    path = write_config(tmp_path / "m", GPT2_CONFIG)
    data = b"\0" * (4 * 1024)
    raw = safetensors_bytes({}, _with_header_entry(tensors, info)) + data
    (path / "model.safetensors").write_bytes(raw)
    message = _refused(path)
    assert f"cannot be opened as safetensors (tensor '{NAME}': " in message and problem in message


def test_header_length_is_bounded_before_reading() -> None:
    with pytest.raises(ValueError, match="exceeds the file's"):
        _header_length(struct.pack("<Q", 2**63), 1000)
    with pytest.raises(ValueError, match="exceeds 100 MiB"):
        _header_length(struct.pack("<Q", 200 * 2**20), 300 * 2**20)


def test_header_with_duplicate_tensor_names(tmp_path: Path) -> None:
    path = write_config(tmp_path / "m", GPT2_CONFIG)
    text = b'{"a": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}, "a": {}}'
    (path / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + b"\0" * 4)
    assert "not a safetensors file (key 'a' appears twice" in _refused(path)


# --- dtypes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("exponent_bits", "finite_only", "torch_dtype"), [
    (4, True, "float8_e4m3fn"), (5, False, "float8_e5m2")])
def test_float8_tables_match_torch_for_every_bit_pattern(torch: ModuleType, exponent_bits: int,
                                                         finite_only: bool, torch_dtype: str) -> None:
    # a decode table, not arithmetic: each of the 256 values is exact, so equality is the test
    expected = torch.arange(256, dtype=torch.uint8).view(getattr(torch, torch_dtype)).float().numpy()
    np.testing.assert_array_equal(float8_table(exponent_bits, finite_only), expected)


@pytest.mark.parametrize(("dtype", "torch_dtype"), [
    ("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2"), ("BF16", "bfloat16"),
    ("F16", "float16")])
def test_low_precision_weights_load_as_their_exact_values(torch: ModuleType, tmp_path: Path,
                                                          tensors: dict, dtype: str,
                                                          torch_dtype: str) -> None:
    low = torch.from_numpy(tensors["transformer.h.0.mlp.c_fc.weight"]).to(getattr(torch, torch_dtype))
    raw = low.view(torch.uint8).numpy().tobytes() if low.element_size() == 1 else \
        low.view(torch.int16).numpy().astype("<i2").tobytes()
    entries = _entries(tensors) | {"transformer.h.0.mlp.c_fc.weight": (dtype, list(low.shape), raw)}
    path = _model(tmp_path / "m", entries)
    weights = load_weights(path, spec_from_config_dir(path))
    # widening to float32 is exact, so the loaded values equal torch's own widening
    np.testing.assert_array_equal(weights.decoder.blocks[0].ffn.w_up, low.float().numpy())


@pytest.mark.parametrize("dtype", ["I64", "I8", "U8", "BOOL", "F4"])
def test_integer_bool_or_unknown_weights_are_refused_by_name(tmp_path: Path, tensors: dict,
                                                             dtype: str) -> None:
    entries = _entries(tensors) | {NAME: (dtype, [8], b"\0" * 8 * {"I64": 8}.get(dtype, 1))}
    message = _refused(_model(tmp_path / "m", entries))
    assert f"tensor '{NAME}' has dtype '{dtype}'" in message and "must be floating point" in message


def test_integer_and_bool_buffers_that_are_not_weights_are_skipped(tmp_path: Path, tensors: dict) -> None:
    mask = ("BOOL", [1, 1, 8, 8], b"\1" * 64)  # GPT-2's old causal-mask buffer
    path = _model(tmp_path / "m", _entries(tensors) | {"transformer.h.0.attn.bias": mask})
    assert load_weights(path, spec_from_config_dir(path)).decoder.blocks[0].attn.bo is not None


def test_non_finite_weights_load_without_crashing(tmp_path: Path, tensors: dict) -> None:
    tensors[NAME] = np.array([np.nan, np.inf, -np.inf, 0, 1, 2, 3, 4], np.float32)
    path = _model(tmp_path / "m", _entries(tensors))
    bias = load_weights(path, spec_from_config_dir(path)).decoder.final_norm.bias
    assert np.isnan(bias[0]) and np.isposinf(bias[1]) and np.isneginf(bias[2])


def test_a_spec_with_billions_of_blocks_is_refused_before_expanding_names(tmp_path: Path,
                                                                          tensors: dict) -> None:
    path = _model(tmp_path / "m", _entries(tensors), GPT2_CONFIG | {"n_layer": 2**31 - 1})
    assert "the spec has 2,147,483,647 blocks but the checkpoint holds only 16 tensors" in _refused(path)
