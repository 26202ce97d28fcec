"""tests/tolerance.py: the tolerance follows the dtype, the stated roundings and the scale of the
values, so near-zero elements pass on their neighbours' absolute error and real errors still fail."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tolerance import assert_close, eps, tolerances


def test_rtol_is_ops_times_the_coarser_dtypes_eps():
    f32, f64 = np.ones(3, np.float32), np.ones(3)
    assert eps(f64) == np.finfo(np.float64).eps
    assert eps(f32, f64) == np.finfo(np.float32).eps
    assert eps(np.arange(3)) == np.finfo(np.float64).eps  # an integer reference is exact
    rtol, atol = tolerances(np.array([-4.0, 0.5]), ops=10)
    assert rtol == 10 * np.finfo(np.float64).eps and atol == 4 * rtol


def test_a_near_zero_element_passes_on_the_absolute_error_of_its_neighbours():
    expected = np.array([10.0, 1e-20])  # the second cancelled to ~0: its error is ~1e-15
    assert_close(expected + [0.0, 1e-15], expected, ops=4)
    with pytest.raises(AssertionError):  # a bare rtol of the same size fails it
        np.testing.assert_allclose(expected + [0.0, 1e-15], expected, rtol=4 * eps(expected))


def test_more_than_the_stated_roundings_fails():
    expected = np.linspace(1, 2, 5)
    assert_close(expected * (1 + 8 * eps(expected)), expected, ops=16)
    with pytest.raises(AssertionError, match="ops=2"):
        assert_close(expected * (1 + 8 * eps(expected)), expected, ops=2)  # allows 2 (2 + e) eps


def test_a_float32_result_is_held_to_float32_rounding_not_float64s():
    expected = np.linspace(1, 2, 7)  # sixths: not exact in float32
    actual = expected.astype(np.float32)
    assert_close(actual, expected, ops=1)
    with pytest.raises(AssertionError):
        assert_close(actual, expected, ops=1, dtype=np.float64)


def test_nan_against_a_number_fails_and_ops_must_be_positive():
    with pytest.raises(AssertionError):
        assert_close(np.array([np.nan, 1.0]), np.array([1.0, 1.0]), ops=1e6)
    with pytest.raises(ValueError):
        tolerances(np.ones(2), ops=0)
