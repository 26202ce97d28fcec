"""MXFP4 (OCP Microscaling Formats v1.0, section 5.3: MXFP4), the packing of gpt-oss's experts:
each block of 32 weights is 32 E2M1 values (4 bits: sign, 2 exponent bits, 1 mantissa bit; no
inf or NaN) sharing one E8M0 scale (an exponent byte, bias 127, 0xFF NaN). A checkpoint stores
`X_blocks` (..., rows, G, 16) uint8 - two values a byte, the low nibble first - and `X_scales`
(..., rows, G) uint8; the weight row is G * 32 wide. transformers' dequantisation
(integrations/mxfp4.convert_moe_packed_tensors) then swaps the last two axes: gate_up_proj's
blocks (E, 2 d_ff, d / 32, 16) become its (E, d, 2 d_ff) parameter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfcli.core.arrays import Array

BLOCK = 32  # weights per scale
SUFFIXES = ("_blocks", "_scales")
# E2M1 by code: 0 to 7 positive (0, 0.5 subnormal, then 1, 1.5, 2, 3, 4, 6), 8 to 15 negative.
# NumPy is imported by dequantize only: `tfcli params` reads the pairs' headers without it.
E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
SCALE_BIAS = 127
SCALE_NAN = 0xFF


def dequantized_shape(blocks: tuple[int, ...]) -> tuple[int, ...]:
    """The parameter's shape from the blocks' (..., rows, G, 16): (..., G * 32, rows)."""
    *prefix, rows, groups, _ = blocks
    return (*prefix, groups * BLOCK, rows)


def pair_problem(blocks: tuple[int, ...], scales: tuple[int, ...]) -> str | None:
    """Why `blocks` and `scales` shapes do not form one MXFP4 tensor, or None."""
    if len(blocks) < 3 or blocks[-1] != BLOCK // 2:
        return f"blocks {list(blocks)} must end in (rows, groups, 16)"
    if scales != blocks[:-1]:
        return f"scales {list(scales)} must be the blocks' {list(blocks[:-1])}"
    return None


def pairs(tensors: Mapping[str, tuple[str, tuple[int, ...]]]) -> dict[str, tuple[str, str]]:
    """name -> (its _blocks, its _scales) for each uint8 pair of `tensors` (name -> (dtype,
    shape)) whose shapes make one MXFP4 tensor; a pair of other dtypes or shapes is left as two
    tensors (refused as integers, or unexpected, by name)."""
    found: dict[str, tuple[str, str]] = {}
    blocks_suffix, scales_suffix = SUFFIXES
    for name, (dtype, shape) in tensors.items():
        if not name.endswith(blocks_suffix):
            continue
        base = name[: -len(blocks_suffix)]
        scales = tensors.get(base + scales_suffix)
        if (scales is not None and dtype == scales[0] == "U8"
                and pair_problem(shape, scales[1]) is None):
            found[base] = (name, base + scales_suffix)
    return found


def dequantize(blocks: Array, scales: Array, dtype: Any = "float32") -> Array:
    """blocks (..., rows, G, 16) uint8 and scales (..., rows, G) uint8 -> (..., G * 32, rows)
    in `dtype`: code c of each nibble is E2M1[c] * 2^(scale - 127). Raises ValueError on a NaN
    scale (0xFF)."""
    import numpy as np
    if np.any(scales == SCALE_NAN):
        raise ValueError("an E8M0 scale is 0xFF (NaN)")
    work = np.float64 if np.dtype(dtype) == np.float64 else np.float32  # 6 * 2^127 > float32 max
    table = np.array(E2M1, dtype=work)
    values = np.empty((*blocks.shape[:-1], BLOCK), dtype=work)  # (..., rows, G, 32)
    values[..., 0::2] = table[blocks & 0x0F]  # the low nibble is the first value of the byte
    values[..., 1::2] = table[blocks >> 4]
    exponent = scales.astype(np.int32) - SCALE_BIAS  # (..., rows, G)
    np.ldexp(values, exponent[..., None], out=values)  # exact: a power of two
    rows = values.reshape(*blocks.shape[:-2], -1)  # (..., rows, G * 32)
    return np.ascontiguousarray(rows.swapaxes(-1, -2), dtype=dtype)  # (..., G * 32, rows)
