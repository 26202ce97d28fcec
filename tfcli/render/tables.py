"""FitTable: a rich table laid out for the console's width without ever cutting a number.

rich squeezes a table that is too wide by shrinking every column, numbers included: at 80
columns `1×32×4096` became `1×32×409` and a column shrank to nothing. FitTable lays the columns
out itself when it is rendered (only then is the width known):

- a number column (`number=True`) is exactly as wide as its widest cell, never wrapped or cut;
- a text column may wrap at spaces, but is never narrower than its longest word holding a digit
  (so `1×32×4096,` or `p=0.0059` stays whole), and folds only words without digits;
- when even that is too wide, columns with a `drop` rank leave, highest rank first, and a note
  under the table names them; when nothing is left to drop, each row is printed as a paragraph.

Every str cell, header and title becomes `plain()` text: never markup, control bytes escaped.
Title and caption are printed above and below the table, wrapped at the console's full width.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from tfcli.render.safe import plain

Cell = str | Text
TEXT_MIN_WIDTH = 10  # a text column may wrap, but not into a ribbon of 2-letter lines
_WORD = re.compile(r"\S+")
_DIGIT = re.compile(r"\d")
_UNBOUNDED = 1 << 20  # console width used to measure a table's own borders and padding


@dataclass
class _Column:
    header: Text
    justify: str
    number: bool
    drop: int | None
    style: str


def _as_text(cell: Cell | None) -> Text:
    return cell if isinstance(cell, Text) else plain("" if cell is None else cell)


def _lines(text: Text) -> list[str]:
    return text.plain.split("\n")


def _natural(texts: list[Text]) -> int:
    """The widest line among `texts`, in terminal cells."""
    return max((cell_len(line) for t in texts for line in _lines(t)), default=0)


def _longest(texts: list[Text], digits_only: bool = False) -> int:
    """The widest word among `texts` (only words holding a digit, when `digits_only`), in
    terminal cells. Words first, then a digit search in each: one regex `\\S*\\d\\S*` backtracks
    quadratically over a long word without digits (a 100,000-character spec name took minutes)."""
    return max((cell_len(w) for t in texts for w in _WORD.findall(t.plain)
                if not digits_only or _DIGIT.search(w)), default=0)


class FitTable:
    """A table built like rich's (add_column / add_row / add_section) that fits when printed."""

    def __init__(self, title: Cell | None = None, *, caption: Cell | None = None,
                 show_header: bool = True, **table_options: Any) -> None:
        self.title = None if title is None else _as_text(title)
        self.caption = None if caption is None else _as_text(caption)
        self.show_header = show_header
        self.table_options = table_options  # box, padding, pad_edge: passed to rich's Table
        self.columns: list[_Column] = []
        self.rows: list[tuple[list[Text], bool]] = []  # (cells, ends a section)

    def add_column(self, header: Cell = "", *, justify: str = "left", number: bool = False,
                   drop: int | None = None, style: str = "") -> None:
        """`number`: never wrapped or cut. `drop`: may be left out when too wide (higher first)."""
        self.columns.append(_Column(_as_text(header), justify, number, drop, style))

    def add_row(self, *cells: Cell | None) -> None:
        texts = [_as_text(c) for c in cells]
        self.rows.append((texts + [Text("")] * (len(self.columns) - len(texts)), False))

    def add_section(self) -> None:
        if self.rows:
            self.rows[-1] = (self.rows[-1][0], True)

    def _texts(self, index: int) -> list[Text]:
        header = [self.columns[index].header] if self.show_header else []
        return header + [cells[index] for cells, _ in self.rows]

    def _width_ranges(self, index: int) -> tuple[int, int, int]:
        """(narrowest with words folded, narrowest with whole words, natural) content widths of
        column `index`. A number column has one width; a text column never folds a word with a
        digit in it."""
        texts = self._texts(index)
        natural = max(_natural(texts), 1)
        if self.columns[index].number:
            return natural, natural, natural
        whole = min(natural, max(_longest(texts), 1))
        return min(whole, max(TEXT_MIN_WIDTH, _longest(texts, digits_only=True))), whole, natural

    def _table(self, keep: list[int], widths: list[int], with_rows: bool = True) -> Table:
        table = Table(show_header=self.show_header, **self.table_options)
        for index, width in zip(keep, widths):
            c = self.columns[index]
            table.add_column(c.header, justify=c.justify, style=c.style,  # type: ignore[arg-type]
                             width=width, no_wrap=c.number, overflow="fold")
        for cells, end_section in self.rows if with_rows else []:
            table.add_row(*[cells[i] for i in keep], end_section=end_section)
        return table

    def _chrome(self, console: Console, options: ConsoleOptions, keep: list[int]) -> int:
        """Borders and padding of a table of the `keep` columns, in cells."""
        table = self._table(keep, [1] * len(keep), with_rows=False)
        return Measurement.get(console, options.update_width(_UNBOUNDED), table).maximum - len(keep)

    def _layout(self, console: Console, options: ConsoleOptions) -> tuple[list[int], list[int]] | None:
        """(kept column indices, their widths) that fit: every column with whole words, else
        with words folded, else the same again after dropping the next column; None if even the
        columns that may not be dropped do not fit."""
        keep = list(range(len(self.columns)))
        ranges = [self._width_ranges(i) for i in keep]
        while True:
            room = options.max_width - self._chrome(console, options, keep)
            for tier in (1, 0):  # whole words first, folded words second
                spare = room - sum(ranges[i][tier] for i in keep)
                if spare >= 0:
                    return keep, _widen([(ranges[i][tier], ranges[i][2]) for i in keep], spare)
            droppable = [i for i in keep if self.columns[i].drop is not None]
            if not droppable:
                return None
            keep.remove(max(reversed(droppable), key=lambda i: self.columns[i].drop or 0))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.title is not None:
            yield _styled(self.title, "table.title")
        layout = self._layout(console, options) if self.columns else None
        if layout is None:
            yield from self._paragraphs()
        else:
            keep, widths = layout
            yield self._table(keep, widths)
            dropped = list(dict.fromkeys(  # each name once: a sweep drops "cos" per variant
                self.columns[i].header.plain.replace("\n", " ").strip()
                for i in range(len(self.columns)) if i not in keep))
            if dropped:
                yield Text(f"(left out to fit {options.max_width} columns: {', '.join(dropped)}; "
                           "a wider terminal or --format json shows them)", style="dim")
        if self.caption is not None:
            yield _styled(self.caption, "table.caption")

    def _paragraphs(self) -> RenderResult:
        """Each row as one wrapped paragraph, `header: value; …` (or values alone without a
        header): the layout of last resort when no table fits."""
        headers = [c.header.plain.replace("\n", " ").strip() for c in self.columns]
        for cells, _ in self.rows:
            parts = [cell for cell in cells if cell.plain]
            if self.show_header:
                parts = [Text.assemble(f"{h}: ", cell) if h else cell
                         for h, cell in zip(headers, cells) if cell.plain]
            yield Text("; " if self.show_header else " · ").join(parts)


def _styled(text: Text, style: str) -> Text:
    """`text` on top of a base `style` (rich's table.title / table.caption), its own styles kept."""
    return Text.assemble(text, style=style)


def _widen(ranges: list[tuple[int, int]], spare: int) -> list[int]:
    """Widths between each column's narrowest and natural width, given `spare` cells beyond the
    narrowest: start from natural and narrow the widest column first, as rich does, but never
    below its narrowest (so a long text column wraps before a short label does)."""
    widths = [natural for _, natural in ranges]
    excess = sum(widths) - sum(low for low, _ in ranges) - spare
    while excess > 0:
        top = max(w for w, (low, _) in zip(widths, ranges) if w > low)
        tops = [i for i, (w, (low, _)) in enumerate(zip(widths, ranges)) if w == top and w > low]
        below = max((w for w, (low, _) in zip(widths, ranges) if low < w < top), default=0)
        step = max(1, min(top - below, excess // len(tops)))
        for i in tops:
            cut = min(step, widths[i] - ranges[i][0], excess)
            widths[i] -= cut
            excess -= cut
    return widths
