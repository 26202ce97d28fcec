"""A GGUF file's header, read in pure Python and bounded: metadata and tensor descriptions, never
the tensor data.

GGUF (llama.cpp's format, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md) is a
little-endian header - magic `GGUF`, version, tensor and key counts, typed key/value metadata,
then one (name, dims, type, offset) record per tensor - followed by the aligned tensor data.
Everything in the header is untrusted: every length and count is checked against what is left
of the file before anything is read or allocated, so a hostile header costs a message, not
memory. Large arrays (a 262k-token vocabulary) are skipped by length unless asked for.
`gguf` (the llama.cpp package) would parse the same header, but it turns every vocabulary
string into Python objects (7 s for SmolLM2) and imports NumPy, which `tfcli params` avoids.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from collections.abc import Collection
from dataclasses import dataclass
from math import prod
from pathlib import Path

from tfcli.checkpoints.layout import Span, layout_problem
from tfcli.core.errors import BadInputError, shown
from tfcli.core.files import open_regular

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_KEYS = 65_536  # real files carry ~40 keys
MAX_TENSORS = 1_000_000  # the largest MoE checkpoints have tens of thousands
MAX_KEY_BYTES = 65_536
MAX_DIMS = 8  # ggml tensors have at most 4
MAX_KEPT_ITEMS = 4_000_000  # items of an array read into Python (a vocabulary, its merges)

# ggml type id -> (name, elements per block, bytes per block): ggml's type traits (ggml.c)
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2),
    26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8), 29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36),
}
# The types tfcli can dequantise: those whose dequantize() gguf.quants (0.19) implements, found
# by running it on a block of each type; the others (Q8_1 and Q8_K, llama.cpp's intermediate
# types, the integers I8-I64 and F64) raise NotImplementedError there, deep inside `run`.
# (gguf-py sizes a Q8_1 block as 40 bytes, ggml as 36; the header is ggml's, as above.)
# Decided from the header: `params` lists such a tensor as a difference, `run` refuses it before
# any work. tests/checkpoints/test_gguf_faults.py checks this set against the installed gguf.
DEQUANTISABLE = frozenset({
    "F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K",
    "Q5_K", "Q6_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S",
    "IQ4_XS", "IQ1_M", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4",
})

# GGUF metadata value types: id -> struct format (scalars), or STRING / ARRAY
_SCALARS: dict[int, str] = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f",
                            7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
# the Python type an item of each metadata type is read as (typed readers check arrays by it)
ITEM_KINDS: dict[int, type] = {**{k: int for k in (0, 1, 2, 3, 4, 5, 10, 11)}, 6: float,
                               12: float, 7: bool, _STRING: str}


@dataclass(frozen=True)
class GGUFTensor:
    name: str
    ggml_type: str  # "Q4_K", "F32", ...
    shape: tuple[int, ...]  # as PyTorch would hold it: (rows, columns), GGUF's dims reversed
    offset: int  # from the start of the data section

    @property
    def n_elements(self) -> int:
        return prod(self.shape)

    @property
    def n_bytes(self) -> int:
        _, block, size = _TYPE_BY_NAME[self.ggml_type]
        return self.n_elements // block * size

    @property
    def bits_per_weight(self) -> float:
        _, block, size = _TYPE_BY_NAME[self.ggml_type]
        return 8 * size / block

    @property
    def unsupported(self) -> str | None:
        """Why tfcli cannot compute with this tensor (its ggml type), None when it can."""
        if self.ggml_type in DEQUANTISABLE:
            return None
        return (f"tensor {shown(self.name)} is stored as {self.ggml_type}, a ggml type tfcli "
                "cannot dequantise")


_TYPE_BY_NAME = {name: (tid, block, size) for tid, (name, block, size) in GGML_TYPES.items()}


def type_id(ggml_type: str) -> int:
    """ggml's numeric id of a type name ("Q4_K" -> 12)."""
    return _TYPE_BY_NAME[ggml_type][0]


@dataclass(frozen=True)
class ArrayInfo:
    """An array value left unread: its item type and length."""

    item_type: int
    length: int


@dataclass(frozen=True)
class GGUFFile:
    path: Path
    version: int
    metadata: dict[str, object]  # scalars, strings, short arrays as lists, long ones ArrayInfo
    tensors: tuple[GGUFTensor, ...]
    data_offset: int  # where the tensor data starts in the file
    file_bytes: int

    def tensor(self, name: str) -> GGUFTensor | None:
        return next((t for t in self.tensors if t.name == name), None)

    def names(self) -> set[str]:
        return {t.name for t in self.tensors}

    def error(self, message: str) -> BadInputError:
        return BadInputError(f"{self.path}: {message}")

    def unsupported(self) -> list[str]:
        """Why each tensor whose type tfcli cannot dequantise is refused, in file order."""
        return [why for t in self.tensors if (why := t.unsupported) is not None]


class _Cursor:
    """Bounded little-endian reads over the mapped file; every overrun is one BadInputError."""

    def __init__(self, data: mmap.mmap | bytes, path: Path) -> None:
        self.data, self.path, self.pos = data, path, 0

    def fail(self, message: str) -> BadInputError:
        return BadInputError(f"{self.path}: not a valid GGUF file: {message} (at byte {self.pos:,})")

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"needs {n:,} more bytes but the file ends at byte {len(self.data):,}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def scalar(self, fmt: str) -> object:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def u32(self) -> int:
        return int(self.scalar("<I"))  # type: ignore[call-overload]

    def u64(self) -> int:
        return int(self.scalar("<Q"))  # type: ignore[call-overload]

    def string(self, limit: int | None = None) -> str:
        length = self.u64()
        if limit is not None and length > limit:
            raise self.fail(f"a string of {length:,} bytes (at most {limit:,} here)")
        raw = self.take(length)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(f"a string that is not UTF-8 (byte {exc.start})") from None

    def skip_string(self) -> None:
        self.take(self.u64())

    def count(self, what: str, limit: int) -> int:
        value = self.u64()
        if value > limit:
            raise self.fail(f"{what} is {value:,} (at most {limit:,})")
        return value


def _value(cur: _Cursor, kind: int, keep: bool) -> object:
    if kind in _SCALARS:
        return cur.scalar(_SCALARS[kind])
    if kind == _STRING:
        return cur.string()
    if kind != _ARRAY:
        raise cur.fail(f"unknown metadata value type {kind}")
    item_type = cur.u32()
    # each item takes at least one byte, so no honest length exceeds what is left of the file
    length = cur.count("an array length", len(cur.data) - cur.pos)
    if item_type == _ARRAY:
        raise cur.fail("nested arrays are not supported")
    if keep and length <= MAX_KEPT_ITEMS:
        return [_value(cur, item_type, True) for _ in range(length)]
    _skip_array(cur, item_type, length)
    return ArrayInfo(item_type, length)


def _skip_array(cur: _Cursor, item_type: int, length: int) -> None:
    if item_type == _STRING:
        for _ in range(length):
            cur.skip_string()
    elif item_type in _SCALARS:
        cur.take(length * struct.calcsize(_SCALARS[item_type]))
    else:
        raise cur.fail(f"unknown array item type {item_type}")


SHORT_ARRAY = 64  # arrays up to this long are read in full (per-layer head counts, languages)


def _metadata(cur: _Cursor, n_keys: int, keep: Collection[str]) -> dict[str, object]:
    metadata: dict[str, object] = {}
    for _ in range(n_keys):
        key = cur.string(MAX_KEY_BYTES)
        kind = cur.u32()
        start = cur.pos
        value = _value(cur, kind, key in keep)
        if isinstance(value, ArrayInfo) and value.length <= SHORT_ARRAY:
            cur.pos = start  # short: read it after all
            value = _value(cur, kind, True)
        if key in metadata:
            raise cur.fail(f"metadata key {key!r} appears twice")
        metadata[key] = value
    return metadata


def _tensor(cur: _Cursor) -> GGUFTensor:
    name = cur.string(MAX_KEY_BYTES)
    n_dims = cur.u32()
    if not 1 <= n_dims <= MAX_DIMS:
        raise cur.fail(f"tensor {name!r} has {n_dims} dimensions (1 to {MAX_DIMS})")
    dims = [cur.u64() for _ in range(n_dims)]
    type_id = cur.u32()
    if type_id not in GGML_TYPES:
        raise cur.fail(f"tensor {name!r} has an unknown ggml type {type_id}")
    offset = cur.u64()
    ggml_type, block, _ = GGML_TYPES[type_id]
    if dims[0] % block:
        raise cur.fail(f"tensor {name!r}: a row of {dims[0]:,} is not whole {ggml_type} blocks "
                       f"of {block}")
    return GGUFTensor(name, ggml_type, tuple(reversed(dims)), offset)


def _check_tensors(cur: _Cursor, tensors: list[GGUFTensor], data_offset: int,
                   alignment: int) -> None:
    """Names once each, and the one layout rule (layout.py): offsets aligned, byte ranges
    disjoint and inside the file. Alignment gaps between tensors are the format's."""
    names: set[str] = set()
    for t in tensors:
        if t.name in names:
            raise cur.fail(f"tensor {t.name!r} appears twice")
        names.add(t.name)
    data_size = max(0, len(cur.data) - data_offset)
    problem = layout_problem((Span(t.name, t.offset, t.n_bytes) for t in tensors), data_size,
                             alignment)
    if problem:
        raise BadInputError(f"{cur.path}: not a valid GGUF file: {problem} "
                            f"(general.alignment {alignment})")


def is_gguf(path: str | Path) -> bool:
    """A regular file starting with the GGUF magic and not named as a YAML spec (a .yaml file
    is a spec, whatever its first bytes). Opened without blocking and checked to be a regular
    file before any read: open() of a FIFO would wait for a writer forever."""
    if str(path).endswith((".yaml", ".yml")):
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):  # ValueError: a NUL byte in the name
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, 4) == GGUF_MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


def read_gguf(path: str | Path, keep: Collection[str] = ()) -> GGUFFile:
    """The header of the GGUF file at `path`; arrays whose key is in `keep` are read in full
    (e.g. "tokenizer.ggml.tokens"), other long arrays only by length."""
    path = Path(path)
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size < 24:
            raise BadInputError(f"{path}: not a valid GGUF file: {size} bytes, shorter than "
                                "its fixed header")
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as data:
            return _parse(_Cursor(data, path), path, keep)
    finally:
        os.close(fd)


def _parse(cur: _Cursor, path: Path, keep: Collection[str]) -> GGUFFile:
    if cur.take(4) != GGUF_MAGIC:
        raise cur.fail("it does not start with 'GGUF'")
    version = cur.u32()
    if version not in SUPPORTED_VERSIONS:
        raise cur.fail(f"version {version} (supported: {', '.join(map(str, SUPPORTED_VERSIONS))})")
    n_tensors = cur.count("the tensor count", MAX_TENSORS)
    n_keys = cur.count("the metadata key count", MAX_KEYS)
    metadata = _metadata(cur, n_keys, keep)
    tensors = [_tensor(cur) for _ in range(n_tensors)]
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or isinstance(alignment, bool) or alignment < 1 \
            or alignment & (alignment - 1):
        raise cur.fail(f"general.alignment {alignment!r} is not a power of two")
    data_offset = -(-cur.pos // alignment) * alignment
    _check_tensors(cur, tensors, data_offset, alignment)
    return GGUFFile(path, version, metadata, tuple(tensors), data_offset, len(cur.data))
