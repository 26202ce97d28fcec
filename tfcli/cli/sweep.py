"""What a command that sweeps shares. Its `--batch` / `--seq-len` take text (metavar N[,N...]),
parsed once by `axes`; it runs its one-point path when `axes(...).is_sweep` is False, else its
sweep (tfcli/analysis/sweep.py), handed to `emit_sweep` (table, chart, `--plot` PNG)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tfcli.render.output import OutputFormat, emit

SweepPlotOpt = Annotated[str | None, typer.Option("--plot", metavar="FILE.png", help="A sweep: also write its chart to FILE.png (needs matplotlib: pip install 'tfcli[plot]').")]


def axes(batch: str, seq_len: str | None, default_seq_len: int) -> Any:
    """The points asked for (tfcli.analysis.sweep.SweepAxes), parsed once and bounded."""
    from tfcli.analysis.sweep import sweep_axes

    return sweep_axes(batch, seq_len, default_seq_len)


def check_plot(plot: str | None, sweeping: bool) -> None:
    """Before any work: --plot only with a sweep, to a .png, with matplotlib installed."""
    if plot is None:
        return
    if not sweeping:
        from tfcli.core.errors import BadInputError

        raise BadInputError("--plot charts a sweep: give --batch or --seq-len a comma list "
                            "(e.g. --seq-len 1024,8192)")
    from tfcli.render.sweep import check_png_possible

    check_png_possible(plot)


def emit_sweep(result: Any, fmt: OutputFormat, plot: str | None,
               chart_key: str | None = None) -> None:
    """The PNG first (when asked for), then the sweep in `fmt` (the table with its chart)."""
    from tfcli.render.sweep import render_sweep, write_sweep_png

    if plot is not None:
        write_sweep_png(result, plot, chart_key)
    emit(result, fmt, lambda: render_sweep(result, chart_key))
