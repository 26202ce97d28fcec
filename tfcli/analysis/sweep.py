"""Sweeps: one command's per-point result at every (batch, seq_len) of `--batch 1,8,32
--seq-len 1024,8192`, and the key figures of each point as the columns of one table.

A sweep is a list of (point, result) pairs, each result what the command's own builder returns
for that one point (`build_memory_plan`, `build_perf_estimate`, `build_trace`): nothing here
estimates anything. The comma lists are parsed once, here, with tfcli.core.intlist (ASCII digits
only), and bounded: MAX_POINTS points in all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from tfcli.core.errors import BadInputError
from tfcli.core.intlist import echo, parse_int_list

R = TypeVar("R")
Number = int | float
MAX_POINTS = 64  # a table of 64 rows is still read; more is a job for --format csv and a loop


@dataclass(frozen=True)
class SweepPoint:
    batch: int
    seq_len: int


@dataclass(frozen=True)
class SweepAxes:
    """The values of each swept option, in the order given; the points are their product,
    batch-major (every seq_len of the first batch, then the next batch)."""

    batches: tuple[int, ...]
    seq_lens: tuple[int, ...]

    @property
    def points(self) -> list[SweepPoint]:
        return [SweepPoint(b, s) for b in self.batches for s in self.seq_lens]

    @property
    def is_sweep(self) -> bool:
        """More than one point: a sweep table, not the command's one-point report."""
        return len(self.batches) * len(self.seq_lens) > 1


@dataclass(frozen=True)
class Figure(Generic[R]):
    """One column of the sweep table: a figure read off each point's result."""

    key: str  # the CSV / JSON name, e.g. "total_bytes"
    label: str  # the table header, e.g. "total"
    unit: str  # "bytes", "FLOP", "s", "token/s" or "" (a plain number)
    value: Callable[[R], Number | None]

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "label": self.label, "unit": self.unit}


def parse_axis(text: str, option: str) -> tuple[int, ...]:
    """'1, 8,32' -> (1, 8, 32): positive integers, each once, at most MAX_POINTS of them."""
    if text.count(",") >= MAX_POINTS:
        raise BadInputError(f"{option} has {text.count(',') + 1:,} values; a sweep takes at "
                            f"most {MAX_POINTS} points")
    values = parse_int_list(text, option)
    if 0 in values:
        raise BadInputError(f"{option} values must be at least 1; got 0 in {echo(text)}")
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise BadInputError(f"{option} repeats {', '.join(map(str, repeated))}: give each value once")
    return tuple(values)


def sweep_axes(batch: str, seq_len: str | None, default_seq_len: int,
               options: tuple[str, str] = ("--batch", "--seq-len")) -> SweepAxes:
    """The swept values of the two options; seq_len None is the command's default length.
    Refuses more than MAX_POINTS points in all, naming both options."""
    batches = parse_axis(batch, options[0])
    seq_lens = (default_seq_len,) if seq_len is None else parse_axis(seq_len, options[1])
    count = len(batches) * len(seq_lens)
    if count > MAX_POINTS:
        raise BadInputError(f"{options[0]} x {options[1]} is {len(batches)} x {len(seq_lens)} = "
                            f"{count} points; a sweep takes at most {MAX_POINTS}")
    return SweepAxes(batches, seq_lens)


@dataclass(frozen=True)
class SweepResult(Generic[R]):
    """(point, result) pairs in sweep order, and each point's figures (None: not defined there,
    as a decode figure of an encoder)."""

    command: str  # "memory", "perf", "trace"
    spec_name: str
    axes: SweepAxes
    figures: tuple[Figure[R], ...]
    pairs: tuple[tuple[SweepPoint, R], ...]
    values: tuple[tuple[Number | None, ...], ...]  # per pair, per figure
    notes: tuple[str, ...] = field(default_factory=tuple)
    about: str = ""  # what every point shares, for the title: "on H100 SXM, bfloat16"

    def column(self, key: str) -> list[Number | None]:
        index = next(i for i, f in enumerate(self.figures) if f.key == key)
        return [row[index] for row in self.values]

    def series(self, key: str) -> list[tuple[int, list[int], list[Number | None]]]:
        """Per batch: (batch, seq_lens, the figure at each) for a chart's lines."""
        column = self.column(key)
        lines = []
        for batch in self.axes.batches:
            picked = [(p.seq_len, v) for (p, _), v in zip(self.pairs, column) if p.batch == batch]
            lines.append((batch, [s for s, _ in picked], [v for _, v in picked]))
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command, "spec": self.spec_name, "about": self.about,
            "batches": list(self.axes.batches), "seq_lens": list(self.axes.seq_lens),
            "figures": [f.to_dict() for f in self.figures],
            "points": [{"batch": p.batch, "seq_len": p.seq_len,
                        **{f.key: v for f, v in zip(self.figures, row)},
                        "result": _result_dict(result)}
                       for (p, result), row in zip(self.pairs, self.values)],
            "notes": list(self.notes),
        }

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        header = ["batch", "seq_len", *(f.key for f in self.figures)]
        return header, [[p.batch, p.seq_len, *row] for (p, _), row in zip(self.pairs, self.values)]


def _result_dict(result: Any) -> Any:
    to_dict = getattr(result, "to_dict", None)
    return to_dict() if callable(to_dict) else None


def _figure_value(figure: Figure[R], result: R) -> Number | None:
    value = figure.value(result)
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else value


def run_sweep(command: str, spec_name: str, axes: SweepAxes, build: Callable[[SweepPoint], R],
              figures: Sequence[Figure[R]], *, about: Callable[[R], str] | None = None,
              notes_of: Callable[[R], Sequence[str]] | None = None,
              progress: Callable[[int, int], None] | None = None) -> SweepResult[R]:
    """`build` at every point of `axes`, in order; each result's figures read once. The notes
    are the results' own (`notes_of`, else their `notes`), each once; `about` reads the
    title's context off the first result."""
    notes_of = notes_of or (lambda r: getattr(r, "notes", None) or ())
    pairs: list[tuple[SweepPoint, R]] = []
    points = axes.points
    for done, point in enumerate(points):
        pairs.append((point, build(point)))
        if progress is not None:
            progress(done + 1, len(points))
    values = tuple(tuple(_figure_value(f, r) for f in figures) for _, r in pairs)
    notes = dict.fromkeys(str(n) for _, r in pairs for n in notes_of(r))
    context = about(pairs[0][1]) if about is not None and pairs else ""
    return SweepResult(command, spec_name, axes, tuple(figures), tuple(pairs), values,
                       tuple(notes), context)


# --- the first client: trace's totals -----------------------------------------------------------


def trace_figures() -> tuple[Figure[Any], ...]:
    """The analytic trace's totals at each point (tfcli.analysis.trace.build.TraceReport)."""
    return (Figure("flops", "forward FLOPs", "FLOP", lambda r: r.total_flops),
            Figure("flops_per_token", "FLOPs / token", "FLOP", lambda r: r.flops_per_token),
            Figure("act_bytes", "op outputs", "bytes", lambda r: r.total_act_bytes))


def trace_sweep(spec: Any, axes: SweepAxes, dtype: str = "float32") -> SweepResult[Any]:
    """build_trace at every point: forward FLOPs, FLOPs per token and op-output bytes."""
    from tfcli.analysis.trace.build import build_trace

    return run_sweep("trace", spec.name, axes,
                     lambda p: build_trace(spec, batch=p.batch, seq_len=p.seq_len, dtype=dtype),
                     trace_figures())


# --- tfcli perf -------------------------------------------------------------------------------


def perf_figures(train: bool) -> tuple[Figure[Any], ...]:
    """A PerfEstimate's headline figures (tfcli.analysis.perf.estimate); decode's are None for a spec
    without a decoder, training's only with --train."""
    def decode(read: Callable[[Any], Number]) -> Callable[[Any], Number | None]:
        return lambda e: None if e.decode is None else read(e.decode)

    figures: list[Figure[Any]] = [
        Figure("ttft_seconds", "time to first token", "s", lambda e: e.ttft_seconds),
        Figure("prefill_flops", "prefill FLOPs", "FLOP", lambda e: e.prefill.flops),
        Figure("decode_tokens_per_s", "decode tokens/s", "token/s", decode(lambda d: d.tokens_per_s)),
        Figure("decode_step_seconds", "decode step", "s", decode(lambda d: d.seconds)),
        Figure("decode_kv_bytes", "KV read / step", "bytes", decode(lambda d: d.kv_bytes)),
    ]
    if train:
        figures += [Figure("train_step_seconds", "training step", "s",
                           lambda e: e.training.step_seconds),
                    Figure("train_tokens_per_s", "training tokens/s", "token/s",
                           lambda e: e.training.tokens_per_s)]
    return tuple(figures)


def perf_sweep(spec: Any, options: Any, axes: SweepAxes,
               progress: Callable[[int, int], None] | None = None) -> SweepResult[Any]:
    """build_perf_estimate at every point, the other options as given."""
    from dataclasses import replace

    from tfcli.analysis.perf.estimate import build_perf_estimate

    return run_sweep(
        "perf", spec.name, axes,
        lambda p: build_perf_estimate(spec, replace(options, batch=p.batch, seq_len=p.seq_len)),
        perf_figures(options.train), progress=progress,
        about=lambda e: f"on {e.accelerator.name}, {e.dtype} (KV {e.kv_dtype}), MFU {e.mfu:g}")


# --- tfcli memory -----------------------------------------------------------------------------


def memory_figures(train: bool, with_gpu: bool) -> tuple[Figure[Any], ...]:
    """A MemoryReport's total, with --gpu the verdict and what is left over (negative: short
    by that much), then its parts (tfcli.analysis.memory.fit / memory_plan); a narrow table
    keeps the first ones."""
    def part(name: str) -> Callable[[Any], Number]:
        return lambda r: r.plan.part(name)

    figures: list[Figure[Any]] = [Figure("total_bytes", "total", "bytes", lambda r: r.plan.total)]
    if with_gpu:
        figures += [Figure("fits", "fits", "yes/no", lambda r: r.fit.fits),
                    Figure("headroom_bytes", "headroom", "bytes",
                           lambda r: r.fit.usable_bytes - r.fit.need_bytes)]
    figures.append(Figure("weights_bytes", "weights", "bytes", part("weights")))
    if train:
        figures += [Figure("gradients_bytes", "gradients", "bytes", part("gradients")),
                    Figure("optimizer_bytes", "optimizer state", "bytes", part("optimizer state"))]
    else:
        figures.append(Figure("kv_cache_bytes", "KV cache", "bytes", part("KV cache")))
    figures.append(Figure("activations_bytes", "activations", "bytes", part("activations")))
    return tuple(figures)


def memory_sweep(spec: Any, options: Any, axes: SweepAxes, gpu: Any = None) -> SweepResult[Any]:
    """build_memory_report at every point (with `gpu`: its verdict there), the rest as given."""
    from dataclasses import replace

    from tfcli.analysis.memory.fit import build_memory_report

    def about(report: Any) -> str:
        where = f" on {report.fit.gpu}" if report.fit is not None else ""
        return f"{report.plan.mode}, {report.plan.options.dtype}{where}"

    return run_sweep(
        "memory", spec.name, axes,
        lambda p: build_memory_report(spec, replace(options, batch=p.batch, seq_len=p.seq_len), gpu),
        memory_figures(options.train, gpu is not None), about=about,
        notes_of=lambda r: r.plan.notes)
