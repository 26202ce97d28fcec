"""A line chart as terminal text (plotext, imported only when drawn), for any renderer that has
laid its lines out: plot coordinates, tick positions and labels, one marker glyph per line.

Both plotext APIs are served: 5 (module-level functions, build() gives the text) and 6 (methods
on the master figure, build() gives a matrix). Lines come back without plotext's trailing pad.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Ticks = tuple[list[float], list[str]]  # positions, labels


@dataclass(frozen=True)
class LineChart:
    title: str
    x_label: str
    lines: Sequence[tuple[list[float], list[float], str]]  # (xs, ys, marker) in plot coordinates
    x_ticks: Ticks
    y_ticks: Ticks
    y_limits: tuple[float, float]


def chart_text(chart: LineChart, width: int, height: int, colorless: bool = False) -> str:
    """The chart drawn `width` x `height` cells; `colorless`: no ANSI colour codes."""
    import plotext

    if hasattr(plotext, "build"):
        text = _plotext5(plotext, chart, width, height, colorless)
    else:
        text = _plotext6(plotext.figure, chart, width, height, colorless)
    return "\n".join(line.rstrip() for line in text.splitlines())


def _plotext5(plt: Any, chart: LineChart, width: int, height: int, colorless: bool) -> str:
    plt.clear_figure()
    plt.theme("pro")  # plotext 5's theme without a canvas colour
    plt.plotsize(width, height)
    for xs, ys, marker in chart.lines:
        plt.plot(xs, ys, marker=marker)
    plt.xticks(*chart.x_ticks)
    plt.yticks(*chart.y_ticks)
    plt.ylim(*chart.y_limits)
    plt.title(chart.title)
    plt.xlabel(chart.x_label)
    text = str(plt.build())
    plt.clear_figure()
    return str(plt.uncolorize(text)) if colorless else text


def _plotext6(fig: Any, chart: LineChart, width: int, height: int, colorless: bool) -> str:
    fig.clear()
    fig.theme("simple")  # no canvas colour: readable on dark and light terminals alike
    fig.plot_size(width, height)
    for xs, ys, marker in chart.lines:
        fig.draw(fig.signal(xs, ys, marker=marker).lines())
    fig.ruler("x").ticks(*chart.x_ticks)
    fig.ruler("y").ticks(*chart.y_ticks)
    fig.ruler("y").lim(*chart.y_limits)
    fig.title(chart.title)
    fig.label(chart.x_label, "x")
    text = str(fig.build().string(colorless=colorless))
    fig.clear()
    return text
