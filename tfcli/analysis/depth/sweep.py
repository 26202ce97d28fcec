"""Depth sweep: stack one block (or one sublayer) to many depths and watch the signal.

Entry point: `run_depth_sweep(spec, DepthSweepOptions(...), progress) -> DepthSweepResult`.

Variants, for a sublayer body F and the spec's norm N (the spec's own norm_placement is ignored:
the variant decides where the norm goes):

    pre               x <- x + F(N(x))
    post              x <- N(x + F(x))
    plain             x <- F(N(x))          the lessons' "plain composition": no residual
    residual-no-norm  x <- x + F(x)

`--sublayer block` wraps attention, then the FFN, each per the variant; `attention` / `ffn`
stack that sublayer alone; `linear` is the lessons' stand-in: N = parameter-free LayerNorm and
F(x) = x @ W with W ~ N(0, weight_scale^2) (d x d). Attention is causal when the spec is a
decoder and bidirectional otherwise (encoders, and T5's encoder-decoder, whose encoder block is
the one stacked; cross-attention is never included). No final norm is applied: the residual
stream itself is measured.

Randomness (one seed, every variant sees the same weights and the same input): a generator
`np.random.default_rng(seed)` draws layer 0, then the input X0 ~ N(0, 1) (B, T, d), then the k
finite-difference directions (k, B, T, d). Layer i >= 1 comes from
`np.random.default_rng([seed, i])` (T5's shared relative-position table from [seed, 0]), so any
layer can be regenerated alone and a sweep to depth 64 measures at depth 8 exactly what a sweep
to depth 8 does. For the linear sublayer with --share-weights this is the lesson's order (W,
then X0), so its figures come out. Spec layers draw float32 normals (scaled by init_std, cast to
--dtype): a fast path that halves the cost of generating GPT-2-sized layers.

Measured per depth and variant (see depth_result.DepthPoint): per-position output norms (mean,
min, max) and the mean's ratio to the input's; the gain ||J v|| / ||v|| by central differences
(depth_stack explains how the pairs are carried); the mean cosine between positions. A variant
whose activations overflow (past sqrt(max / 16 d), where norms and LayerNorm variances would
overflow) or turn NaN is marked so from that layer on and is no longer propagated.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from pydantic import ValidationError

from tfcli.analysis.depth.gradients import check_gradients, gradient_report
from tfcli.checkpoints.npz import GivenArrays, read_npz_embeddings, read_weight_arrays
from tfcli.spec.blueprint import block_part, norm_components
from tfcli.analysis.depth.options import DepthSweepOptions
from tfcli.analysis.depth.result import DepthPoint, DepthSweepResult, VariantSummary, flags_for
from tfcli.analysis.depth.stack import (
    SUBLAYERS, VARIANTS, LayerBuilder, Measurement, SweepRecord, linear_builder, run_stack,
    spec_builder, start_states, sweep_stack, t5_position_bias,
)
from tfcli.analysis.depth.result import compose_verdict
from tfcli.analysis.depth.size import (MAX_DEPTH, MAX_SWEEP_WORK, SWEEP_OPTIONS, SweepSize,
                                       sweep_size)
from tfcli.analysis.allocation import MemoryLimit, check_fits
from tfcli.core.dtypes import SWEEP_DTYPES
from tfcli.core.errors import (BadInputError, SpecConsistencyError, check_names_listed_once,
                          not_one_of, shown)
from tfcli.spec.model import Spec

__all__ = ["DepthSweepOptions", "DepthSweepResult", "DepthPoint", "VariantSummary",
           "run_depth_sweep", "VARIANTS", "SUBLAYERS"]

LINEAR_DEFAULT_D_MODEL = 16  # --sublayer linear without a spec
LINEAR_NORM_EPS = 1e-5  # the lessons' layer_norm eps
# Spec overrides a sublayer never reads: linear takes only d_model (and the spec's norm eps).
_UNUSED_BY = {"linear": {"init_std", "n_heads", "n_kv_heads", "d_ff"},
              "attention": {"d_ff"}, "ffn": {"n_heads", "n_kv_heads"}}


def run_depth_sweep(
    spec: Spec | None,
    options: DepthSweepOptions,
    progress: Callable[[int, int], None] | None = None,
) -> DepthSweepResult:
    """Sweep depth for each variant in one pass; `progress(layers_done, layers_total)` per layer.

    Raises BadInputError for unusable options or overrides.
    """
    _check_options(options)
    spec = _apply_overrides(spec, options)
    options, x0 = given_inputs(spec, options)
    check_sweep_size(spec, options)
    setup = _Setup.build(spec, options)
    if options.gradients:
        check_gradients(spec, options, setup.d_model, setup.dtype.itemsize)
    given = given_weights(spec, options, setup.d_model)  # read and checked before the work
    with np.errstate(all="ignore"):  # overflow and NaN are measured, never raised
        record, input_norm = _sweep(spec, setup, options, progress, given, x0)
    result = _result(spec, options, setup, record, input_norm)
    notes = [] if x0 is None else [f"inputs: embeddings {x0.shape} from {options.inputs}."]
    if given is not None:
        notes += given.notes
    if notes:
        result = result.with_verdict(" ".join([*notes, result.verdict]))
    if not options.gradients:
        return result
    report = gradient_report(spec, options, setup.d_model, setup.dtype, setup.causal,
                             setup.weight_scale, setup.norm_eps,
                             None if given is None else given.arrays, x0)
    return replace(result, gradients=report)


# --- checking and resolving options ----------------------------------------------------------


def check_depth_sweep(spec: Spec | None, options: DepthSweepOptions) -> None:
    """Raise what run_depth_sweep would refuse, before any work (and before a progress bar):
    bad options, and a sweep whose memory or work is past the limits (see sweep_size)."""
    _check_options(options)
    resolved = _apply_overrides(spec, options)
    options, _ = given_inputs(resolved, options)
    check_sweep_size(resolved, options)
    if options.gradients:
        setup = _Setup.build(resolved, options)
        check_gradients(resolved, options, setup.d_model, setup.dtype.itemsize)


def check_sweep_size(spec: Spec | None, options: DepthSweepOptions,
                     limit: MemoryLimit | None = None) -> SweepSize:
    """The sweep's size; BadInputError, one line with the figures, past the memory this process
    may use or MAX_SWEEP_WORK."""
    d_model = spec.d_model if spec else _given(options).get("d_model", LINEAR_DEFAULT_D_MODEL)
    size = sweep_size(spec, d_model, options)
    check_fits(size.memory, limit)
    if size.work > MAX_SWEEP_WORK:
        raise BadInputError(
            f"depth-sweep to depth {max(options.depths):,} would take about {size.work:.2g} "
            f"FLOPs (and weight draws), over the limit of {MAX_SWEEP_WORK:.0e}; {SWEEP_OPTIONS}")
    return size


def _check_options(o: DepthSweepOptions) -> None:
    problems = []
    if not o.depths or any(not isinstance(d, int) or not 1 <= d <= MAX_DEPTH for d in o.depths):
        listed = ", ".join(f"{d:,}" if isinstance(d, int) else repr(d)[:20] for d in o.depths[:8])
        more = ", ..." if len(o.depths) > 8 else ""
        problems.append(f"--depths must be integers from 1 to {MAX_DEPTH:,} (got {listed}{more})")
    repeated = sorted(d for d, n in Counter(o.depths).items() if n > 1)  # O(n): 10^6 items
    if repeated:  # a sweep takes each point once, as memory / perf refuse --batch 1,1
        more = ", …" if len(repeated) > 8 else ""
        problems.append(f"--depths repeats {', '.join(map(str, repeated[:8]))}{more}: give each "
                        "depth once")
    problems += _variant_problems(o.variants)
    if o.sublayer not in SUBLAYERS:
        problems.append(not_one_of("--sublayer", o.sublayer, SUBLAYERS))
    if o.dtype not in SWEEP_DTYPES:
        problems.append(not_one_of("--dtype", o.dtype, SWEEP_DTYPES))
    for name, value in (("--seq-len", o.seq_len), ("--batch", o.batch), ("--directions", o.n_directions)):
        if value < 1:
            problems.append(f"{name} must be at least 1 (got {value})")
    if o.weight_scale is not None and (o.sublayer != "linear" or not o.weight_scale > 0):
        problems.append("--weight-scale applies to --sublayer linear only and must be > 0")
    elif o.weight_scale is not None and not math.isfinite(o.weight_scale):
        # Only inf: the sweep measures an overflow from a large finite scale (1e30) layer by
        # layer, but an infinite matrix turns every variant NaN at layer 1 and measures nothing.
        problems.append(f"--weight-scale must be finite (got {o.weight_scale:g})")
    elif o.weight_scale is not None and o.dtype in SWEEP_DTYPES \
            and o.weight_scale > _largest_scale(o.dtype):
        # Its draws would not fit the dtype: an infinite matrix again (3e38 in float32), and the
        # cast's overflow warning escapes errstate in the thread that draws the layers.
        problems.append(f"--weight-scale {shown(o.weight_scale)} overflows {o.dtype} weights: "
                        f"at most {shown(_largest_scale(o.dtype))} with --dtype {o.dtype}")
    if o.fd_step is not None and not 0 < o.fd_step < 1:
        problems.append(f"--fd-step must be in (0, 1) (got {o.fd_step})")
    if problems:
        raise BadInputError("; ".join(problems))


def _largest_scale(dtype: str) -> float:
    """The largest --weight-scale whose normal draws (|z| < 16) are finite in `dtype`."""
    return float(np.finfo(np.dtype(dtype)).max) / 16


def _variant_problems(variants: tuple[str, ...]) -> list[str]:
    """--variants: each a known stack, named once (a repeat would be measured twice)."""
    try:
        check_names_listed_once("--variants", variants, VARIANTS)
    except BadInputError as exc:
        return [exc.message]
    unknown = [v for v in variants if v not in VARIANTS]
    return [not_one_of("--variants", unknown[0], VARIANTS)] if unknown else []


def _given(options: DepthSweepOptions) -> dict[str, Any]:
    return {k: v for k, v in options.overrides.items() if v is not None}


def _flags(fields: list[str]) -> str:
    """Override fields as the options that set them: n_kv_heads -> --n-kv-heads."""
    return ", ".join("--" + name.replace("_", "-") for name in fields)


def _apply_overrides(spec: Spec | None, options: DepthSweepOptions) -> Spec | None:
    changes = _given(options)
    if spec is None:
        if options.sublayer != "linear":
            raise BadInputError(f"--sublayer {options.sublayer} needs a SPEC (only linear runs without one)")
        extra = sorted(set(changes) - {"d_model"})
        if extra:
            raise BadInputError(f"{_flags(extra)}: without a SPEC only --d-model applies "
                                "(--sublayer linear stacks d_model x d_model matrices)")
        d_model = changes.get("d_model", LINEAR_DEFAULT_D_MODEL)
        if not isinstance(d_model, int) or d_model < 1:
            raise BadInputError(f"--d-model must be a positive integer (got {d_model!r})")
        return None
    if not changes:
        return spec
    unused = sorted(set(changes) & _UNUSED_BY.get(options.sublayer, set()))
    if unused:  # an override the stacked layer never reads would be silently ignored
        them = "them" if len(unused) > 1 else "it"
        raise BadInputError(f"--sublayer {options.sublayer} does not use {_flags(unused)}: drop "
                            f"{them} (--sublayer block uses every override)")
    try:
        return spec.replace(**changes)
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'spec'}: {e['msg']}" for e in exc.errors())
        raise BadInputError(f"bad override: {fields}") from None
    except SpecConsistencyError as exc:
        raise BadInputError(f"bad override: {exc.message}") from None


@dataclass(frozen=True)
class _Setup:
    """Everything the sweep needs that is derived from the spec and options once."""

    d_model: int
    dtype: np.dtype
    causal: bool
    weight_scale: float | None  # linear only
    norm_eps: float
    step_rel: float
    limit: float  # |activation| past this is reported as overflow

    @staticmethod
    def build(spec: Spec | None, o: DepthSweepOptions) -> _Setup:
        d_model = spec.d_model if spec else _given(o).get("d_model", LINEAR_DEFAULT_D_MODEL)
        dtype = np.dtype(o.dtype)
        causal = o.causal if o.causal is not None else bool(spec and spec.family == "decoder")
        linear = o.sublayer == "linear"
        scale = (o.weight_scale or d_model**-0.5) if linear else None
        eps = spec.norm_eps if spec else LINEAR_NORM_EPS
        step = o.fd_step or float(np.finfo(dtype).eps ** (1 / 3))
        # Past sqrt(max / 16d), a LayerNorm's variance or a norm's sum of squares overflows.
        limit = float(np.sqrt(np.finfo(dtype).max / (16 * d_model)))
        return _Setup(d_model, dtype, causal and not linear, scale, eps, step, limit)


# --- the sweep -------------------------------------------------------------------------------


def _sweep(spec: Spec | None, setup: _Setup, o: DepthSweepOptions,
           progress: Callable[[int, int], None] | None,
           given: GivenArrays | None = None,
           given_x0: np.ndarray | None = None) -> tuple[SweepRecord, float]:
    """Draw layer 0, the input and the directions from default_rng(seed); run the stack.
    A given input (--inputs) replaces the drawn one after its draw, so that the directions
    are the same draws as without it."""
    root = np.random.default_rng(o.seed)
    build = _builder(spec, o, setup, given)
    first_layer = build(root, 0)  # layer 0 is drawn first: the lesson draws W before X0
    shape = (o.batch, o.seq_len, setup.d_model)
    x0 = root.normal(size=shape).astype(setup.dtype)  # (B, T, d)
    if given_x0 is not None:
        x0 = given_x0.astype(setup.dtype)
    directions = root.normal(size=(o.n_directions, *shape)).astype(setup.dtype)  # (k, B, T, d)
    states = start_states(o.variants, x0, directions, setup.step_rel)
    record = run_stack(
        states, first_layer, build, seed=o.seed, depths=o.depths, share_weights=o.share_weights,
        step_rel=setup.step_rel, limit=setup.limit, progress=progress,
    )
    input_norm = float(np.linalg.norm(x0.astype(np.float64), axis=-1).mean())
    return record, input_norm


def given_inputs(spec: Spec | None,
                 o: DepthSweepOptions) -> tuple[DepthSweepOptions, np.ndarray | None]:
    """--inputs FILE.npz: its `embeddings` (B, N, d_model) are the stack's input X0, and its
    B and N the sweep's --batch and --seq-len (the options come back with them set)."""
    if o.inputs is None:
        return o, None
    d_model = spec.d_model if spec else _given(o).get("d_model", LINEAR_DEFAULT_D_MODEL)
    owner = f"{spec.name}'s stacked layer" if spec else "the linear sublayer"
    x0 = read_npz_embeddings(o.inputs, d_model, owner)  # (B, N, d)
    if not np.isfinite(x0).all():
        raise BadInputError(f"--inputs {o.inputs}: embeddings hold inf or NaN")
    return replace(o, batch=x0.shape[0], seq_len=x0.shape[1]), x0


def given_weights(spec: Spec | None, o: DepthSweepOptions, d_model: int) -> GivenArrays | None:
    """--weights FILE.npz read and checked against the layers the sweep draws: for `linear`,
    `blocks.{i}.w` (d, d); for a spec, `{stack}.blocks.{i}.attn_norm / attn / ffn_norm / ffn`
    with its block's shapes (`*` for every layer); i < the deepest depth (1 with
    --share-weights, whose one layer is layer 0)."""
    if o.weights is None:
        return None
    layers = 1 if o.share_weights else max(o.depths)
    if spec is None or o.sublayer == "linear":
        shapes = {f"blocks.{i}.w": (d_model, d_model) for i in range(layers)}
        return read_weight_arrays(o.weights, shapes, "the linear sublayer")
    stack = sweep_stack(spec)
    parts = {"block": ("attn", "ffn"), "attention": ("attn",), "ffn": ("ffn",)}[o.sublayer]
    own: dict[str, tuple[int, ...]] = {}
    for part in parts:
        _, entries = block_part(spec, stack, 0, part)
        own |= {e.path.split(".", 3)[-1]: e.component.shape for e in entries if e.component.array}
        own |= {f"{part}_norm.{c.path.split('.')[-1]}": c.shape for c in norm_components(spec)
                if c.array}
    shapes = {f"{stack}.blocks.{i}.{rel}": shape for i in range(layers)
              for rel, shape in own.items()}
    return read_weight_arrays(o.weights, shapes, f"{spec.name}'s stacked layer")


def _builder(spec: Spec | None, o: DepthSweepOptions, setup: _Setup,
             given: GivenArrays | None = None) -> LayerBuilder:
    arrays = None if given is None else given.arrays
    if o.sublayer == "linear":
        return linear_builder(setup.d_model, setup.weight_scale or 0.0, setup.norm_eps,
                              setup.dtype, arrays)
    if spec is None:  # _apply_overrides already refuses this; kept for the type checker
        raise BadInputError(f"--sublayer {o.sublayer} needs a SPEC")
    bias = t5_position_bias(spec, np.random.default_rng([o.seed, 0]), o.seq_len, setup.causal,
                            setup.dtype)
    return spec_builder(spec, o.sublayer, setup.causal, setup.dtype, bias, arrays)


def _result(spec: Spec | None, o: DepthSweepOptions, setup: _Setup, record: SweepRecord,
            input_norm: float) -> DepthSweepResult:
    depths = tuple(sorted(set(o.depths)))
    points = tuple(
        _point(depth, variant, record.outcomes[(depth, variant)], input_norm)
        for depth in depths for variant in o.variants
    )
    summaries = tuple(VariantSummary(v, *record.failed.get(v, ("ok", None))) for v in o.variants)
    result = DepthSweepResult(
        spec_name=spec.name if spec else None, sublayer=o.sublayer, causal=setup.causal,
        d_model=setup.d_model, seq_len=o.seq_len, batch=o.batch, seed=o.seed, dtype=o.dtype,
        share_weights=o.share_weights, weight_scale=setup.weight_scale,
        init_std=spec.init_std if spec and o.sublayer != "linear" else None,
        n_directions=o.n_directions, fd_step=setup.step_rel, depths=depths,
        variants=summaries, input_norm=input_norm, points=points, verdict="",
        overrides=dict(_given(o)),
    )
    return result.with_verdict(compose_verdict(result))


def _point(depth: int, variant: str, outcome: Measurement | str, input_norm: float) -> DepthPoint:
    if isinstance(outcome, str):
        return DepthPoint(depth, variant, outcome, None, None, None, None, None, None, ())
    ratio = outcome.norm_mean / input_norm
    return DepthPoint(
        depth, variant, "ok", outcome.norm_mean, outcome.norm_min, outcome.norm_max, ratio,
        outcome.gain, outcome.cosine, flags_for(ratio, outcome.cosine),
    )
