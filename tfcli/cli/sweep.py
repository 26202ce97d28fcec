"""What a command that sweeps shares. Its `--batch` / `--seq-len` take text (metavar N[,N...]),
handed as it is to the API (tfcli.api.model), which parses it once and returns the one-point
report or a sweep (tfcli/analysis/sweep.py); a sweep goes to `emit_sweep` (table, chart)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tfcli.render.output import OutputFormat, emit

SweepPlotOpt = Annotated[str | None, typer.Option("--plot", metavar="FILE.png", help="A sweep: also write its chart to FILE.png (needs matplotlib: pip install 'tfcli[plot]').")]


def emit_sweep(result: Any, fmt: OutputFormat, plot: str | None,
               chart_key: str | None = None) -> None:
    """The PNG first (when asked for), then the sweep in `fmt` (the table with its chart)."""
    from tfcli.render.sweep import render_sweep, write_sweep_png

    if plot is not None:
        write_sweep_png(result, plot, chart_key)
    emit(result, fmt, lambda: render_sweep(result, chart_key))
