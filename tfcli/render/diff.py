"""Rich rendering of `tfcli diff A B`: one table, a header row per section, A / B / B − A / B ÷ A."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from tfcli.analysis.diff import ONLY_A, ONLY_B, DiffRow, SpecDiff
from tfcli.render.safe import plain
from tfcli.render.tables import FitTable
from tfcli.render.units import human

MISSING = "—"
SECTION_STYLE = "bold cyan"


def _amount(value: float, unit: str) -> str:
    """A figure in its unit's form (parameters: a count with commas)."""
    return human(value, "" if unit == "parameters" else unit)


def _signed(value: float, unit: str) -> str:
    if value == 0:
        return "0"
    return ("+" if value > 0 else "−") + _amount(abs(value), unit)


def _ratio(row: DiffRow) -> Text | str:
    if row.present == ONLY_A:
        return Text("only A", style="yellow")
    if row.present == ONLY_B:
        return Text("only B", style="yellow")
    if row.ratio is None:
        return MISSING  # A is zero
    style = "" if row.ratio == 1 else ("green" if row.ratio < 1 else "red")
    return Text(f"{row.ratio:.3f}×", style=style)


def _cells(row: DiffRow) -> list[Text | str]:
    a = MISSING if row.a is None else _amount(row.a, row.unit)
    b = MISSING if row.b is None else _amount(row.b, row.unit)
    return [f"  {row.name}", a, b, _signed(row.difference or 0, row.unit), _ratio(row)]


def diff_table(diff: SpecDiff) -> FitTable:
    table = FitTable(title=f"{diff.a_name} (A) vs {diff.b_name} (B)")
    table.add_column("figure")
    table.add_column(plain(f"A: {diff.a_name}"), justify="right", number=True)
    table.add_column(plain(f"B: {diff.b_name}"), justify="right", number=True)
    table.add_column("B − A", justify="right", number=True, drop=1)
    table.add_column("B ÷ A", justify="right", number=True)
    section = None
    for row in diff.rows:
        if row.section != section:
            if section is not None:
                table.add_section()
            table.add_row(Text(row.section, style=SECTION_STYLE))
            section = row.section
        table.add_row(*_cells(row))
    return table


def render_diff(diff: SpecDiff) -> RenderableType:
    notes = [plain(f"note: {note}", style="dim") for note in diff.notes]
    return Group(diff_table(diff), *notes)
