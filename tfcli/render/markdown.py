"""`--format markdown`: a result as GitHub-flavoured markdown, for pasting into docs.

One table per table the command shows, built from the same rows as CSV (`csv_rows()`; a result
whose table view shows more than one table also offers `markdown_tables()`: (title, header,
rows) triples, the first of them the CSV table), and the result's notes as a list under them. Nothing is computed here: a cell
is the CSV cell's text, escaped so that no cell can end the table (`|`), start markup (`*`,
`_`, `` ` ``, `[`, `<`, `$` ...) or drive a terminal (control bytes, shown as escapes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tfcli.render.safe import visible

# Every character GitHub's renderer would read as markup inside a table cell: the pipe ends the
# cell; a backslash escapes; emphasis, code, links, HTML, strike-through, entities, math.
# CommonMark lets a backslash escape any ASCII punctuation, so each is written as `\c`.
MARKDOWN_SPECIAL = frozenset("\\|*_`[]<>~&$")


@dataclass(frozen=True)
class MarkdownTable:
    """One table: an optional title line above it, the header and the rows (CSV cells)."""

    header: Sequence[str]
    rows: Sequence[Sequence[object]]
    title: str = ""


@dataclass(frozen=True)
class MarkdownDocument:
    tables: Sequence[MarkdownTable]
    notes: Sequence[str] = field(default_factory=tuple)


def escape_markdown(text: str) -> str:
    """`text` with markup characters backslash-escaped and control bytes made visible; a line
    break (which would end a table row) becomes its visible escape too."""
    return "".join(f"\\{c}" if c in MARKDOWN_SPECIAL else c for c in visible(text))


def cell_text(cell: object) -> str:
    """A CSV cell as the csv module writes it (None empty, everything else str()), escaped."""
    return "" if cell is None else escape_markdown(str(cell))


def _is_number(cell: object) -> bool:
    return isinstance(cell, (int, float)) and not isinstance(cell, bool)


def _alignment(rows: Sequence[Sequence[object]], column: int) -> str:
    """`---:` (right) for a column whose every filled cell is a number, as the tables show them."""
    cells = [row[column] for row in rows if column < len(row) and row[column] not in (None, "")]
    return "---:" if cells and all(_is_number(c) for c in cells) else "---"


def _line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def table_lines(table: MarkdownTable) -> list[str]:
    """The table's lines: the title (bold) and a blank line when there is one, the header,
    the alignment row, one line per row (short rows padded, as a CSV reader would see them)."""
    width = len(table.header)
    lines = [f"**{escape_markdown(table.title)}**", ""] if table.title else []
    lines.append(_line([cell_text(h) for h in table.header]))
    lines.append(_line([_alignment(table.rows, i) for i in range(width)]))
    for row in table.rows:
        cells = [cell_text(c) for c in row] + [""] * (width - len(row))
        lines.append(_line(cells))
    return lines


def render_markdown(document: MarkdownDocument) -> str:
    """The whole document: tables separated by a blank line, then the notes as a list."""
    blocks = ["\n".join(table_lines(t)) for t in document.tables]
    if document.notes:
        blocks.append("\n".join(f"- {escape_markdown(note)}" for note in document.notes))
    return "\n\n".join(blocks) + "\n"


def document_of(result: Any) -> MarkdownDocument:
    """The tables and notes a result offers: `markdown_tables()` when it shows several tables,
    else its CSV rows as one table; its notes (a sequence of str) when it has them."""
    tables = getattr(result, "markdown_tables", None)
    if callable(tables):
        chosen = [MarkdownTable(header, rows, title) for title, header, rows in tables()]
    else:
        header, rows = result.csv_rows()
        chosen = [MarkdownTable(header, rows)]
    return MarkdownDocument(chosen, tuple(str(n) for n in _notes(result)))


def _notes(result: Any) -> Any:
    """The result's `notes`, else the `notes` list of its JSON form (a report that wraps
    another, as memory's wraps its plan, keeps them there)."""
    notes = getattr(result, "notes", None)
    if notes is None:
        notes = result.to_dict().get("notes")
    return notes if isinstance(notes, (list, tuple)) else ()


def result_markdown(result: Any) -> str:
    """`result` as markdown text, ready for stdout."""
    return render_markdown(document_of(result))
