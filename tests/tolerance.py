"""Float tolerances for tests, derived from the dtype and the size of the values.

Why not `==` or a tolerance of a few ulps: the same formula computed in another order rounds
differently, and the order depends on the host. OpenBLAS picks its kernels per CPU at run time
(Haswell, Zen, SkylakeX, Sandybridge, ... or OPENBLAS_CORETYPE), and one kernel sums a dot
product in another order for another call shape (gemv for one row, gemm for many, the edge tile
of a column block, a small-matrix path). NumPy's own loops dispatch on CPU features too (AVX2,
AVX-512). So "the same product" computed two ways agrees only to rounding: one element of 155,100
one ulp off failed `rtol=1e-13` on an AVX-512 host (issue 11).

The bound (Higham, "Accuracy and Stability of Numerical Algorithms", gamma_k = k u / (1 - k u)):
a k-term sum in another association moves by up to about k rounding errors of its largest terms.
Hence, for two results that may differ by the order of their sums:

    rtol = ops * eps(dtype)   ops: how many roundings may separate them: the longest reassociated
                              sum (the inner dimension of a product), plus the elementwise steps
                              after it, times whatever a chain of layers amplifies. Each call
                              states its count and why.
    atol = rtol * scale       scale: max |expected| unless given. A sum's error is relative to its
                              terms, not to its result: an element that cancels to nearly zero
                              carries the absolute error of its neighbours, which no rtol covers.

Exact comparisons stay right where the code guarantees identity: the same call on the same shapes,
copies of arrays, integer tokens, sums of small integers.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, DTypeLike


def eps(*dtypes: DTypeLike | ArrayLike) -> float:
    """Machine epsilon of the coarsest float dtype among `dtypes` (arrays count by their dtype);
    float64's when none is a float dtype (integer references are exact)."""
    found = [np.finfo(d).eps for d in map(_dtype_of, dtypes) if np.issubdtype(d, np.floating)]
    return float(max(found, default=np.finfo(np.float64).eps))


def tolerances(expected: ArrayLike, *, ops: float, dtype: DTypeLike | ArrayLike = None,
               scale: float | None = None) -> tuple[float, float]:
    """(rtol, atol) for a result that may differ from `expected` by `ops` roundings in `dtype`
    (default: expected's own)."""
    if not ops > 0:
        raise ValueError(f"ops must be positive, got {ops!r}")
    rtol = ops * eps(expected if dtype is None else dtype)
    if scale is None:
        finite = np.abs(np.asarray(expected, dtype=np.float64))
        finite = finite[np.isfinite(finite)]
        scale = float(finite.max()) if finite.size else 0.0
    return rtol, rtol * scale


def assert_close(actual: ArrayLike, expected: ArrayLike, *, ops: float,
                 dtype: DTypeLike | ArrayLike = None, scale: float | None = None,
                 err_msg: str = "") -> None:
    """np.testing.assert_allclose with the tolerances above. dtype defaults to the coarser of
    actual's and expected's (a float32 result checked against a float64 reference is held to
    float32 rounding)."""
    rtol, atol = tolerances(expected, ops=ops, dtype=(actual, expected) if dtype is None else dtype,
                            scale=scale)
    note = f"ops={ops:g}: rtol={rtol:.3g}, atol={atol:.3g}"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol,
                               err_msg=f"{err_msg} ({note})" if err_msg else note)


def _dtype_of(value: object) -> np.dtype:
    if isinstance(value, tuple):  # (actual, expected): the coarser of the two
        dtypes = [_dtype_of(v) for v in value]
        floats = [d for d in dtypes if np.issubdtype(d, np.floating)]
        return max(floats, key=lambda d: np.finfo(d).eps) if floats else dtypes[0]
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype
    if isinstance(value, (float, int, list)):
        return np.asarray(value).dtype
    return np.dtype(value)
