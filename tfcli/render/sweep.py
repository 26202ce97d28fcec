"""Rendering of a sweep (tfcli/analysis/sweep.py): the table (one row per point, the key figures
as columns), the terminal chart (plotext; one ASCII glyph per series, so it reads without colour)
and the PNG chart (matplotlib, the optional `tfcli[plot]` extra; the checks before the work are
depth-sweep's: tfcli/render/depth.py check_png_possible).

The chart plots one figure (the sweep's first unless told): against seq_len with a line per
batch, or against batch when only the batch varies. Both axes are logarithmic, drawn as linear
rulers of log values with our own tick labels, in the figure's unit.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Text

from tfcli.analysis.sweep import SweepResult
from tfcli.core.errors import BadInputError
from tfcli.core.files import write_atomically
from tfcli.render.chart import LineChart, chart_text
from tfcli.core.deps import calling
from tfcli.render.depth import check_png_possible, png_figure_class
from tfcli.render.safe import for_matplotlib, plain
from tfcli.render.tables import FitTable
from tfcli.render.units import human

__all__ = ["check_png_possible", "render_sweep", "sweep_chart", "write_sweep_png"]

MISSING = "—"
CHART_MARKERS = ("o", "x", "+", "*", "#", "@", "%", "=")  # ASCII: any terminal shows them
Y_TICKS = 5


def format_value(value: float | None, unit: str) -> str:
    """A figure as the tables show it (tfcli/render/units.py human); None as a dash."""
    return MISSING if value is None else human(value, unit)


def sweep_table(result: SweepResult[Any]) -> FitTable:
    count = len(result.pairs)
    about = f" {result.about}" if result.about else ""
    table = FitTable(title=f"{result.spec_name} — {result.command}{about} at {count} "
                           f"point{'' if count == 1 else 's'} (batch × seq_len)")
    table.add_column("batch", justify="right", number=True)
    table.add_column("seq_len", justify="right", number=True)
    for i, figure in enumerate(result.figures):
        # the later figures leave a narrow terminal first; the first (charted) one stays
        table.add_column(figure.label, justify="right", number=True, drop=None if i == 0 else i)
    for (point, _), row in zip(result.pairs, result.values):
        cells = [format_value(v, f.unit) for f, v in zip(result.figures, row)]
        table.add_row(f"{point.batch:,}", f"{point.seq_len:,}", *cells)
    return table


def render_sweep(result: SweepResult[Any], chart_key: str | None = None, *, chart: bool = True,
                 chart_width: int = 80, chart_height: int = 18) -> RenderableType:
    parts: list[RenderableType] = [sweep_table(result)]
    layout = chart_layout(result, chart_key) if chart else None
    if layout is not None:
        parts += [Text(""), _FittedChart(layout, chart_width, chart_height)]
    parts += [plain(f"note: {note}", style="dim") for note in result.notes]
    return Group(*parts)


# --- the chart, laid out once for both backends ------------------------------------------------


@dataclass(frozen=True)
class ChartLayout:
    title: str
    x_label: str
    y_unit: str
    lines: list[tuple[str, list[float], list[float]]]  # (label, x values, y values), > 0 only


def chart_layout(result: SweepResult[Any], chart_key: str | None = None) -> ChartLayout | None:
    """The lines of the charted figure, or None when there is nothing to draw (one point, or
    no positive value: a log axis has no place for 0)."""
    figure = result.figures[0] if chart_key is None else next(
        f for f in result.figures if f.key == chart_key)
    if len(result.axes.seq_lens) > 1:
        lines = [(f"batch {batch}", xs, ys) for batch, xs, ys in result.series(figure.key)]
        x_label = "seq_len"
    else:
        column = result.column(figure.key)
        lines = [(f"seq_len {result.axes.seq_lens[0]}", list(result.axes.batches), column)]
        x_label = "batch"
    kept = [(label, *_positive(xs, ys)) for label, xs, ys in lines]
    kept = [(label, xs, ys) for label, xs, ys in kept if xs]
    if not kept or max(len(xs) for _, xs, _ in kept) < 2:
        return None
    return ChartLayout(f"{result.spec_name}: {figure.label} vs {x_label}", x_label, figure.unit,
                       kept)


def _positive(xs: list[Any], ys: list[Any]) -> tuple[list[float], list[float]]:
    pairs = [(float(x), float(y)) for x, y in zip(xs, ys) if y is not None and y > 0]
    return [x for x, _ in pairs], [y for _, y in pairs]


def _markers(layout: ChartLayout) -> list[str]:
    return [CHART_MARKERS[i % len(CHART_MARKERS)] for i in range(len(layout.lines))]


def _x_ticks(layout: ChartLayout) -> tuple[list[float], list[str]]:
    values = sorted({x for _, xs, _ in layout.lines for x in xs})
    shown = values[:: max(1, math.ceil(len(values) / 8))]
    return [math.log2(v) for v in shown], [f"{v:,.0f}" for v in shown]


def _y_ticks(layout: ChartLayout) -> tuple[list[float], list[str], tuple[float, float]]:
    """Y_TICKS evenly spaced log10 positions over the data, labelled in the figure's unit."""
    logs = [math.log10(y) for _, _, ys in layout.lines for y in ys]
    low, high = min(logs), max(logs)
    if high - low < 1e-9:
        low, high = low - 0.5, high + 0.5
    positions = [low + (high - low) * i / (Y_TICKS - 1) for i in range(Y_TICKS)]
    return positions, [format_value(10.0**p, layout.y_unit) for p in positions], (low, high)


def legend(layout: ChartLayout) -> str:
    """The series' glyphs and names on a line under the chart (inside, it would cover data)."""
    return "    " + "   ".join(f"{m} {label}" for (label, _, _), m in zip(layout.lines, _markers(layout)))


@dataclass(frozen=True)
class _FittedChart:
    """The chart drawn when printed, no wider than the console (a wrapped chart cuts its ticks)."""

    layout: ChartLayout
    width: int
    height: int

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = sweep_chart(self.layout, min(self.width, options.max_width), self.height,
                           colorless=console.no_color or not console.is_terminal)
        yield Text.from_ansi(text)


def sweep_chart(layout: ChartLayout, width: int = 80, height: int = 18,
                colorless: bool = False) -> str:
    """The chart as text (tfcli/render/chart.py), its legend line under it."""
    y_positions, y_labels, y_limits = _y_ticks(layout)
    lines = [([math.log2(x) for x in xs], [math.log10(y) for y in ys], marker)
             for (_, xs, ys), marker in zip(layout.lines, _markers(layout))]
    chart = LineChart(layout.title, layout.x_label, lines, _x_ticks(layout),
                      (y_positions, y_labels), y_limits)
    return chart_text(chart, width, height, colorless) + "\n" + legend(layout)


# --- PNG ---------------------------------------------------------------------------------------


def write_sweep_png(result: SweepResult[Any], path: str | os.PathLike[str],
                    chart_key: str | None = None) -> None:
    """The chart as a PNG (matplotlib, no pyplot), written atomically; check_png_possible has
    refused a missing matplotlib or a bad path before the sweep ran."""
    layout = chart_layout(result, chart_key)
    if layout is None:
        raise BadInputError("--plot needs at least two points with a positive value to draw")
    figure = png_figure_class()
    with calling("matplotlib", os.fspath(path), "drawing the --plot chart"):
        _draw_png(layout, figure, Path(path))


def _draw_png(layout: Any, figure: Any, path: Path) -> None:
    fig = figure(figsize=(7.5, 4.5), dpi=120, layout="constrained")
    ax = fig.add_subplot()
    for (label, xs, ys), marker in zip(layout.lines, ("o", "x", "+", "*", "s", "^", "D", "v")):
        ax.plot(xs, ys, marker=marker, label=for_matplotlib(label))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks = sorted({x for _, xs, _ in layout.lines for x in xs})
    ax.set_xticks(ticks, [f"{t:,.0f}" for t in ticks])
    positions, labels, _ = _y_ticks(layout)
    ax.set_yticks([10.0**p for p in positions], labels)
    ax.minorticks_off()  # after the scales: a log scale brings its own minor ticks back
    ax.set_xlabel(layout.x_label)
    ax.set_title(for_matplotlib(layout.title))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    write_atomically(path, "--plot", lambda out: fig.savefig(out, format="png"))
