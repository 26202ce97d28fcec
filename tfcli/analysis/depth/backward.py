"""Backward passes in NumPy for the depth sweep's layers: norm, linear, attention, FFN, and the
four ways of wrapping a sublayer (pre, post, plain, residual-no-norm).

Each op is a pair: `forward(x) -> (y, saved)` and `backward(dy, saved, grads) -> dx`, which adds
dL/dW into `grads` (parameter name -> array). The forward values come from the engine's own functions where the engine has them (the
activations, RoPE's tables), so a stack run here is the one the forward sweep measures. What the
backward does not cover (mixtures of experts, latent or disentangled attention, soft-capping,
q/k norms) is refused by name before any work.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tfcli.core.arrays import Array
from tfcli.core.errors import BadInputError
from tfcli.engine.ops import activation_fn, erf
from tfcli.engine.positions import rope_tables
from tfcli.engine.weights import AttentionWeights, FFNWeights, NormWeights
from tfcli.spec.model import Spec

Grads = dict[str, Array]  # a layer's parameter name -> dL/dparameter


# what the backward pass covers, as (what, applies) refusals: checked before any work
UNCOVERED: tuple[tuple[str, Callable[[Spec], object]], ...] = (
    ("mixture-of-experts FFNs", lambda s: s.n_experts),
    ("latent attention (MLA)", lambda s: s.latent_attention),
    ("disentangled attention", lambda s: s.disentangled_attention),
    ("attention soft-capping", lambda s: s.attn_logit_softcap is not None),
    ("q/k norms", lambda s: s.qk_norm != "none"),
)


def check_covered(spec: Spec) -> None:
    """BadInputError naming the first of the spec's features the backward does not cover."""
    for what, applies in UNCOVERED:
        if applies(spec):
            raise BadInputError(f"--gradients: {spec.name} has {what}, which the NumPy backward "
                                "pass does not cover yet; use --sublayer linear or a dense spec")


# --- norms ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Norm:
    """The spec's norm over the last axis: layernorm (with or without scale / bias), rmsnorm, or
    none; `offset` scales by (1 + weight) (Gemma)."""

    kind: str
    weights: NormWeights | None
    eps: float
    offset: bool = False
    name: str = "norm"

    def _scale(self) -> Array | None:
        w = self.weights
        if w is None or w.scale is None:
            return None
        return w.scale + 1.0 if self.offset else w.scale

    def forward(self, x: Array) -> tuple[Array, object]:
        if self.kind == "none":
            return x, None
        centred = x if self.kind == "rmsnorm" else x - x.mean(axis=-1, keepdims=True)
        inv = 1.0 / np.sqrt(np.mean(np.square(centred), axis=-1, keepdims=True) + self.eps)
        xhat = centred * inv
        scale = self._scale()
        y = xhat if scale is None else xhat * scale
        if self.weights is not None and self.weights.bias is not None:
            y = y + self.weights.bias
        return y, (xhat, inv)

    def backward(self, dy: Array, saved: object, grads: Grads) -> Array:
        if self.kind == "none":
            return dy
        xhat, inv = saved  # type: ignore[misc]
        rows = tuple(range(dy.ndim - 1))
        scale = self._scale()
        if scale is not None:
            _add(grads, f"{self.name}.scale", (dy * xhat).sum(axis=rows))
        if self.weights is not None and self.weights.bias is not None:
            _add(grads, f"{self.name}.bias", dy.sum(axis=rows))
        g = dy if scale is None else dy * scale
        mean_gx = np.mean(g * xhat, axis=-1, keepdims=True)
        if self.kind == "rmsnorm":  # y = x r: dx = r (g - xhat mean(g xhat))
            return inv * (g - xhat * mean_gx)
        return inv * (g - g.mean(axis=-1, keepdims=True) - xhat * mean_gx)


def _add(grads: Grads, name: str, grad: Array) -> None:
    grads[name] = grads[name] + grad if name in grads else grad


# --- linear --------------------------------------------------------------------------------------


def linear_backward(dy: Array, x: Array, w: Array, has_bias: bool, name: str,
                    grads: Grads) -> Array:
    """The cotangent of x for y = x @ w [+ b]; adds dW = x^T dy and db = sum dy."""
    flat_x, flat_dy = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
    _add(grads, f"{name}.w", flat_x.T @ flat_dy)  # (k, m)
    if has_bias:
        _add(grads, f"{name}.b", flat_dy.sum(axis=0))
    return dy @ w.T


def _affine(x: Array, w: Array, b: Array | None) -> Array:
    y = x @ w
    return y if b is None else y + b


# --- activations (d act / dx) --------------------------------------------------------------------

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _d_relu(x: Array) -> Array:
    return (x > 0).astype(x.dtype)


def _d_gelu(x: Array) -> Array:
    """d/dx x Phi(x) = Phi(x) + x phi(x)."""
    phi = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return 0.5 * (1 + erf(x / math.sqrt(2))) + x * phi


def _d_gelu_tanh(x: Array) -> Array:
    u = _SQRT_2_OVER_PI * (x + 0.044715 * x**3)
    t = np.tanh(u)
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)


def _d_silu(x: Array) -> Array:
    s = 1.0 / (1.0 + np.exp(-x))
    return s * (1 + x * (1 - s))


DERIVATIVES: dict[str, Callable[[Array], Array]] = {
    "relu": _d_relu, "gelu": _d_gelu, "gelu_tanh": _d_gelu_tanh, "silu": _d_silu}
_GATED = {"swiglu": "silu", "geglu": "gelu", "geglu_tanh": "gelu_tanh"}




@dataclass(frozen=True)
class FFN:
    """The dense FFN, x (..., d) -> (..., d): down(act(up x)), or down(act(gate x) * up x)."""

    spec: Spec
    w: FFNWeights

    def forward(self, x: Array) -> tuple[Array, object]:
        w, gated = self.w, self.spec.activation in _GATED
        act = activation_fn(self.spec.activation)
        up = _affine(x, w.w_up, w.b_up)  # (..., f)
        gate = _affine(x, w.w_gate, w.b_gate) if gated else None  # type: ignore[arg-type]
        hidden = act(gate) * up if gate is not None else act(up)
        return _affine(hidden, w.w_down, w.b_down), (x, up, gate, hidden)

    def backward(self, dy: Array, saved: object, grads: Grads) -> Array:
        x, up, gate, hidden = saved  # type: ignore[misc]
        w = self.w
        name = _GATED.get(self.spec.activation, self.spec.activation)
        d_hidden = linear_backward(dy, hidden, w.w_down, w.b_down is not None, "ffn.down", grads)
        if gate is None:
            d_up = d_hidden * DERIVATIVES[name](up)
            return linear_backward(d_up, x, w.w_up, w.b_up is not None, "ffn.up", grads)
        act = activation_fn(self.spec.activation)
        d_up, d_gate = d_hidden * act(gate), d_hidden * DERIVATIVES[name](gate) * up
        return (linear_backward(d_up, x, w.w_up, w.b_up is not None, "ffn.up", grads)
                + linear_backward(d_gate, x, w.w_gate, w.b_gate is not None,  # type: ignore[arg-type]
                                  "ffn.gate", grads))


# --- attention -----------------------------------------------------------------------------------


def _rotate(x: Array, interleaved: bool) -> Array:
    """RoPE's rotation of pairs: rotate_half [-x2, x1], or interleaved (-x1, x0) per pair."""
    if interleaved:
        out = np.empty_like(x)
        out[..., 0::2], out[..., 1::2] = -x[..., 1::2], x[..., 0::2]
        return out
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def _rotate_t(y: Array, interleaved: bool) -> Array:
    """The transpose of _rotate: what a rotated cotangent becomes."""
    return -_rotate(y, interleaved)




@dataclass(frozen=True)
class Attention:
    """Self-attention within each sequence: GQA, causal and windowed masks, RoPE (either
    pairing, partial rotary, the spec's scaling), an additive position bias (T5's, a constant)."""

    spec: Spec
    w: AttentionWeights
    causal: bool
    position_bias: Array | None = None  # (1|B, H, T, T)

    def _mask(self, length: int) -> Array:
        allowed = np.ones((length, length), bool)
        if self.causal:
            allowed = np.tril(allowed)
            window = self.spec.sliding_window
            if window is not None and window < length:
                allowed &= ~np.tril(np.ones((length, length), bool), -window)
        return np.where(allowed, 0.0, -np.inf)  # (T, T)

    @staticmethod
    def _heads(x: Array, n: int) -> Array:
        b, t, _ = x.shape
        return x.reshape(b, t, n, -1).transpose(0, 2, 1, 3)  # (B, T, n*dh) -> (B, n, T, dh)

    @staticmethod
    def _merge(x: Array) -> Array:
        b, n, t, _ = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, t, -1)  # (B, n, T, dh) -> (B, T, n*dh)

    def _tables(self, length: int, dtype: np.dtype) -> tuple[Array, Array] | None:
        s = self.spec
        if s.positions != "rope":
            return None
        return rope_tables(np.arange(length)[None], s.rotary_width, s.rope_theta, dtype,
                           s.rope_scaling, s.rope_pairing == "interleaved")  # (1, 1, T, r) x2

    def _rope(self, x: Array, tables: tuple[Array, Array] | None, transpose: bool) -> Array:
        """RoPE on the first r dims (transpose: its transpose, for a cotangent)."""
        if tables is None:
            return x
        cos, sin = tables
        r, interleaved = cos.shape[-1], self.spec.rope_pairing == "interleaved"
        head = x[..., :r]
        turned = (head * cos + _rotate_t(head * sin, interleaved) if transpose
                  else head * cos + _rotate(head, interleaved) * sin)
        return np.concatenate([turned, x[..., r:]], axis=-1)

    def forward(self, x: Array) -> tuple[Array, object]:
        s, w = self.spec, self.w
        tables = self._tables(x.shape[1], x.dtype)
        q = self._rope(self._heads(_affine(x, w.wq, w.bq), s.n_heads), tables, False)
        k = self._rope(self._heads(_affine(x, w.wk, w.bk), s.kv_heads), tables, False)
        v = self._heads(_affine(x, w.wv, w.bv), s.kv_heads)
        group = s.n_heads // s.kv_heads
        k_all, v_all = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)  # (B, H, T, dh)
        scores = q @ k_all.swapaxes(-1, -2) * s.scale + self._mask(x.shape[1])  # (B, H, T, T)
        if self.position_bias is not None:
            scores = scores + self.position_bias
        p = np.exp(scores - scores.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        merged = self._merge(p @ v_all)  # (B, T, H*dv)
        return _affine(merged, w.wo, w.bo), (x, q, k_all, v_all, p, merged, tables, group)

    def backward(self, dy: Array, saved: object, grads: Grads) -> Array:
        x, q, k_all, v_all, p, merged, tables, group = saved  # type: ignore[misc]
        w, b, h, t = self.w, *q.shape[:3]
        d_merged = linear_backward(dy, merged, w.wo, w.bo is not None, "attn.o", grads)
        d_mixed = self._heads(d_merged, h)  # (B, H, T, dv)
        dp = d_mixed @ v_all.swapaxes(-1, -2)  # (B, H, T, T)
        ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) * self.spec.scale
        dq = self._rope(ds @ k_all, tables, True)  # (B, H, T, dh)
        grouped = lambda z: z.reshape(b, -1, group, t, z.shape[-1]).sum(axis=2)  # noqa: E731
        dk = self._rope(grouped(ds.swapaxes(-1, -2) @ q), tables, True)  # (B, Hkv, T, dh)
        dv = grouped(p.swapaxes(-1, -2) @ d_mixed)  # (B, Hkv, T, dv)
        return (linear_backward(self._merge(dq), x, w.wq, w.bq is not None, "attn.q", grads)
                + linear_backward(self._merge(dk), x, w.wk, w.bk is not None, "attn.k", grads)
                + linear_backward(self._merge(dv), x, w.wv, w.bv is not None, "attn.v", grads))
