"""Reading tensors from a model directory's safetensors files, single or sharded.

A safetensors file is an 8-byte little-endian header length, a JSON header mapping each tensor
to its dtype, shape and byte offsets, then the data. A checkpoint is downloaded input, so every
header is checked before any data is read: its length against the file, its JSON strictly, each
entry's offsets inside the data and its byte count against dtype x shape. Tensors are then read
straight from those offsets into NumPy's own memory (np.fromfile). NumPy has no bfloat16 and no
float8, so those are decoded exactly to float32 from their bits; integer and boolean tensors are
refused (a weight is never one: they are quantized or index data).
"""

from __future__ import annotations

import math
import os
import stat
import struct
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any

import numpy as np

from tfcli.arrays import Array
from tfcli.checkpoints.configs import parse_json, read_bounded, strict_json
from tfcli.checkpoints.fields import shown
from tfcli.errors import BadInputError


SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
MAX_INDEX_BYTES = 16 * 2**20  # a 400-shard index of a 70B model is ~100 KiB
MAX_HEADER_BYTES = 100 * 2**20  # the safetensors library's own limit
HEADER_LENGTH_BYTES = 8  # little-endian u64: the JSON header's size, first in every file

# bytes per element of every safetensors dtype; the float ones tfcli reads are in READERS
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1,
               "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1,
               "BOOL": 1}
NUMPY_FLOATS = {"F64": "<f8", "F32": "<f4", "F16": "<f2"}


@dataclass(frozen=True)
class Entry:
    """One tensor of a safetensors file: where its bytes are and what they hold."""

    file: Path
    dtype: str
    shape: tuple[int, ...]
    offset: int  # absolute byte offset of the data in `file`
    nbytes: int


# --- float8 / bfloat16 decoding ---------------------------------------------------------------


@cache
def float8_table(exponent_bits: int, finite_only: bool) -> Array:
    """The float32 value of each of the 256 float8 bit patterns (OCP FP8: E4M3 has bias 7, no
    infinities and NaN only at S.1111.111; E5M2 has bias 15 and IEEE infinities and NaNs)."""
    mantissa_bits = 7 - exponent_bits
    bias = 2 ** (exponent_bits - 1) - 1
    top = 2**exponent_bits - 1
    table = np.empty(256, np.float32)
    for bits in range(256):
        sign = -1.0 if bits & 0x80 else 1.0
        e, m = (bits >> mantissa_bits) & top, bits & (2**mantissa_bits - 1)
        if e == top and (not finite_only or m == 2**mantissa_bits - 1):
            table[bits] = np.nan if (m or finite_only) else sign * np.inf
        elif e == 0:  # subnormal
            table[bits] = sign * m * 2.0 ** (1 - bias - mantissa_bits)
        else:
            table[bits] = sign * (1 + m / 2**mantissa_bits) * 2.0 ** (e - bias)
    return table


def _raw(entry: Entry, dtype: str) -> Array:
    count = entry.nbytes // np.dtype(dtype).itemsize
    return np.fromfile(entry.file, dtype=dtype, count=count, offset=entry.offset)


def _read_bf16(entry: Entry) -> Array:
    # bfloat16 is the top half of a float32's bits; written into an array NumPy owns
    out = np.empty(entry.nbytes // 2, np.float32)
    np.left_shift(_raw(entry, "<u2"), 16, out=out.view(np.uint32), dtype=np.uint32)
    return out


READERS = {
    **{name: (lambda entry, d=d: _raw(entry, d)) for name, d in NUMPY_FLOATS.items()},
    "BF16": _read_bf16,
    "F8_E4M3": lambda entry: float8_table(4, True)[_raw(entry, "u1")],
    "F8_E5M2": lambda entry: float8_table(5, False)[_raw(entry, "u1")],
}


# --- headers ----------------------------------------------------------------------------------


def _header_length(prefix: bytes, file_size: int) -> int:
    """The header length a file starts with, checked against the file's size before anything
    reads that many bytes: in a file of junk it is any 64-bit number (MemoryError, not a message)."""
    if len(prefix) < HEADER_LENGTH_BYTES:
        raise ValueError(f"{file_size} bytes, shorter than the {HEADER_LENGTH_BYTES}-byte header length")
    (length,) = struct.unpack("<Q", prefix)
    if length > min(file_size - HEADER_LENGTH_BYTES, MAX_HEADER_BYTES):
        raise ValueError(f"header length {length} exceeds the file's {file_size} bytes"
                         if length > file_size - HEADER_LENGTH_BYTES else
                         f"header length {length} exceeds {MAX_HEADER_BYTES // 2**20} MiB")
    return length


def _read_header(file: Path) -> tuple[int, int, object]:
    """(data start, data size, parsed JSON header) of a regular file."""
    try:
        with file.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            length = _header_length(f.read(HEADER_LENGTH_BYTES), size)
            header = strict_json(f.read(length))
    except (OSError, ValueError) as exc:  # json's errors (and UnicodeDecodeError) are ValueErrors
        raise BadInputError(f"{file}: not a safetensors file ({exc})") from None
    start = HEADER_LENGTH_BYTES + length
    return start, size - start, header


def _is_size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _entry_problem(info: object, data_size: int) -> str | None:
    """What is wrong with one header entry, None when its bytes are where it says."""
    if not isinstance(info, dict):
        return f"entry is {shown(info)}, not an object"
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if not isinstance(dtype, str):
        return f"dtype {shown(dtype)} is not a string"
    if not (isinstance(shape, list) and len(shape) <= 8 and all(map(_is_size, shape))):
        return f"shape {shown(shape)} is not a list of sizes"
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_size, offsets))):
        return f"data_offsets {shown(offsets)} are not two byte offsets"
    start, end = offsets
    if not start <= end <= data_size:
        return f"data_offsets {offsets} lie outside the file's {data_size:,} data bytes"
    if dtype in DTYPE_BYTES and end - start != math.prod(shape) * DTYPE_BYTES[dtype]:
        return f"{end - start:,} bytes do not hold a {dtype} tensor of shape {shape}"
    return None


def read_entries(file: Path) -> dict[str, Entry]:
    """Every tensor of a safetensors file, each entry checked (see the module docstring)."""
    data_start, data_size, header = _read_header(file)
    if not isinstance(header, dict):
        raise BadInputError(f"{file}: not a safetensors file (header is not a JSON object)")
    header.pop("__metadata__", None)
    entries = {}
    for name, info in header.items():
        problem = _entry_problem(info, data_size)
        if problem:
            raise BadInputError(f"{file}: cannot be opened as safetensors (tensor {shown(name)}: "
                                f"{problem})")
        start, end = info["data_offsets"]
        entries[name] = Entry(file, info["dtype"], tuple(info["shape"]), data_start + start, end - start)
    return entries


# --- the sharded index ------------------------------------------------------------------------


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)  # follows symlinks (the Hub cache's blobs)
    except OSError:
        return False


def _shard_path(directory: Path, index: Path, name: object) -> Path:
    """A shard named by the index, confined to the model directory. The check is on the name,
    not the resolved path: the Hub's cache links every file to a blob outside the snapshot
    directory, while a name like '../x' or '/etc/passwd' comes from the (downloaded) index."""
    if not isinstance(name, str) or not name or "\x00" in name:
        raise BadInputError(f"{index}: weight_map value {shown(name)} is not a file name")
    parts = PurePosixPath(name).parts
    if PurePosixPath(name).is_absolute() or ".." in parts or "\\" in name:
        raise BadInputError(f"{index}: shard {shown(name)} is outside the model directory")
    path = directory / name
    try:
        info = path.stat()  # follows symlinks (the Hub cache's blobs)
    except FileNotFoundError:
        raise BadInputError(f"{index}: shard {shown(name)} is missing") from None
    except OSError as exc:  # a 5,000-character name (ENAMETOOLONG), a loop of links, EACCES
        raise BadInputError(f"{index}: shard {shown(name)} cannot be read "
                            f"({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise BadInputError(f"{index}: shard {shown(name)} is not a regular file")
    return path


def _weight_map(index: Path) -> dict[str, object]:
    data = parse_json(read_bounded(index, MAX_INDEX_BYTES), index)
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict):
        raise BadInputError(f"{index}: not a valid safetensors index (no 'weight_map' object "
                            "mapping tensor names to shard files)")
    return weight_map


def _sharded_entries(directory: Path, index: Path) -> dict[str, Entry]:
    weight_map = _weight_map(index)
    shards = {name: _shard_path(directory, index, file) for name, file in weight_map.items()}
    headers = {file: read_entries(file) for file in sorted(set(shards.values()))}
    entries = {}
    for name, file in shards.items():
        if name not in headers[file]:
            raise BadInputError(f"{index}: tensor {shown(name)} is mapped to {file.name}, which "
                                "does not hold it")
        entries[name] = headers[file][name]
    return entries


def checkpoint_entries(directory: Path) -> dict[str, Entry]:
    """Tensor name -> Entry, from model.safetensors or the sharded index."""
    single, index = directory / SINGLE_FILE, directory / INDEX_FILE
    if index.exists():
        return _sharded_entries(directory, index)
    if single.exists():
        if not _is_regular(single):
            raise BadInputError(f"{single}: not a regular file")
        return read_entries(single)
    raise BadInputError(
        f"{directory}: no {SINGLE_FILE} or {INDEX_FILE} (only safetensors checkpoints are "
        "supported; pytorch_model.bin can be converted with transformers' save_pretrained)"
    )


class TensorSource:
    """Name -> array access over a model directory's safetensors files; use as a context manager
    (files are opened per read, so there is nothing to close; kept for the callers' shape)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.entries = checkpoint_entries(self.directory)

    def __enter__(self) -> TensorSource:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None

    @property
    def names(self) -> list[str]:
        return sorted(self.entries)

    def shape(self, name: str) -> tuple[int, ...]:
        return self.entries[name].shape

    def get(self, name: str, dtype: np.dtype | Any) -> Array:
        """The tensor `name`, converted to `dtype`."""
        entry = self.entries[name]
        reader = READERS.get(entry.dtype)
        if reader is None:
            kind = "an integer or boolean" if entry.dtype in DTYPE_BYTES else "an unsupported"
            raise BadInputError(
                f"{entry.file}: tensor {shown(name)} has dtype {shown(entry.dtype)}, {kind} type: "
                "a weight must be floating point (quantized checkpoints are not supported)")
        try:
            array = reader(entry)  # 1-D, in memory NumPy owns
        except OSError as exc:
            raise BadInputError(f"{entry.file}: cannot be read ({exc.strerror})") from None
        if array.dtype != dtype:
            array = array.astype(dtype)
        # in place rather than reshape(): a view would make the loader copy it (loader._owned)
        array.shape = entry.shape
        return array
