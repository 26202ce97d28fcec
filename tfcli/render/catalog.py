"""Rich rendering of `tfcli specs` and `tfcli validate`."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from tfcli.analysis.catalog import Catalog, ValidationReport
from tfcli.render.safe import plain
from tfcli.render.tables import FitTable


def render_catalog(catalog: Catalog) -> RenderableType:
    table = FitTable(title="bundled specs", caption="each one's description and source: "
                     "--format json, or its YAML with tfcli specs NAME")
    table.add_column("name")
    table.add_column("family", drop=3)
    table.add_column("layers", justify="right", number=True, drop=2)
    table.add_column("d_model", justify="right", number=True, drop=1)
    table.add_column("parameters", justify="right", number=True)
    for e in catalog.entries:
        table.add_row(e.name, e.family, e.layers, f"{e.d_model:,}", f"{e.total:,}")
    return table


def render_validation(report: ValidationReport) -> RenderableType:
    table = FitTable(show_header=False, box=None, pad_edge=False)  # lines start with OK / BAD
    table.add_column("mark")
    table.add_column("detail")
    for r in report.results:
        if r.error is None and r.entry is not None:
            detail = f"{r.source}: {r.entry.name} ({r.entry.family}, {r.entry.total:,} parameters)"
            table.add_row(Text("OK", style="green bold"), detail)
        else:
            table.add_row(Text("BAD", style="red bold"), plain(r.error or "", style="red", keep="\n"))
            # keep="\n": a SpecError puts each problem on its own line (its parts are escaped)
    return table
