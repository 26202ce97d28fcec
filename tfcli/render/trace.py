"""Rich rendering of `tfcli trace`: the per-op table and the --execute shape check."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from tfcli.analysis.trace.build import TraceReport
from tfcli.analysis.trace.rows import TraceRow
from tfcli.analysis.trace.check import ExecuteCheck
from tfcli.render.tables import FitTable
from tfcli.render.units import human_bytes, human_flops
from tfcli.core.shapes import TABLE_TIMES, shape_text

_DEPTH_NAMES = {1: "per block", 2: "per sublayer", 3: "per op"}


def _lengths(report: TraceReport) -> str:
    if report.src_len is not None:
        return f"src_len {report.src_len}, tgt_len {report.tgt_len}"
    return f"seq_len {report.seq_len}"


def _title(report: TraceReport, depth: int) -> str:
    return (f"{report.spec_name} — forward trace, batch {report.batch}, {_lengths(report)}, "
            f"{report.dtype}, {_DEPTH_NAMES[depth]}")


def _add_row(table: FitTable, row: TraceRow) -> None:
    table.add_row(
        row.path, row.op, ", ".join(shape_text(s, TABLE_TIMES) for s in row.inputs), shape_text(row.output, TABLE_TIMES),
        f"{row.params:,}" if row.params else "", human_flops(row.flops), human_bytes(row.act_bytes),
    )


def _table(report: TraceReport, depth: int) -> FitTable:
    table = FitTable(title=_title(report, depth))
    table.add_column("path")
    table.add_column("op")
    table.add_column("inputs", drop=4)  # several shapes wrap at ", "; the output is the next's input
    table.add_column("output", number=True)
    table.add_column("params", justify="right", number=True, drop=2)
    table.add_column("FLOPs", justify="right", number=True, drop=1)
    table.add_column("output bytes", justify="right", number=True, drop=3)
    for row in report.fold(depth):
        _add_row(table, row)
    table.add_section()
    table.add_row(
        Text("total", style="bold"), "", "", "", Text(f"{report.total_params:,}", style="bold"),
        Text(human_flops(report.total_flops), style="bold"),
        Text(human_bytes(report.total_act_bytes), style="bold"),
    )
    return table


def render_trace(report: TraceReport, depth: int | None = None) -> RenderableType:
    """The trace table folded to `depth` (default: the report's), totals, per-token FLOPs and
    the counting convention."""
    depth = report.depth if depth is None else depth
    per_token = (f"forward FLOPs per token: {human_flops(report.flops_per_token)} "
                 f"({report.total_flops:,} FLOPs / {report.tokens:,} tokens)")
    return Group(
        _table(report, depth),
        Text(per_token, style="bold"),
        Text(f"convention: {report.convention}", style="dim"),
        Text("output bytes: each op's output once, summed: not the memory a forward needs "
             "(most are freed long before the end); its largest live set is `tfcli memory "
             "SPEC --attention engine`", style="dim"),
    )


def _summary(check: ExecuteCheck) -> Text:
    ran = f"{check.layers} of {check.spec_layers} blocks per stack"
    ran += " (truncated)" if check.truncated else ""
    status = "shapes match" if check.ok else "MISMATCH"
    return Text(
        f"execute check: {status} — {check.matches}/{check.expected} analytic ops matched, "
        f"{check.observed} observed; ran {ran}, seed {check.seed}",
        style="bold green" if check.ok else "bold red",
    )


def render_execute_check(check: ExecuteCheck) -> RenderableType:
    """One summary line, plus a table of the mismatches when there are any."""
    if not check.mismatches:
        return _summary(check)
    table = FitTable(title="mismatches (analytic vs observed)")
    for column in ("kind", "index", "path", "op"):
        table.add_column(column, number=column == "index")
    for column in ("expected", "observed"):
        table.add_column(column, number=True)
    for m in check.mismatches:
        table.add_row(m.kind, str(m.index), m.path, m.op, shape_text(m.expected, TABLE_TIMES),
                      shape_text(m.observed, TABLE_TIMES))
    return Group(_summary(check), table)
