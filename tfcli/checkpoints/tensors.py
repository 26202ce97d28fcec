"""Reading tensors from a model directory's safetensors files, single or sharded.

Every header is read and checked first (safetensors_header.py, before any data). Tensors are then read
straight from those offsets into NumPy's own memory (np.fromfile). NumPy has no bfloat16 and no
float8, so those are decoded exactly to float32 from their bits; integer and boolean tensors are
refused (a weight is never one: they are quantized or index data).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from tfcli.core.arrays import Array
from tfcli.checkpoints import mxfp4
from tfcli.checkpoints.fields import shown
from tfcli.checkpoints.safetensors_header import DTYPE_BYTES, Entry, checkpoint_entries
from tfcli.core.errors import BadInputError


NUMPY_FLOATS = {"F64": "<f8", "F32": "<f4", "F16": "<f2"}


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


class TensorSource:
    """Name -> array access over a model directory's safetensors files; use as a context manager
    (files are opened per read, so there is nothing to close; kept for the callers' shape)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.entries = checkpoint_entries(self.directory)
        # MXFP4 tensors (gpt-oss's experts): `X_blocks` + `X_scales` read as the one tensor X
        self.packed = mxfp4.pairs({n: (e.dtype, e.shape) for n, e in self.entries.items()})

    def __enter__(self) -> TensorSource:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None

    @property
    def names(self) -> list[str]:
        parts = {part for pair in self.packed.values() for part in pair}
        return sorted({*self.entries, *self.packed} - parts)

    def shape(self, name: str) -> tuple[int, ...]:
        if name in self.packed:
            return mxfp4.dequantized_shape(self.entries[self.packed[name][0]].shape)
        return self.entries[name].shape

    def get(self, name: str, dtype: np.dtype | Any) -> Array:
        """The tensor `name`, converted to `dtype` (an MXFP4 pair dequantised)."""
        if name in self.packed:
            return self._dequantized(name, dtype)
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

    def _dequantized(self, name: str, dtype: np.dtype | Any) -> Array:
        blocks, scales = (self.entries[part] for part in self.packed[name])
        try:
            return mxfp4.dequantize(_raw(blocks, "u1").reshape(blocks.shape),
                                    _raw(scales, "u1").reshape(scales.shape), dtype)
        except OSError as exc:
            raise BadInputError(f"{blocks.file}: cannot be read ({exc.strerror})") from None
        except ValueError as exc:  # a NaN scale
            raise BadInputError(f"{scales.file}: tensor {shown(name + '_scales')}: "
                                f"{exc}") from None

