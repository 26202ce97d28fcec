"""Rich rendering of `tfcli specs` and `tfcli validate`."""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from tfcli.analysis.catalog import Catalog, ValidationReport


def render_catalog(catalog: Catalog) -> RenderableType:
    table = Table(title="bundled specs", title_justify="left")
    for column, justify in (("name", "left"), ("family", "left"), ("layers", "right"),
                            ("d_model", "right"), ("parameters", "right")):
        table.add_column(column, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for e in catalog.entries:
        table.add_row(e.name, e.family, e.layers, f"{e.d_model:,}", f"{e.total:,}")
    return table


def render_validation(report: ValidationReport) -> RenderableType:
    table = Table(show_header=False, box=None)
    table.add_column("mark")
    table.add_column("detail")
    for r in report.results:
        if r.error is None and r.entry is not None:
            detail = f"{r.source}: {r.entry.name} ({r.entry.family}, {r.entry.total:,} parameters)"
            table.add_row(Text("OK", style="green bold"), detail)
        else:
            table.add_row(Text("BAD", style="red bold"), Text(r.error or "", style="red"))
    return table
