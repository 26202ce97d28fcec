"""What a command that sweeps shares: `--batch` / `--seq-len` taking comma lists, `--plot`, and
emitting a sweep (table, chart, PNG). A command parses both options with `axes`, runs its
one-point path when `axes.is_sweep` is False, else its sweep, and hands it to `emit_sweep`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tfcli.render.output import OutputFormat, emit

SweepBatchOpt = Annotated[str, typer.Option("--batch", metavar="N[,N...]", help="Sequences per batch; a comma list (1,8,32) sweeps, one row per point.")]
SweepSeqLenOpt = Annotated[str | None, typer.Option("--seq-len", metavar="N[,N...]", help="Tokens per sequence; a comma list (1024,8192) sweeps, with --batch's values crossed.")]
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
        from tfcli.errors import BadInputError

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
