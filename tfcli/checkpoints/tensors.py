"""Reading tensors from a model directory's safetensors files, single or sharded.

Tensors are read one at a time through `safetensors.safe_open(framework="numpy")`. NumPy has no
bfloat16, so BF16 tensors are read from the file's raw bytes (the format is an 8-byte header
length, a JSON header with byte offsets, then the data) and widened exactly to float32.
"""

from __future__ import annotations

import json
import struct
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
from safetensors import safe_open

from tfcli.errors import BadInputError

Array = np.ndarray

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"


def shard_map(directory: Path) -> dict[str, Path]:
    """Tensor name -> the file holding it, from model.safetensors or the sharded index."""
    single, index = directory / SINGLE_FILE, directory / INDEX_FILE
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise BadInputError(f"{index}: not a valid safetensors index ({exc})") from None
        files = {name: directory / str(file) for name, file in weight_map.items()}
        for file in sorted(set(files.values())):
            if not file.is_file():
                raise BadInputError(f"{index}: shard {file.name} is missing")
        return files
    if single.is_file():
        return {name: single for name in _header(single)}
    raise BadInputError(
        f"{directory}: no {SINGLE_FILE} or {INDEX_FILE} (only safetensors checkpoints are "
        "supported; pytorch_model.bin can be converted with transformers' save_pretrained)"
    )


HEADER_LENGTH_BYTES = 8  # little-endian u64: the JSON header's size, first in every file


def _layout(file: Path) -> tuple[int, dict[str, Any]]:
    """Where a safetensors file's data starts, and its JSON header (without __metadata__)."""
    try:
        with file.open("rb") as f:
            length = _header_length(f.read(HEADER_LENGTH_BYTES), file.stat().st_size)
            header = json.loads(f.read(length))
    except (OSError, ValueError) as exc:  # json's errors (and UnicodeDecodeError) are ValueErrors
        raise BadInputError(f"{file}: not a safetensors file ({exc})") from None
    if not isinstance(header, dict):
        raise BadInputError(f"{file}: not a safetensors file (header is not a JSON object)")
    header.pop("__metadata__", None)
    return HEADER_LENGTH_BYTES + length, header


def _header_length(prefix: bytes, file_size: int) -> int:
    """The header length a file starts with, checked against the file's size before anything
    reads that many bytes: in a file of junk it is any 64-bit number (MemoryError, not a message)."""
    if len(prefix) < HEADER_LENGTH_BYTES:
        raise ValueError(f"{file_size} bytes, shorter than the {HEADER_LENGTH_BYTES}-byte header length")
    (length,) = struct.unpack("<Q", prefix)
    if length > file_size - HEADER_LENGTH_BYTES:
        raise ValueError(f"header length {length} exceeds the file's {file_size} bytes")
    return length


def _header(file: Path) -> dict[str, Any]:
    return _layout(file)[1]


def _read_bf16(file: Path, data_start: int, info: dict[str, Any]) -> Array:
    """A BF16 tensor as float32: bfloat16 is the top half of a float32's bits."""
    start, end = info["data_offsets"]
    raw = np.fromfile(file, dtype="<u2", count=(end - start) // 2, offset=data_start + start)
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(info["shape"])


class TensorSource:
    """Name -> array access over a model directory's safetensors files; use as a context manager."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.files = shard_map(self.directory)
        self._stack = ExitStack()
        self._open: dict[Path, Any] = {}
        self._layouts: dict[Path, tuple[int, dict[str, Any]]] = {}

    def __enter__(self) -> TensorSource:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stack.close()

    @property
    def names(self) -> list[str]:
        return sorted(self.files)

    def _handle(self, name: str) -> Any:
        file = self.files[name]
        if file not in self._open:
            try:
                self._open[file] = self._stack.enter_context(safe_open(str(file), framework="numpy"))
            except Exception as exc:  # safetensors raises its own SafetensorError
                raise BadInputError(f"{file}: cannot be opened as safetensors ({exc})") from None
        return self._open[file]

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self._handle(name).get_slice(name).get_shape())

    def get(self, name: str, dtype: np.dtype) -> Array:
        """The tensor `name`, converted to `dtype`."""
        handle = self._handle(name)
        if handle.get_slice(name).get_dtype() == "BF16":
            file = self.files[name]
            if file not in self._layouts:
                self._layouts[file] = _layout(file)
            data_start, header = self._layouts[file]
            array = _read_bf16(file, data_start, header[name])
        else:
            array = handle.get_tensor(name)
        return np.ascontiguousarray(array, dtype=dtype)
