"""safetensors headers of a model directory (single file or sharded), read and checked without
reading any tensor data or importing NumPy: `tfcli params DIR` reports what a checkpoint stores
from these alone, and the loader (tensors.py) reads tensors from the same entries.

A safetensors file is an 8-byte little-endian header length, a JSON header mapping each tensor
to its dtype, shape and byte offsets, then the data. A checkpoint is downloaded input, so every
header is checked before any data is read: its length against the file, its JSON strictly, each
entry's offsets inside the data and its byte count against dtype x shape, and the entries
together by the one layout rule of every checkpoint format (layout.py: disjoint, in order,
covering the data exactly, as the safetensors library requires).
"""

from __future__ import annotations

import math
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tfcli.checkpoints.configs import parse_json, read_bounded, strict_json
from tfcli.checkpoints.fields import shown
from tfcli.checkpoints.layout import Span, layout_problem
from tfcli.core.errors import BadInputError

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
MAX_INDEX_BYTES = 16 * 2**20  # a 400-shard index of a 70B model is ~100 KiB
MAX_HEADER_BYTES = 100 * 2**20  # the safetensors library's own limit
HEADER_LENGTH_BYTES = 8  # little-endian u64: the JSON header's size, first in every file

# bytes per element of every safetensors dtype; the float ones tfcli reads are in READERS
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1,
               "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1,
               "BOOL": 1}


@dataclass(frozen=True)
class Entry:
    """One tensor of a safetensors file: where its bytes are and what they hold."""

    file: Path
    dtype: str
    shape: tuple[int, ...]
    offset: int  # absolute byte offset of the data in `file`
    nbytes: int


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
    problem = layout_problem((Span(name, e.offset - data_start, e.nbytes)
                              for name, e in entries.items()), data_size, covered=True)
    if problem:
        raise BadInputError(f"{file}: cannot be opened as safetensors ({problem})")
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
