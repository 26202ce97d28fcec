"""Rendering of a depth sweep: the rich table with the verdict under it, the terminal chart
(plotext) and the PNG chart (matplotlib, the optional `tfcli[plot]` extra).

Nothing here computes: the flags that pick the colours and the verdict text come with the result.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Text

from tfcli.analysis.depth.gradients import GradientReport
from tfcli.analysis.depth.result import (
    COLLAPSE_BELOW, EXPLOSION_ABOVE, RANK_COLLAPSE_ABOVE, DepthPoint, DepthSweepResult,
)
from tfcli.core.deps import calling, quiet, require
from tfcli.core.errors import BadInputError
from tfcli.render.chart import LineChart, chart_text
from tfcli.render.safe import for_matplotlib, plain
from tfcli.render.tables import FitTable
from tfcli.core.files import check_output_file, write_atomically

FLAG_STYLES = {"collapse": "bold blue", "explosion": "bold red", "rank_collapse": "bold magenta"}
BROKEN_STYLE = "bold white on red"
GROUP_HEADER_STYLES = ("bold cyan", "bold green", "bold yellow", "bold magenta")
CHART_TITLE = "output / input norm vs depth (log-log)"
# One glyph per series, so the chart reads without colour (NO_COLOR, a pipe, the README); ASCII,
# so an ASCII terminal shows the same glyphs.
CHART_MARKERS = ("o", "x", "+", "*")
PLOT_NEEDS_MATPLOTLIB = "--plot needs matplotlib: pip install 'tfcli[plot]'"


# --- table -----------------------------------------------------------------------------------


def render_depth_sweep(result: DepthSweepResult, *, chart: bool = True, chart_width: int = 80,
                       chart_height: int = 20) -> RenderableType:
    """The table (rows = depth, a group of columns per variant), the verdict under it, and the
    terminal chart (as rich Text, so a console that is not a terminal prints it plain)."""
    parts: list[RenderableType] = [depth_table(result), Text(""), plain(result.verdict)]
    if chart:
        parts += [Text(""), _FittedChart(lambda w, h: terminal_chart(result, w, h), chart_width,
                                         chart_height)]
    if result.gradients is not None:
        parts += [Text(""), gradient_table(result.gradients)]
        if len(result.gradients.by_depth) > 1:
            parts += [Text(""), last_layer_table(result.gradients)]
        parts += [Text(""), plain(result.gradients.verdict)]
        if chart:
            report = result.gradients
            parts += [Text(""), _FittedChart(lambda w, h: gradient_chart(report, w, h),
                                             chart_width, chart_height)]
    return Group(*parts)


@dataclass(frozen=True)
class _FittedChart:
    """A terminal chart drawn when printed, no wider than the console (a wrapped chart would
    cut its tick labels); as rich Text, so a console that is not a terminal prints it plain.
    `draw(width, height)` is the chart's text: the norms' or the gradients'."""

    draw: Callable[[int, int], str]
    width: int
    height: int

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text.from_ansi(self.draw(min(self.width, options.max_width), self.height))


def _listed_layers(depth: int) -> list[int]:
    """Layers 1, 2, 4, ... and the last: the rows of the gradient table (all in the JSON)."""
    rows = [1 << i for i in range(depth.bit_length()) if 1 << i <= depth]
    return rows if rows[-1] == depth else [*rows, depth]


def gradient_table(report: GradientReport) -> FitTable:
    """Per layer and variant: the gradient norms at the layer's input and over its weights."""
    table = FitTable(title=f"gradients through depth {report.depth} — {report.loss}",
                     caption=Text("dx: ||dL/dx_l|| at layer l's input. dW: ||dL/dW_l|| over the "
                                  "layer's parameters. Layer 1 is nearest the input (every layer: "
                                  "--format json).", style="dim"),
                     box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False)
    table.add_column("layer", justify="right", style="bold", number=True)
    for i, series in enumerate(report.series):
        style = GROUP_HEADER_STYLES[i % len(GROUP_HEADER_STYLES)]
        table.add_column(Text(f"{series.variant}\ndx", style=style), justify="right", number=True)
        table.add_column(Text("\ndW", style=style), justify="right", number=True)
    for layer in _listed_layers(report.depth):
        cells = [str(layer)]
        for series in report.series:
            row = series.layers[layer - 1]
            cells += [_g(row.input_grad, 4), _g(row.weight_grad, 4)]
        table.add_row(*cells)
    return table


def last_layer_table(report: GradientReport) -> FitTable:
    """Per sweep depth: the weight gradient of the stack's last layer, one column per variant."""
    table = FitTable(title="||dL/dW|| of the last layer, by the stack's depth",
                     caption=Text("Each depth's stack is the first layers of the deepest, its "
                                  "loss read at its own output.", style="dim"),
                     box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False)
    table.add_column("depth", justify="right", style="bold", number=True)
    for i, series in enumerate(report.series):
        table.add_column(Text(series.variant, style=GROUP_HEADER_STYLES[i % len(GROUP_HEADER_STYLES)]),
                         justify="right", number=True)
    for row in report.by_depth:
        table.add_row(str(row.depth), *(_g(row.weight_grad[s.variant], 4) for s in report.series))
    return table


# Columns of a variant's group, each with the rank at which a narrow terminal drops it (cos
# first, None = never): the ratio carries the verdict, so it stays and names the variant.
_GROUP_COLUMNS = (("norm", 1), ("ratio", None), ("gain", 2), ("cos", 3))


def depth_table(result: DepthSweepResult) -> FitTable:
    table = FitTable(title=_title(result), caption=_legend(result), box=box.SIMPLE_HEAD,
                     padding=(0, 0, 0, 1), pad_edge=False)
    table.add_column("depth", justify="right", style="bold", number=True)
    for i, name in enumerate(result.variant_names):
        style = GROUP_HEADER_STYLES[i % len(GROUP_HEADER_STYLES)]
        # The variant names one column of its group only, which keeps the table narrow.
        for column, drop in _GROUP_COLUMNS:
            header = Text(f"{name if column == 'ratio' else ''}\n{column}", style=style)
            table.add_column(header, justify="right", number=True, drop=drop)
    for depth in result.depths:
        cells: list[Text | str] = [str(depth)]
        for name in result.variant_names:
            cells += _cells(result.point(depth, name))
        table.add_row(*cells)
    return table


def _title(result: DepthSweepResult) -> str:
    what = result.spec_name or "no spec"
    mode = "shared weights" if result.share_weights else "independent layers"
    if result.sublayer == "linear":
        sub = f"linear (weight scale {result.weight_scale:.3g})"
    else:
        attention = "" if result.sublayer == "ffn" else (
            ", causal attention" if result.causal else ", bidirectional attention")
        sub = f"{result.sublayer} (init std {result.init_std:g}{attention})"
    return (f"depth sweep — {what}, sublayer {sub}, d_model {result.d_model}, "
            f"seq {result.seq_len}, batch {result.batch}, {result.dtype}, {mode}")


def _legend(result: DepthSweepResult) -> Text:
    text = Text("norm: mean per-position output norm ||x_t|| (min and max: --format json / csv). "
                f"ratio: norm / the input's ({result.input_norm:.4g}). "
                f"gain: ||J v|| / ||v||, central differences, mean of {result.n_directions} "
                "directions. cos: mean cosine between positions. ", style="dim")
    for i, (flag, rule) in enumerate((
        ("collapse", f"collapse < {COLLAPSE_BELOW:g}"),
        ("explosion", f"explosion > {EXPLOSION_ABOVE:g}"),
        ("rank_collapse", f"rank collapse: cos > {RANK_COLLAPSE_ABOVE:g}"),
    )):
        text.append(", " if i else "", "dim")
        text.append(rule, FLAG_STYLES[flag])
    return text


def _cells(p: DepthPoint) -> list[Text | str]:
    if p.status != "ok":
        return [Text(p.status, style=BROKEN_STYLE), "", "", ""]
    ratio_style = next((FLAG_STYLES[f] for f in ("collapse", "explosion") if f in p.flags), "")
    cos_style = FLAG_STYLES["rank_collapse"] if "rank_collapse" in p.flags else ""
    return [
        _g(p.norm_mean, 6),
        Text(_g(p.norm_ratio), style=ratio_style),
        _g(p.gain),
        Text("–" if p.cosine is None else f"{p.cosine:.3f}", style=cos_style),
    ]


def _g(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}g}"


# --- charts ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Chart:
    """The chart laid out for a terminal: log2(depth) across, log10(ratio) up, so both axes are
    plain linear rulers with our own tick labels (plotext's log rulers mislabel wide ranges)."""

    lines: list[tuple[str, list[float], list[float]]]  # (label, log2 depth, log10 ratio)
    x_ticks: tuple[list[float], list[str]]
    y_ticks: tuple[list[float], list[str]]
    y_limits: tuple[float, float]


def _series(result: DepthSweepResult) -> list[tuple[str, list[int], list[float]]]:
    """(label, depths, norm ratios) per variant, over the depths where it was measured."""
    series = []
    for summary in result.variants:
        points = [p for p in result.series(summary.name) if p.norm_ratio]
        label = summary.name
        if summary.failed_at_layer is not None:
            label += f" ({summary.status} at layer {summary.failed_at_layer})"
        series.append((label, [p.depth for p in points], [p.norm_ratio or 1.0 for p in points]))
    return series


def _layout(result: DepthSweepResult) -> _Chart:
    series = [s for s in _series(result) if s[1]]
    lines = [(label, [math.log2(d) for d in depths], [math.log10(r) for r in ratios])
             for label, depths, ratios in series]
    ups = [y for _, _, ys in lines for y in ys] or [0.0]
    low, high = math.floor(min(ups)), max(math.ceil(max(ups)), math.floor(min(ups)) + 1)
    step = max(1, math.ceil((high - low) / 6))
    powers = [low + i * step for i in range(math.ceil((high - low) / step) + 1)]  # up to >= high
    labels = [f"{10.0**k:g}" if abs(k) <= 2 else f"1e{k}" for k in powers]
    shown = _depth_ticks(result, series)
    return _Chart(lines, ([math.log2(d) for d in shown], [str(d) for d in shown]),
                  ([float(k) for k in powers], labels), (float(low), float(powers[-1])))


def _depth_ticks(result: DepthSweepResult, series: list[tuple[str, list[int], list[float]]]) -> list[int]:
    shown = [d for d in result.depths if any(d in s[1] for s in series)]
    return shown[:: max(1, math.ceil(len(shown) / 10))]  # at most ~10 depth labels


def terminal_chart(result: DepthSweepResult, width: int = 80, height: int = 20,
                   colorless: bool = False) -> str:
    """The norm-ratio chart as text for the terminal (tfcli/render/chart.py), its legend under it."""
    chart = _layout(result)
    lines = [(xs, ys, marker) for (_, xs, ys), marker in zip(chart.lines, _markers(chart))]
    drawn = LineChart(CHART_TITLE, "depth", lines, chart.x_ticks, chart.y_ticks, chart.y_limits)
    return chart_text(drawn, width, height, colorless) + "\n\n" + chart_legend(chart)


GRADIENT_CHART_TITLE = "||dL/dW|| per layer at initialisation (log)"


def _gradient_lines(report: GradientReport) -> list[tuple[str, list[float], list[float]]]:
    """(variant, layers, log10 weight-gradient norms) over the layers with a finite one."""
    out = []
    for series in report.series:
        rows = [r for r in series.layers if math.isfinite(r.weight_grad) and r.weight_grad > 0]
        out.append((series.variant, [float(r.layer) for r in rows],
                    [math.log10(r.weight_grad) for r in rows]))
    return out


def gradient_chart(report: GradientReport, width: int = 80, height: int = 20,
                   colorless: bool = False) -> str:
    """Each variant's weight-gradient norm against the layer, log scale, as terminal text."""
    lines = [line for line in _gradient_lines(report) if line[1]]
    ups = [y for _, _, ys in lines for y in ys] or [0.0]
    low, high = math.floor(min(ups)), max(math.ceil(max(ups)), math.floor(min(ups)) + 1)
    powers = list(range(low, high + 1))
    labels = [f"{10.0**k:g}" if abs(k) <= 2 else f"1e{k}" for k in powers]
    layers = _listed_layers(report.depth)
    markers = [CHART_MARKERS[i % len(CHART_MARKERS)] for i in range(len(lines))]
    drawn = LineChart(GRADIENT_CHART_TITLE, "layer (1 = nearest the input)",
                      [(xs, ys, m) for (_, xs, ys), m in zip(lines, markers)],
                      ([float(n) for n in layers], [str(n) for n in layers]),
                      ([float(k) for k in powers], labels), (float(low), float(high)))
    legend = "    " + "   ".join(f"{m} {name}" for (name, _, _), m in zip(lines, markers))
    return chart_text(drawn, width, height, colorless) + "\n\n" + legend


def _markers(chart: _Chart) -> list[str]:
    return [CHART_MARKERS[i % len(CHART_MARKERS)] for i in range(len(chart.lines))]


def chart_legend(chart: _Chart) -> str:
    """The series' glyphs and names on a line under the chart: inside it, plotext's legend box
    would cover the low-depth points."""
    entries = [f"{marker} {label}" for (label, _, _), marker in zip(chart.lines, _markers(chart))]
    return "    " + "   ".join(entries)


def check_png_possible(path: str | os.PathLike[str]) -> None:
    """Fail before a long sweep, not after: matplotlib importable (a broken install is found
    here, not after the work), and the target a new path or a regular file ending in .png (the
    chart is always PNG; another suffix is refused rather than given PNG bytes under a
    misleading name)."""
    png_figure_class()
    check_output_file(os.fspath(path), "--plot", suffix=".png")


def png_figure_class() -> Any:
    """matplotlib's Figure (no pyplot: no global state, no GUI backend), through tfcli.core.deps."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise BadInputError(PLOT_NEEDS_MATPLOTLIB)
    with quiet():  # an unwritable MPLCONFIGDIR logs a warning on import
        return require("matplotlib.figure", "--plot").Figure


def write_png(result: DepthSweepResult, path: str | os.PathLike[str]) -> None:
    """The same chart as a PNG (matplotlib). Written to a temporary file in the target's folder
    and renamed over it, so a failure never leaves a half-written image behind; whatever
    matplotlib raises is one line naming the file (tfcli.core.deps.calling)."""
    figure = png_figure_class()
    with calling("matplotlib", os.fspath(path), "drawing the --plot chart"):
        _draw(result, figure, Path(path))


def _draw(result: DepthSweepResult, figure: Any, path: Path) -> None:
    panels = 1 if result.gradients is None else 2  # --gradients: their panel under the norms
    fig = figure(figsize=(7.5, 4.5 * panels), dpi=120, layout="constrained")
    axes = fig.subplots(panels, 1, squeeze=False)[:, 0]
    ax = axes[0]
    series = _series(result)
    for label, depths, ratios in series:
        ax.plot(depths, ratios, marker="o", label=label)
    for level in (COLLAPSE_BELOW, EXPLOSION_ABOVE):
        ax.axhline(level, color="grey", linestyle=":", linewidth=1)
    ax.set_xscale("log", base=2)
    ticks = _depth_ticks(result, series)
    ax.set_xticks(ticks, [str(d) for d in ticks])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel("depth")
    ax.set_ylabel("output norm / input norm")
    ax.set_title(for_matplotlib(f"{result.spec_name or 'linear'} — {CHART_TITLE}"))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    if result.gradients is not None:
        _draw_gradients(result.gradients, axes[1])
    _save_atomically(fig, path)


def _draw_gradients(report: GradientReport, ax: Any) -> None:
    """The second panel: each variant's weight-gradient norm by layer."""
    for series in report.series:
        rows = [r for r in series.layers if math.isfinite(r.weight_grad) and r.weight_grad > 0]
        ax.plot([r.layer for r in rows], [r.weight_grad for r in rows], marker=".",
                label=series.variant)
    ax.set_yscale("log")
    ax.set_xlabel("layer (1 = nearest the input)")
    ax.set_ylabel("||dL/dW||")
    ax.set_title(for_matplotlib(GRADIENT_CHART_TITLE))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()


def _save_atomically(fig: Any, path: Path) -> None:
    write_atomically(path, "--plot", lambda out: fig.savefig(out, format="png"))
