"""blas_threads() switches NumPy's OpenBLAS thread count for a block and restores it."""

from __future__ import annotations

import numpy as np

from tfcli.engine.blas import blas_threads, get_blas_threads


def test_blas_threads_sets_and_restores():
    before = get_blas_threads()  # None where NumPy's BLAS is not OpenBLAS: then a no-op
    with blas_threads(1):
        assert get_blas_threads() == (None if before is None else 1)
        a = np.ones((64, 64), np.float32)
        np.testing.assert_array_equal(a @ a, np.full((64, 64), 64.0, np.float32))
    assert get_blas_threads() == before


def test_blas_threads_none_leaves_blas_alone():
    before = get_blas_threads()
    with blas_threads(None):
        assert get_blas_threads() == before



def test_idle_cores_is_within_bounds() -> None:
    from tfcli.engine.blas import idle_cores

    assert idle_cores(1) == 1
    assert 1 <= idle_cores(4, window=0.01) <= 4
