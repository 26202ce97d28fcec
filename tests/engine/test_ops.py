"""Softmax, erf / activations, norms and masks against direct formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from tests.tolerance import assert_close
from tfcli.engine.ops import (
    ACTIVATIONS, apply_norm, erf, gelu, gelu_tanh, silu, softmax,
)
from tfcli.engine.weights import NormWeights

finite = st.floats(-1e4, 1e4, allow_nan=False, width=64)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(1, 9)), elements=finite),
       arrays(bool, st.tuples(st.integers(1, 5), st.integers(1, 9))))
def test_softmax_masked_rows_are_zero_and_others_sum_to_one(x, keep):
    keep = np.resize(keep, x.shape)
    z = softmax(np.where(keep, x, -np.inf))
    assert not np.isnan(z).any()
    assert (z[~keep] == 0).all()
    sums = z.sum(axis=-1)
    np.testing.assert_allclose(sums[keep.any(axis=-1)], 1.0, rtol=1e-12)
    assert (sums[~keep.any(axis=-1)] == 0).all()


def test_softmax_matches_the_definition_and_keeps_dtype():
    x = np.random.default_rng(0).normal(size=(3, 4, 7)).astype(np.float32)
    expected = np.exp(x.astype(np.float64)) / np.exp(x.astype(np.float64)).sum(-1, keepdims=True)
    got = softmax(x)
    assert got.dtype == np.float32
    # Relative per element (small probabilities count): exp (NumPy's SIMD loop differs by CPU),
    # the max subtracted (its rounding grows by |x - max| < 6), a 7-term sum, a division.
    assert_close(got, expected, ops=16, scale=0)


def test_erf_is_double_precision_accurate():
    x = np.concatenate([np.linspace(-8, 8, 20001), [0.0, 0.46875, -0.46875, 4.0, -4.0, 30, -30]])
    expected = np.array([math.erf(v) for v in x])
    # Relative per element: a few roundings of the approximation and of np.exp (its SIMD loop
    # differs by CPU) against glibc's own (< 1 ulp).
    assert_close(erf(x), expected, ops=8, scale=0)


def test_erf_in_float32_stays_float32():
    x = np.linspace(-6, 6, 1001, dtype=np.float32)
    got = erf(x)
    assert got.dtype == np.float32
    assert_close(got, [math.erf(float(v)) for v in x], ops=4)


def test_activations_match_their_formulas():
    x = np.linspace(-9, 9, 3001)
    # erf / tanh (a few ulps in NumPy's SIMD loops, which differ by CPU), x**3, a few products,
    # times |x| / 2 <= 4.5 where 1 + erf cancels for x << 0: 32 roundings of max |gelu|.
    assert_close(gelu(x), [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x], ops=32)
    tanh_form = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    assert_close(gelu_tanh(x), tanh_form, ops=32)
    np.testing.assert_allclose(silu(x), x / (1 + np.exp(-x)), rtol=1e-14)
    np.testing.assert_array_equal(ACTIVATIONS["relu"](x), np.maximum(x, 0))


def test_silu_does_not_overflow_on_large_negative_inputs():
    with np.errstate(over="raise", invalid="raise"):
        out = silu(np.array([-1000.0, -100.0, 0.0, 1000.0], dtype=np.float32))
    np.testing.assert_allclose(out, [0.0, -100 * np.exp(-100.0), 0.0, 1000.0], atol=1e-30)


@pytest.mark.parametrize("name", ["relu", "gelu", "gelu_tanh", "silu"])
def test_activations_keep_float32(name):
    assert ACTIVATIONS[name](np.ones((2, 3), np.float32)).dtype == np.float32


def test_norms():
    rng = np.random.default_rng(0)
    x, scale, bias = rng.normal(size=(2, 5, 8)), rng.normal(size=8), rng.normal(size=8)
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    # 8-term mean and variance (any summation order), sqrt, division, scale, bias. An element
    # near the mean is near zero: the tolerance scales with the largest output, not each one.
    ops = 2 * 8 + 4
    assert_close(apply_norm("layernorm", NormWeights(scale, bias), x, 1e-5),
                 (x - mu) / np.sqrt(var + 1e-5) * scale + bias, ops=ops)
    assert_close(apply_norm("layernorm_noaffine", NormWeights(None, None), x, 1e-5),
                 (x - mu) / np.sqrt(var + 1e-5), ops=ops)
    rms = np.sqrt((x**2).mean(-1, keepdims=True) + 1e-6)
    assert_close(apply_norm("rmsnorm", NormWeights(scale, None), x, 1e-6), x / rms * scale, ops=ops)
    assert apply_norm("none", None, x, 1e-5) is x
