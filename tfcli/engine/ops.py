"""Elementwise and row-wise building blocks: softmax, activations, norms, masks.

Everything keeps the dtype of its input (float32 stays float32, float64 stays float64): the
constants below are Python floats, which NumPy 2 folds into the array's dtype.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.shaped import is_shaped
from tfcli.engine.weights import NormWeights

Observer = Callable[[str, str, tuple[int, ...]], None]

_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))
_INV_SQRT_2 = float(1.0 / np.sqrt(2.0))
_GELU_TANH_A = -2.0 * _SQRT_2_OVER_PI  # -2u = x (A + B x^2)
_GELU_TANH_B = _GELU_TANH_A * 0.044715


# --- softmax ---------------------------------------------------------------------------------


def softcap_(x: Array, cap: float) -> Array:
    """cap * tanh(x / cap) in place (Gemma 2's soft-capping of scores and logits): bounded in
    (-cap, cap), nearly the identity for |x| << cap."""
    with np.errstate(over="ignore"):  # a tiny cap: x / cap is +-inf, whose tanh is the limit +-1
        np.divide(x, cap, out=x)
    np.tanh(x, out=x)
    x *= cap
    return x


def softmax_(x: Array, axis: int = -1) -> Array:
    """Softmax computed in place in `x` (which is returned). A row that is all -inf gives zeros."""
    row_max = np.maximum.reduce(x, axis=axis, keepdims=True)
    # A fully masked row has max -inf, and -inf - -inf is NaN: shift it by the lowest finite
    # value instead, which leaves every -inf at -inf and every other row's max unchanged.
    np.maximum(row_max, np.finfo(x.dtype).min, out=row_max)
    x -= row_max
    np.exp(x, out=x)
    total = np.add.reduce(x, axis=axis, keepdims=True)
    # A row's own max contributes exp(0) = 1, so only a fully masked row sums below 1 (to 0):
    # dividing it by 1 keeps its zeros instead of 0/0.
    np.maximum(total, 1.0, out=total)
    x *= np.reciprocal(total, out=total)
    return x


def softmax_sink_(x: Array, sink: Array) -> Array:
    """Softmax over x's last axis, in place, with one more logit per row, `sink` (broadcast
    against x[..., :1]), that joins the normalisation and is then dropped: each row sums to
    1 - its sink's share (gpt-oss attention sinks). The sink is finite, so a fully masked row
    gives zeros."""
    row_max = np.maximum.reduce(x, axis=-1, keepdims=True)  # (..., 1)
    np.maximum(row_max, sink, out=row_max)  # finite: the sink is
    x -= row_max
    np.exp(x, out=x)
    total = np.add.reduce(x, axis=-1, keepdims=True)  # (..., 1)
    total += np.exp(sink - row_max)
    x *= np.reciprocal(total, out=total)
    return x


def softmax(x: Array, axis: int = -1) -> Array:
    """Numerically stable softmax; a row that is all -inf gives zeros, never NaN."""
    return softmax_(np.array(x, copy=True), axis)


# --- erf (exact GELU needs it; NumPy has none and scipy is not a dependency) -----------------

# W. J. Cody, "Rational Chebyshev approximations for the error function", Math. Comp. 23
# (1969) 631-637 (the SPECFUN CALERF coefficients): relative error below 1e-16 in float64.
_ERF_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
          3.20937758913846947e03, 1.85777706184603153e-1)
_ERF_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
          2.84423683343917062e03)
_ERFC_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
           2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
           2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_ERFC_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
           1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
           3.43936767414372164e03, 1.23033935480374942e03)
_ERFC_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
           1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_ERFC_Q = (2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
           6.05183413124413191e-2, 2.33520497626869185e-3)
_INV_SQRT_PI = 5.6418958354775628695e-1


def _erf_small(y: Array) -> Array:
    """erf(y) for |y| <= 0.46875 (Cody's first interval)."""
    ysq = y * y
    num, den = _ERF_A[4] * ysq, ysq
    for a, b in zip(_ERF_A[:3], _ERF_B[:3]):
        num, den = (num + a) * ysq, (den + b) * ysq
    return y * (num + _ERF_A[3]) / (den + _ERF_B[3])


def _exp_neg_square(y: Array) -> Array:
    # exp(-y^2) split as exp(-r^2 - (y-r)(y+r)) with r = y rounded down to 1/16: Cody's trick
    # that avoids the cancellation error of squaring y directly.
    r = np.trunc(16.0 * y) / 16.0
    return np.exp(-r * r - (y - r) * (y + r))


def _erfc_mid(y: Array) -> Array:
    """erfc(y) for 0.46875 < y <= 4 (Cody's second interval)."""
    num, den = _ERFC_C[8] * y, y
    for c, d in zip(_ERFC_C[:7], _ERFC_D[:7]):
        num, den = (num + c) * y, (den + d) * y
    return _exp_neg_square(y) * (num + _ERFC_C[7]) / (den + _ERFC_D[7])


def _erfc_large(y: Array) -> Array:
    """erfc(y) for y > 4 (asymptotic interval); underflows to 0 past ~26.5 as it should."""
    inv = 1.0 / (y * y)
    num, den = _ERFC_P[5] * inv, inv
    for p, q in zip(_ERFC_P[:4], _ERFC_Q[:4]):
        num, den = (num + p) * inv, (den + q) * inv
    tail = inv * (num + _ERFC_P[4]) / (den + _ERFC_Q[4])
    with np.errstate(under="ignore", over="ignore"):
        return _exp_neg_square(np.minimum(y, 27.0)) * (_INV_SQRT_PI - tail) / y


def erf(x: Array) -> Array:
    """The error function, elementwise, in the dtype of `x` (Cody 1969; ~1e-16 in float64)."""
    if is_shaped(x):  # which interval each element falls in is data
        return np.empty_like(x)
    x = np.asarray(x)
    y = np.abs(x)
    out = np.empty_like(x)
    small = y <= 0.46875
    mid = ~small & (y <= 4.0)
    large = y > 4.0
    out[small] = _erf_small(x[small])
    out[mid] = 1.0 - _erfc_mid(y[mid])
    out[large] = 1.0 - _erfc_large(y[large])
    out[~small] *= np.sign(x[~small])
    return out


# --- activations -----------------------------------------------------------------------------


def relu(x: Array) -> Array:
    return np.maximum(x, 0.0)


def gelu(x: Array) -> Array:
    """Exact GELU, x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (Hendrycks & Gimpel 2016)."""
    out = erf(x * _INV_SQRT_2)
    out += 1.0
    out *= x
    out *= 0.5
    return out


def gelu_tanh(x: Array) -> Array:
    """GPT-2's tanh GELU, 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).

    Computed as the identical x / (1 + exp(-2u)) in place in one temporary: exp is cheaper than
    tanh and the form needs fewer passes over the (T, d_ff) array.
    """
    out = x * x
    out *= _GELU_TANH_B
    out += _GELU_TANH_A
    out *= x  # -2u = x (a + b x^2)
    with np.errstate(over="ignore"):  # exp overflows to inf for x << 0: x / inf = -0, correct
        np.exp(out, out=out)
    out += 1.0
    np.divide(x, out, out=out)
    return out


def silu(x: Array) -> Array:
    """x * sigmoid(x), written as x / (1 + exp(-x)) so large |x| neither overflows nor NaNs."""
    with np.errstate(over="ignore", under="ignore"):
        out = np.exp(-x)
    out += 1.0
    np.divide(x, out, out=out)
    return out


ACTIVATIONS: dict[str, Callable[[Array], Array]] = {
    "relu": relu,
    "gelu": gelu,
    "gelu_tanh": gelu_tanh,
    "silu": silu,
}
# Gated FFNs (Shazeer 2020, "GLU Variants"): act(x W_gate) * (x W_up).
GATE_ACTIVATIONS: dict[str, str] = {"swiglu": "silu", "geglu": "gelu", "geglu_tanh": "gelu_tanh"}


def activation_fn(name: str) -> Callable[[Array], Array]:
    """The elementwise function of spec.activation (for gated ones, the function on the gate)."""
    return ACTIVATIONS[GATE_ACTIVATIONS.get(name, name)]


# --- norms -----------------------------------------------------------------------------------


def _row_mean(x: Array) -> Array:
    """Mean over the last axis, kept: np.add.reduce without np.mean's Python-level overhead
    (3 us instead of 11 on one decode-step row, and a decode step takes 25 norms)."""
    total = np.add.reduce(x, axis=-1, keepdims=True)
    total *= 1.0 / x.shape[-1]
    return total


def _undefined_where_overflowed(stat: Array) -> None:
    """A norm's mean square (rows, 1) that overflowed to inf (|x| past ~1.8e19 in float32) would
    scale its row by 1/sqrt(inf) = 0: every hidden state 0 (or the bias), every logit equal - a
    finite, confident and meaningless result. Such rows become NaN instead, so the forward
    pass's finiteness check (analysis/finite.py) names the block and points at float64. A
    reduction over (rows, 1): nothing next to the norm itself. Shapes have no values to check."""
    if not is_shaped(stat) and np.isinf(stat.max()):
        stat[np.isinf(stat)] = np.nan


def layer_norm(x: Array, scale: Array | None, bias: Array | None, eps: float) -> Array:
    """(x - mean) / sqrt(var + eps) * scale + bias over the last axis (Ba et al. 2016)."""
    centred = x - _row_mean(x)
    var = _row_mean(np.square(centred))
    var += eps
    _undefined_where_overflowed(var)
    centred *= np.reciprocal(np.sqrt(var, out=var), out=var)
    if scale is not None:
        centred *= scale
    if bias is not None:
        centred += bias
    return centred


def rms_norm(x: Array, scale: Array | None, eps: float) -> Array:
    """x / sqrt(mean(x^2) + eps) * scale (Zhang & Sennrich 2019; T5 and LLaMA)."""
    ms = _row_mean(np.square(x))
    ms += eps
    _undefined_where_overflowed(ms)
    out = x * np.reciprocal(np.sqrt(ms, out=ms), out=ms)
    if scale is not None:
        out *= scale
    return out


def _layernorm(w: NormWeights | None, x: Array, eps: float) -> Array:
    return layer_norm(x, w.scale if w else None, w.bias if w else None, eps)


def _rmsnorm(w: NormWeights | None, x: Array, eps: float) -> Array:
    return rms_norm(x, w.scale if w else None, eps)


def _no_norm(w: NormWeights | None, x: Array, eps: float) -> Array:
    return x


NORMS: dict[str, Callable[[NormWeights | None, Array, float], Array]] = {
    "layernorm": _layernorm,
    "layernorm_noaffine": _layernorm,  # its NormWeights has scale = bias = None
    "layernorm_nobias": _layernorm,  # its NormWeights has bias = None (ModernBERT)
    "rmsnorm": _rmsnorm,
    "none": _no_norm,
}


def apply_norm(kind: str, w: NormWeights | None, x: Array, eps: float,
               unit_offset: bool = False) -> Array:
    """Normalise x (..., d) with the norm named by spec.norm; unit_offset (Gemma) scales by
    (1 + weight): the stored weight is the checkpoint's, the (d,) sum is made per call."""
    if unit_offset and w is not None and w.scale is not None:
        w = NormWeights(w.scale + 1.0, w.bias)
    return NORMS[kind](w, x, eps)
