"""Gradients through depth (`depth-sweep --gradients`): a backward pass through the deepest stack
of the sweep, at initialisation, and the norm of the loss's gradient at every layer.

The stack is the forward sweep's: the same layers from the same seed (layer 0 from
default_rng(seed), then the input X0; layer i from default_rng([seed, i])), in each variant:

    pre    x <- x + F(N(x))        post   x <- N(x + F(x))
    plain  x <- F(N(x))            residual-no-norm  x <- x + F(x)

The loss is a fixed random readout of the last layer's output, L = <x_L, R> / sqrt(B T d) with
R ~ N(0, 1) from default_rng([seed, 1, 0]): its gradient at the output has norm about 1
whatever the output's scale, so each layer's gradient norm is what the backward pass itself
did to it. Reported per layer l (1 = nearest the input): ||dL/dx_l|| for the layer's input and
||dL/dW_l|| over all of the layer's parameters (Frobenius, the arrays together).

What it shows at initialisation (Xiong et al. 2020, "On Layer Normalization in the Transformer
Architecture", section 3): post-LN's parameter gradients are largest near the output and fall
towards the input, which is why post-LN needs learning-rate warmup; pre-LN's residual path
carries the gradient to every layer at about the same size; a plain stack (no residual) lets it
shrink (or grow) geometrically with depth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfcli.analysis.depth.backward import FFN, Attention, Grads, Norm, check_covered
from tfcli.analysis.depth.options import DepthSweepOptions
from tfcli.analysis.depth.stack import (Float32Initializer, Given, given_into, sweep_stack,
                                        t5_position_bias)
from tfcli.core.arrays import Array
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

LOSS = "L = <x_L, R> / sqrt(B T d), R ~ N(0, 1) from default_rng([seed, 1, 0])"
CITATION = "Xiong et al. 2020, On Layer Normalization in the Transformer Architecture"


# --- one layer: its sublayers, each a norm and a body ---------------------------------------------


@dataclass(frozen=True)
class _Linear:
    """The lessons' stand-in body: x @ W."""

    w: Array

    def forward(self, x: Array) -> tuple[Array, object]:
        return x @ self.w, x

    def backward(self, dy: Array, saved: object, grads: Grads) -> Array:
        x: Array = saved  # type: ignore[assignment]
        grads["linear.w"] = x.reshape(-1, x.shape[-1]).T @ dy.reshape(-1, dy.shape[-1])
        return dy @ self.w.T


Body = _Linear | Attention | FFN
Part = tuple[Norm, Body]  # one sublayer


def _spec_parts(spec: Spec, sublayer: str, rng: np.random.Generator, dtype: np.dtype,
                causal: bool, bias: Array | None, at: str,
                given: Given | None) -> tuple[Part, ...]:
    """The spec's attention and / or FFN with their norms, drawn as the forward sweep draws
    them (stack.spec_builder: norm, attention, norm, FFN), --weights' arrays at `at` over them."""
    init = Float32Initializer(spec, rng, dtype)
    parts: list[Part] = []
    norm = lambda w: Norm(spec.norm, w, spec.norm_eps, spec.norm_unit_offset)  # noqa: E731
    if sublayer in ("block", "attention"):
        norm_w, attn_w = init.norm(), init.part("attn")
        given_into(norm_w, f"{at}.attn_norm", given, dtype)
        given_into(attn_w, f"{at}.attn", given, dtype)
        parts.append((norm(norm_w), Attention(spec, attn_w, causal, bias)))  # type: ignore[arg-type]
    if sublayer in ("block", "ffn"):
        norm_w, ffn_w = init.norm(), init.part("ffn")
        given_into(norm_w, f"{at}.ffn_norm", given, dtype)
        given_into(ffn_w, f"{at}.ffn", given, dtype)
        parts.append((norm(norm_w), FFN(spec, ffn_w)))  # type: ignore[arg-type]
    return tuple(parts)


def _linear_parts(rng: np.random.Generator, d_model: int, scale: float, eps: float,
                  dtype: np.dtype, index: int, given: Given | None) -> tuple[Part, ...]:
    w = rng.normal(scale=scale, size=(d_model, d_model)).astype(dtype)  # (d, d)
    if given and f"blocks.{index}.w" in given:
        w = given[f"blocks.{index}.w"].astype(dtype)
    return ((Norm("layernorm", None, eps), _Linear(w)),)


# --- the variants, forward and back ---------------------------------------------------------------


def _part_forward(variant: str, part: Part, x: Array) -> tuple[Array, tuple[object, ...]]:
    norm, body = part
    if variant in ("pre", "plain"):
        h, n_saved = norm.forward(x)
        f, f_saved = body.forward(h)
        return (x + f if variant == "pre" else f), (n_saved, f_saved)
    f, f_saved = body.forward(x)
    if variant == "post":
        y, n_saved = norm.forward(x + f)
        return y, (n_saved, f_saved)
    return x + f, (None, f_saved)  # residual-no-norm


def _part_backward(variant: str, part: Part, dy: Array, saved: tuple[object, ...],
                   grads: Grads) -> Array:
    norm, body = part
    n_saved, f_saved = saved
    if variant in ("pre", "plain"):
        dx = norm.backward(body.backward(dy, f_saved, grads), n_saved, grads)
        return dy + dx if variant == "pre" else dx
    if variant == "post":
        ds = norm.backward(dy, n_saved, grads)
        return ds + body.backward(ds, f_saved, grads)
    return dy + body.backward(dy, f_saved, grads)


# pre-LN stacks end in a final norm (every pre-LN model has one: GPT-2's ln_f, Llama's norm);
# it is what divides their gradients by the residual stream's growing scale (Xiong et al. 2020,
# Lemma 2). Post-LN's last layer ends in its own norm; plain and residual-no-norm have none.
_ENDS_IN_NORM = frozenset({"pre"})
_FINAL = Norm("layernorm", None, 1e-5)


def stack_loss(layers: list[tuple[Part, ...]], variant: str, x0: Array, readout: Array) -> float:
    """The loss alone, a forward pass only (what finite differences of the gradients take)."""
    x = x0
    for layer in layers:
        for part in layer:
            x, _ = _part_forward(variant, part, x)
    if variant in _ENDS_IN_NORM:
        x, _ = _FINAL.forward(x)
    return float((x * readout).sum() / math.sqrt(x.size))


def stack_gradients(layers: list[tuple[Part, ...]], variant: str, x0: Array,
                    readout: Array) -> tuple[float, list[Array], list[Grads]]:
    """The loss, dL/dx_l for each layer's input, and each layer's parameter gradients."""
    x, saved = x0, []
    for layer in layers:
        layer_saved = []
        for part in layer:
            x, s = _part_forward(variant, part, x)
            layer_saved.append(s)
        saved.append(layer_saved)
    final = _FINAL if variant in _ENDS_IN_NORM else None
    out, final_saved = final.forward(x) if final is not None else (x, None)
    scale = 1.0 / math.sqrt(x.size)
    loss = float((out * readout).sum() * scale)
    dy = readout * scale
    if final is not None:
        dy = final.backward(dy, final_saved, {})
    inputs: list[Array] = []
    weights: list[Grads] = []
    for layer, layer_saved in zip(reversed(layers), reversed(saved)):
        grads: Grads = {}
        for i in reversed(range(len(layer))):
            own: Grads = {}  # this sublayer's parameters: 0.attn.q.w, 1.ffn.up.w, ...
            dy = _part_backward(variant, layer[i], dy, layer_saved[i], own)
            grads |= {f"{i}.{name}": g for name, g in own.items()}
        inputs.append(dy)
        weights.append(grads)
    return loss, inputs[::-1], weights[::-1]


# --- the report -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayerGradient:
    layer: int  # 1-based, 1 = nearest the input
    input_grad: float  # ||dL/dx_l||, x_l the layer's input
    weight_grad: float  # ||dL/dW_l||, all the layer's parameters together


@dataclass(frozen=True)
class GradientSeries:
    variant: str
    loss: float
    layers: tuple[LayerGradient, ...]

    def ratio(self, field: str) -> float:
        """The gradient near the output over the gradient near the input: geometric means of
        the last and the first quarter of the layers (one layer's draw is noisy)."""
        values = [getattr(row, field) for row in self.layers]
        quarter = max(1, len(values) // 4)
        first, last = _geometric(values[:quarter]), _geometric(values[-quarter:])
        return last / first if first > 0 else math.inf


def _geometric(values: list[float]) -> float:
    if not all(math.isfinite(v) and v > 0 for v in values):
        return math.inf if any(not math.isfinite(v) for v in values) else 0.0
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass(frozen=True)
class OutputGradient:
    """A stack of one sweep depth: its last layer's ||dL/dW|| per variant (the stack is the
    first `depth` layers of the deepest one, as in the forward sweep)."""

    depth: int
    weight_grad: dict[str, float]  # variant -> ||dL/dW|| of the layer nearest the output


@dataclass(frozen=True)
class GradientReport:
    depth: int
    loss: str
    series: tuple[GradientSeries, ...]
    verdict: str
    by_depth: tuple[OutputGradient, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"depth": self.depth, "loss": self.loss, "citation": CITATION,
                "verdict": self.verdict,
                "series": [{"variant": s.variant, "loss": _finite(s.loss),
                            "layers": [{"layer": row.layer, "input_grad": _finite(row.input_grad),
                                        "weight_grad": _finite(row.weight_grad)}
                                       for row in s.layers]} for s in self.series],
                "last_layer_by_depth": [{"depth": o.depth,
                                         "weight_grad": {v: _finite(g)
                                                         for v, g in o.weight_grad.items()}}
                                        for o in self.by_depth]}


def _finite(x: float) -> float | None:
    """JSON has no inf or NaN: an overflowed gradient is null."""
    return x if math.isfinite(x) else None


def _norm(g: Array) -> float:
    return float(np.sqrt(np.square(g.astype(np.float64)).sum()))


def _series(variant: str, layers: list[tuple[Part, ...]], x0: Array,
            readout: Array) -> GradientSeries:
    with np.errstate(all="ignore"):  # an overflowing stack shows as inf / nan norms
        loss, inputs, weights = stack_gradients(layers, variant, x0, readout)
    rows = tuple(LayerGradient(i + 1, _norm(dx), math.sqrt(sum(_norm(g) ** 2 for g in gs.values())))
                 for i, (dx, gs) in enumerate(zip(inputs, weights)))
    return GradientSeries(variant, loss, rows)


def draw_layers(spec: Spec | None, o: DepthSweepOptions, d_model: int, dtype: np.dtype,
                causal: bool, weight_scale: float | None, eps: float,
                given: Given | None = None,
                given_x0: Array | None = None) -> tuple[list[tuple[Part, ...]], Array]:
    """The deepest stack's layers and the input X0, drawn as the forward sweep draws them
    (with --weights' arrays over the draw, and --inputs' X0 over its draw)."""
    def build(rng: np.random.Generator, index: int) -> tuple[Part, ...]:
        if spec is None or o.sublayer == "linear":
            return _linear_parts(rng, d_model, weight_scale or d_model**-0.5, eps, dtype, index,
                                 given)
        bias = t5_position_bias(spec, np.random.default_rng([o.seed, 0]), o.seq_len, causal,
                                dtype)
        at = f"{sweep_stack(spec)}.blocks.{index}"
        return _spec_parts(spec, o.sublayer, rng, dtype, causal, bias, at, given)

    root = np.random.default_rng(o.seed)
    first = build(root, 0)
    x0 = root.normal(size=(o.batch, o.seq_len, d_model)).astype(dtype)
    if given_x0 is not None:
        x0 = given_x0.astype(dtype)
    depth = max(o.depths)
    layers = [first if (i == 0 or o.share_weights) else build(np.random.default_rng([o.seed, i]), i)
              for i in range(depth)]
    return layers, x0


MAX_SAVED_BYTES = 2 * 2**30  # the forward values one backward pass keeps, at most


def saved_bytes(spec: Spec | None, o: DepthSweepOptions, d_model: int, itemsize: int) -> int:
    """About what the backward pass keeps alive: per layer, a few (B, T, d) arrays, the
    FFN's hidden ones and attention's (B, H, T, T) probabilities."""
    rows = o.batch * o.seq_len
    per_layer = 8 * rows * d_model
    if spec is not None and o.sublayer != "linear":
        per_layer += 3 * rows * spec.d_ff + 2 * o.batch * spec.n_heads * o.seq_len**2
        per_layer += 4 * rows * spec.n_heads * spec.head_dim
    return max(o.depths) * per_layer * itemsize


def check_gradients(spec: Spec | None, o: DepthSweepOptions, d_model: int,
                    itemsize: int) -> None:
    """BadInputError before any work: an uncovered spec, or a backward pass past the bound."""
    if spec is not None and o.sublayer != "linear":
        check_covered(spec)
    need = saved_bytes(spec, o, d_model, itemsize)
    if need > MAX_SAVED_BYTES:
        raise BadInputError(f"--gradients would keep about {need / 2**30:.1f} GiB of forward "
                            f"values for the backward pass (at most {MAX_SAVED_BYTES // 2**30} "
                            "GiB): fewer --depths, a shorter --seq-len or a smaller --batch")


def gradient_report(spec: Spec | None, o: DepthSweepOptions, d_model: int, dtype: np.dtype,
                    causal: bool, weight_scale: float | None, eps: float,
                    given: Given | None = None, given_x0: Array | None = None) -> GradientReport:
    """Per-layer gradient norms of the deepest stack, in every variant of the sweep."""
    check_gradients(spec, o, d_model, dtype.itemsize)
    layers, x0 = draw_layers(spec, o, d_model, dtype, causal, weight_scale, eps, given, given_x0)
    readout = np.random.default_rng([o.seed, 1, 0]).normal(size=x0.shape).astype(dtype)
    series = tuple(_series(v, layers, x0, readout) for v in o.variants)
    by_depth = tuple(_output_gradient(d, layers, x0, readout, o.variants, series)
                     for d in sorted(set(o.depths)))
    return GradientReport(len(layers), LOSS, series, gradient_verdict(series, by_depth), by_depth)


def _output_gradient(depth: int, layers: list[tuple[Part, ...]], x0: Array, readout: Array,
                     variants: tuple[str, ...],
                     deepest: tuple[GradientSeries, ...]) -> OutputGradient:
    """The last layer's weight gradient of the stack of `depth` layers, per variant (a
    backward pass of its own: its loss reads that stack's output)."""
    grads: dict[str, float] = {}
    for variant, series in zip(variants, deepest):
        if depth == len(layers):
            grads[variant] = series.layers[-1].weight_grad
        else:
            grads[variant] = _series(variant, layers[:depth], x0, readout).layers[-1].weight_grad
    return OutputGradient(depth, grads)


def _with_depth(by_depth: tuple[OutputGradient, ...]) -> str:
    """How the last layer's gradient moves with the stack's depth, post-LN beside pre-LN
    (Xiong et al.'s Theorem 1: post-LN's does not depend on depth, pre-LN's falls)."""
    if len(by_depth) < 2:
        return ""
    first, last = by_depth[0], by_depth[-1]
    grads = [(o.weight_grad["post"], o.weight_grad["pre"]) for o in (first, last)]
    if not all(math.isfinite(g) and g > 0 for pair in grads for g in pair):
        return ""
    post, pre = grads[1][0] / grads[0][0], grads[1][1] / grads[0][1]
    trend = "grows" if post / pre > 1.1 else "does not grow here"
    return (f", and the gap {trend} with depth: from depth {first.depth} to {last.depth} the last "
            f"layer's changes {_times(post)} in post-LN and {_times(pre)} in pre-LN, whose final "
            "norm divides by the growing residual stream (Theorem 1)")


def _times(x: float) -> str:
    if not math.isfinite(x):
        return "an overflow"
    return f"{x:.3g}x"


def _where(ratio: float) -> str:
    if not math.isfinite(ratio):
        return "overflowing"
    if ratio > 1.5:
        return "largest near the output"
    return "largest near the input" if ratio < 1 / 1.5 else "about the same at every layer"


def gradient_verdict(series: tuple[GradientSeries, ...],
                     by_depth: tuple[OutputGradient, ...] = ()) -> str:
    """What the gradients say per variant (measured, not assumed), and what each pattern means
    for training."""
    parts = [f"{s.variant}'s weight gradients are {_where(s.ratio('weight_grad'))} (last "
             f"quarter of the layers / first: {_times(s.ratio('weight_grad'))}; input gradients "
             f"{_times(s.ratio('input_grad'))})" for s in series]
    sentence = "At initialisation " + "; ".join(parts) + "."
    by_name = {s.variant: s for s in series}
    if "pre" in by_name and "post" in by_name:
        pre, post = by_name["pre"].layers[-1], by_name["post"].layers[-1]
        if pre.weight_grad > 0:
            sentence += (f" Near the output post-LN's weight gradient is "
                         f"{_times(post.weight_grad / pre.weight_grad)} pre-LN's at depth "
                         f"{len(by_name['pre'].layers)}{_with_depth(by_depth)}. Large first "
                         "steps near the output are why post-LN needs learning-rate warmup.")
    meaning = ("Forward norms and gains at initialisation say how a signal travels; gradients "
               "say where training moves the weights: a residual carries the gradient to every "
               "layer, a plain stack changes it geometrically with depth")
    return f"{sentence} {meaning} ({CITATION}, section 3)."
