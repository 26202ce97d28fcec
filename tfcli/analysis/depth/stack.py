"""The numerics of the depth sweep: layers built from the seed on demand, the four ways of
wrapping a sublayer, and the streams carried through the stack together.

Streams. Each variant carries one array (S, B, T, d) with S = 1 + 2k: stream 0 is the measured
input; streams 1..k and k+1..2k are x + h t_j and x - h t_j for k unit directions t_j. After
every layer the pair gives J t_j by central differences, (f(x + h t) - f(x - h t)) / 2h; its
norm is that layer's gain along t_j, summed in log space, and the pair is rebuilt around the new
x along J t_j / ||J t_j||. The product of the layer gains is ||J_L ... J_1 t|| exactly as one
difference across the whole stack would give it, but the step never leaves the linear regime
however far the stack stretches or squeezes (Benettin et al. 1980, the Lyapunov-exponent trick).

All variants and all streams go through each sublayer body as one batch: one layer's weights
are drawn once and used once per sublayer, whatever the number of variants and directions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.attention import attention
from tfcli.engine.blas import blas_threads
from tfcli.engine.inputs import StackInput
from tfcli.engine.ffn import ffn
from tfcli.engine.ops import apply_norm
from tfcli.engine.positions import relative_bias
from tfcli.engine.init import Initializer
from tfcli.engine.latent_attention import latent_attention
from tfcli.engine.weights import AttentionWeights, FFNWeights, LatentAttentionWeights, MoEWeights
from tfcli.spec.model import Spec

VARIANTS = ("pre", "post", "plain", "residual-no-norm")
SUBLAYERS = ("block", "attention", "ffn", "linear")
_NORM_FIRST = frozenset({"pre", "plain"})  # variants whose sublayer body reads Norm(x)


@dataclass(frozen=True)
class Sublayer:
    norm: Callable[[Array], Array]  # (N, T, d) -> (N, T, d)
    body: Callable[[Array], Array]  # F: (N, T, d) -> (N, T, d), no norm, no residual


Layer = tuple[Sublayer, ...]
LayerBuilder = Callable[[np.random.Generator, int], Layer]  # (the layer's generator, its index)
Given = dict[str, Array]  # --weights FILE.npz: arrays by concrete key (decoder.blocks.3.attn.wq)


def sweep_stack(spec: Spec) -> str:
    """The stack whose block the sweep draws (Initializer.part's default): its keys' prefix."""
    return "encoder" if spec.has_encoder else "decoder"


def given_into(container: object, prefix: str, given: Given | None, dtype: np.dtype) -> None:
    """Replace the container's arrays by those --weights gives at `prefix`.field, cast to the
    sweep's dtype (the draw itself still happened: the seed's stream stays the same)."""
    if not given or container is None:
        return
    for name in vars(container):
        key = f"{prefix}.{name}"
        if key in given:
            setattr(container, name, given[key].astype(dtype))


# --- building one layer ----------------------------------------------------------------------


class Float32Initializer(Initializer):
    """Initializer drawing float32 normals: twice as fast as float64 draws, which dominate the
    cost of generating a GPT-2-sized layer. Every variant still sees the same arrays."""

    def normal(self, *shape: int) -> Array:
        draws = self.rng.standard_normal(shape, dtype=np.float32)
        out = np.empty(shape, dtype=self.dtype)
        return np.multiply(draws, self.spec.init_std, out=out, casting="unsafe")  # scale and cast in one pass


def linear_builder(d_model: int, weight_scale: float, eps: float, dtype: np.dtype,
                   given: Given | None = None) -> LayerBuilder:
    """The lessons' stand-in sublayer: parameter-free LayerNorm, then x @ W, W ~ N(0, scale^2);
    layer i's W from --weights' `blocks.i.w` when given."""

    def norm(x: Array) -> Array:
        return apply_norm("layernorm_noaffine", None, x, eps)

    def build(rng: np.random.Generator, index: int) -> Layer:
        w = rng.normal(scale=weight_scale, size=(d_model, d_model)).astype(dtype)  # (d, d)
        if given and f"blocks.{index}.w" in given:
            w = given[f"blocks.{index}.w"].astype(dtype)
        return (Sublayer(norm, lambda x: x @ w),)  # (N, T, d) -> (N, T, d)

    return build


def spec_builder(spec: Spec, sublayer: str, causal: bool, dtype: np.dtype,
                 position_bias: Array | None, given: Given | None = None) -> LayerBuilder:
    """The spec's own attention and/or FFN sublayer with its norm, weights from `rng`, or from
    --weights at `{stack}.blocks.{index}.attn_norm / attn / ffn_norm / ffn`."""
    packing = _Packing(causal, position_bias, dtype, spec.sliding_window)
    block = f"{sweep_stack(spec)}.blocks"

    def build(rng: np.random.Generator, index: int) -> Layer:
        init = Float32Initializer(spec, rng, dtype)
        parts: list[Sublayer] = []
        at = f"{block}.{index}"
        if sublayer in ("block", "attention"):
            norm_w, attn_w = init.norm(), init.part("attn")
            given_into(norm_w, f"{at}.attn_norm", given, dtype)
            given_into(attn_w, f"{at}.attn", given, dtype)
            parts.append(Sublayer(_spec_norm(spec, norm_w),
                                  lambda x: packing.attention(spec, attn_w, x)))
        if sublayer in ("block", "ffn"):
            norm_w, ffn_w = init.norm(), init.part("ffn")
            given_into(norm_w, f"{at}.ffn_norm", given, dtype)
            given_into(ffn_w, f"{at}.ffn", given, dtype)
            parts.append(Sublayer(_spec_norm(spec, norm_w), lambda x: _positionwise(spec, ffn_w, x)))
        return tuple(parts)

    return build


PACK_ROWS = 128  # positions per packed attention call


class _Packing:
    """Attention over many short sequences, packed side by side into few long ones.

    NumPy runs a (B, T, d) @ (d, e) product as B separate small GEMMs, each re-reading the whole
    weight matrix: with B = variants x streams x batch = 27 sequences of 16 positions that is
    several times slower than one (B*T, d) GEMM, and far worse on a busy machine. Packing p
    sequences into one of p*T positions, with a block-diagonal mask so that no position sees
    another sequence (the sequence-packing trick), gives identical outputs from few large GEMMs.
    """

    def __init__(self, causal: bool, position_bias: Array | None, dtype: np.dtype,
                 window: int | None = None) -> None:
        self.causal, self.position_bias, self.dtype = causal, position_bias, dtype
        self.window = window  # the spec's sliding window (causal only), None = unlimited
        self._masks: dict[tuple[int, int], Array] = {}

    def attention(self, spec: Spec, w: AttentionWeights | LatentAttentionWeights, x: Array) -> Array:
        """x (N, T, d) -> (N, T, d), each sequence attending only within itself."""
        n_seq, length, width = x.shape
        if isinstance(w, LatentAttentionWeights):  # MLA adds no mask: one sequence per call
            inputs = StackInput.over(length, self.causal)
            return np.concatenate([latent_attention(spec, w, x[i:i + 1], inputs)
                                   for i in range(n_seq)])  # (1, T, d) each -> (N, T, d)
        per_call = max(1, PACK_ROWS // length)
        out = np.empty_like(x)
        for start in range(0, n_seq, per_call):
            chunk = x[start : start + per_call]  # (p, T, d)
            p = chunk.shape[0]
            positions = np.tile(np.arange(length), p)[None]  # (1, p*T)
            inputs = StackInput(False, positions, positions, position_bias=self._mask(p, length))
            packed = attention(spec, w, chunk.reshape(1, p * length, width), inputs)
            out[start : start + p] = packed.reshape(p, length, width)  # (1, p*T, d) -> (p, T, d)
        return out

    def _own(self, length: int) -> Array:
        """(T, T) True where query i may see key j within one sequence: all, j <= i (causal), or
        i - window < j <= i (causal with a sliding window)."""
        if not self.causal:
            return np.ones((length, length), bool)
        visible = np.tril(np.ones((length, length), bool))
        # a window as long as the sequence hides nothing (and np.tril's k must fit a C long:
        # a spec's window of 2**63 was an OverflowError)
        if self.window is not None and self.window < length:
            visible &= ~np.tril(np.ones((length, length), bool), -self.window)
        return visible

    def _mask(self, p: int, length: int) -> Array:
        """(1, 1|H, pT, pT): 0 (plus T5 bias) inside each sequence's own block, -inf elsewhere."""
        key = (p, length)
        if key not in self._masks:
            allowed = np.kron(np.eye(p, dtype=bool), self._own(length))  # (pT, pT) block diagonal
            mask = np.where(allowed, 0.0, -np.inf)[None, None]  # (1, 1, pT, pT)
            if self.position_bias is not None:
                mask = mask + np.tile(self.position_bias, (1, 1, p, p))  # (1, H, pT, pT)
            self._masks[key] = mask.astype(self.dtype)
        return self._masks[key]


def _positionwise(spec: Spec, w: FFNWeights | MoEWeights, x: Array) -> Array:
    """The FFN on all positions of all sequences as one (1, N*T, d) batch: it is position-wise,
    and NumPy runs a 3-D @ 2-D product as one small GEMM per sequence (several times slower)."""
    return ffn(spec, w, x.reshape(1, -1, x.shape[-1])).reshape(x.shape)


def _spec_norm(spec: Spec, weights: object) -> Callable[[Array], Array]:
    return lambda x: apply_norm(spec.norm, weights, x, spec.norm_eps,  # type: ignore[arg-type]
                                spec.norm_unit_offset)


def t5_position_bias(spec: Spec, rng: np.random.Generator, seq_len: int, causal: bool,
                     dtype: np.dtype) -> Array | None:
    """T5's relative bias (1, H, T, T) from one table shared by the stack, as in T5 itself."""
    if spec.positions != "relative":
        return None
    table = rng.standard_normal((spec.relative_buckets, spec.n_heads)) * spec.init_std
    positions = np.arange(seq_len)[None]  # (1, T)
    bias = relative_bias(table, positions, positions, bidirectional=not causal,
                         max_distance=spec.relative_max_distance)
    return bias.astype(dtype)


# --- the variants ----------------------------------------------------------------------------


def body_input(variant: str, sub: Sublayer, x: Array) -> Array:
    """What F reads: Norm(x) for pre and plain, x itself for post and residual-no-norm."""
    return sub.norm(x) if variant in _NORM_FIRST else x


def wrap_output(variant: str, sub: Sublayer, x: Array, f: Array) -> tuple[Array, Array]:
    """The variant's new x from x and f = F(...), and the pre-norm sum it went through."""
    if variant == "plain":
        return f, f
    total = x + f
    return (sub.norm(total), total) if variant == "post" else (total, total)


# --- the streams -----------------------------------------------------------------------------


@dataclass
class VariantState:
    """One variant's streams and what has been learnt about them so far."""

    name: str
    x: Array  # (S, B, T, d): stream 0, then k plus streams, then k minus streams
    step: Array  # (B,) the finite-difference step h now applied around stream 0
    log_gain: Array  # (k, B) sum over layers of log ||J t|| along each direction
    status: str = "ok"  # ok | overflow | nan
    failed_at: int | None = None  # the layer (1-based) where it overflowed or went NaN

    @property
    def n_directions(self) -> int:
        return self.log_gain.shape[0]


def frobenius(x: Array, axes: tuple[int, ...]) -> Array:
    """sqrt(sum x^2) over `axes`, scaled first so that huge finite values do not overflow."""
    peak = np.abs(x).max(axis=axes, keepdims=True)
    safe = np.where(peak > 0, peak, 1.0)
    return (np.sqrt(np.square(x / safe).sum(axis=axes, keepdims=True)) * peak).squeeze(axes)


def start_states(variants: Sequence[str], x0: Array, directions: Array,
                 step_rel: float) -> list[VariantState]:
    """Every variant starts from the same input x0 (B, T, d) and directions (k, B, T, d)."""
    unit = directions / frobenius(directions, (2, 3))[..., None, None]  # (k, B, T, d)
    step = step_rel * frobenius(x0, (1, 2))  # (B,)
    streams = _streams(x0, unit, step)
    return [VariantState(v, streams.copy(), step.copy(), np.zeros(unit.shape[:2])) for v in variants]


def _streams(x: Array, unit: Array, step: Array) -> Array:
    offset = unit * step[None, :, None, None].astype(x.dtype)  # (k, B, T, d)
    return np.concatenate([x[None], x[None] + offset, x[None] - offset])  # (1 + 2k, B, T, d)


def health(arrays: Sequence[Array], limit: float) -> str:
    """ok, or overflow (|value| past `limit` or inf) or nan: the first problem found."""
    for a in arrays:
        peak = np.abs(a).max()
        if np.isnan(peak):
            return "overflow" if np.isinf(a).any() else "nan"
        if peak > limit:
            return "overflow"
    return "ok"


def apply_layer(states: list[VariantState], layer: Layer, limit: float) -> None:
    """Run every healthy variant's streams through one layer, all bodies batched."""
    for sub in layer:
        active = [s for s in states if s.status == "ok"]
        if not active:
            return
        shape = active[0].x.shape  # (S, B, T, d)
        inputs = [body_input(s.name, sub, s.x).reshape(-1, *shape[2:]) for s in active]
        f_all = sub.body(np.concatenate(inputs))  # (V*S*B, T, d) -> same
        for s, f in zip(active, np.split(f_all, len(active))):
            s.x, total = wrap_output(s.name, sub, s.x, f.reshape(shape))
            s.status = health((f, total, s.x), limit)


def refresh_directions(s: VariantState, step_rel: float) -> None:
    """Read this layer's J t off the difference pairs, add its log norm, and re-centre them."""
    k = s.n_directions
    x = s.x[0]  # (B, T, d)
    jt = (s.x[1 : k + 1] - s.x[k + 1 :]) / (2 * s.step[None, :, None, None])  # (k, B, T, d)
    gain = frobenius(jt, (2, 3))  # (k, B)
    s.log_gain += np.log(gain)
    unit = jt / np.where(gain > 0, gain, 1.0)[..., None, None]
    s.step = step_rel * frobenius(x, (1, 2))  # (B,)
    s.x = _streams(x, unit, s.step)


# --- measuring -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    norm_mean: float  # per-position output norm, mean over batch and positions
    norm_min: float
    norm_max: float
    gain: float  # ||J v|| / ||v||, mean over directions and batch
    cosine: float | None  # mean pairwise cosine between positions; None for one position


def measure(s: VariantState) -> Measurement:
    x = s.x[0].astype(np.float64)  # (B, T, d)
    norms = frobenius(x, (2,))  # (B, T)
    return Measurement(
        float(norms.mean()), float(norms.min()), float(norms.max()),
        float(np.exp(s.log_gain).mean()), mean_cosine(x, norms),
    )


def mean_cosine(x: Array, norms: Array) -> float | None:
    """Mean cosine over pairs of distinct positions: 1 means rank collapse. x (B, T, d)."""
    n_pos = x.shape[1]
    if n_pos < 2:
        return None
    unit = x / np.where(norms > 0, norms, 1.0)[..., None]  # (B, T, d)
    gram = unit @ unit.transpose(0, 2, 1)  # (B, T, T)
    off_diagonal = gram.sum(axis=(1, 2)) - np.trace(gram, axis1=1, axis2=2)  # (B,)
    return float((off_diagonal / (n_pos * (n_pos - 1))).mean())


# --- the sweep -------------------------------------------------------------------------------


@dataclass
class SweepRecord:
    """Raw per-(depth, variant) outcomes: a Measurement, or the status that stopped it."""

    outcomes: dict[tuple[int, str], Measurement | str] = field(default_factory=dict)
    failed: dict[str, tuple[str, int]] = field(default_factory=dict)  # variant -> (status, layer)


def layer_rng(seed: int, index: int) -> np.random.Generator:
    """Layer `index` (>= 1) has its own stream, so any layer can be regenerated alone."""
    return np.random.default_rng([seed, index])


def run_stack(
    states: list[VariantState],
    first_layer: Layer,
    build: LayerBuilder,
    *,
    seed: int,
    depths: Sequence[int],
    share_weights: bool,
    step_rel: float,
    limit: float,
    progress: Callable[[int, int], None] | None = None,
) -> SweepRecord:
    """One pass to max(depths), measuring at each listed depth; one layer alive at a time, plus
    the next one, drawn on a worker thread while this one runs (drawing is NumPy C code that
    releases the GIL). While it draws, BLAS keeps to one thread: one core draws, one multiplies,
    instead of three threads fighting for two cores (several times slower on a busy machine)."""
    record, wanted, deepest = SweepRecord(), set(depths), max(depths)
    drawing = not share_weights and deepest > 1
    with ThreadPoolExecutor(max_workers=1) as pool, blas_threads(1 if drawing else None):
        pending: Future[Layer] | None = None
        layer = first_layer
        for depth in range(1, deepest + 1):
            if not share_weights and depth < deepest:
                pending = pool.submit(build, layer_rng(seed, depth), depth)
            apply_layer(states, layer, limit)
            _after_layer(states, depth, step_rel, record, depth in wanted)
            if progress is not None:
                progress(depth, deepest)
            if pending is not None:
                layer, pending = pending.result(), None
    return record


def _after_layer(states: list[VariantState], depth: int, step_rel: float,
                 record: SweepRecord, wanted: bool) -> None:
    for s in states:
        if s.status == "ok":
            refresh_directions(s, step_rel)
        elif s.failed_at is None:
            s.failed_at = depth
            record.failed[s.name] = (s.status, depth)
            s.x = s.x[:0]  # drop its streams: nothing more is propagated
        if wanted:
            record.outcomes[(depth, s.name)] = measure(s) if s.status == "ok" else s.status
