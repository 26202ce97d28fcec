"""Read `--format markdown` back as a GitHub-flavoured markdown reader would: the tables (cells
split at unescaped pipes, backslash escapes undone) and the list items under them; and CSV
output as the rows a CSV reader sees, to compare the two cell by cell."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

_ALIGN = re.compile(r"^\|( :?-{3,}:? \|)+$")


@dataclass(frozen=True)
class ParsedTable:
    title: str
    header: list[str]
    rows: list[list[str]]
    alignments: list[str]


def split_cells(line: str) -> list[str]:
    """'| a | b\\|c |' -> ['a', 'b|c']: split at pipes not escaped, then undo `\\c` escapes."""
    assert line.startswith("| ") and line.endswith(" |"), line
    cells, current, chars = [], "", iter(line[2:-2])
    for char in chars:
        if char == "\\":
            current += char + next(chars)
        elif char == "|":
            cells.append(current)
            current = ""
        else:
            current += char
    cells.append(current)
    return [_unescape(c.strip(" ")) for c in cells]


def _unescape(cell: str) -> str:
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", cell)


def parse_markdown(text: str) -> tuple[list[ParsedTable], list[str]]:
    """The document's tables, in order, and its list items (notes), unescaped."""
    tables: list[ParsedTable] = []
    notes: list[str] = []
    lines = text.split("\n")
    title, i = "", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("**") and line.endswith("**"):
            title = _unescape(line[2:-2])
        elif line.startswith("- "):
            notes.append(_unescape(line[2:]))
        elif line.startswith("| "):
            assert _ALIGN.match(lines[i + 1]), lines[i + 1]
            header, alignments = split_cells(line), split_cells(lines[i + 1])
            i += 2
            rows = []
            while i < len(lines) and lines[i].startswith("| "):
                rows.append(split_cells(lines[i]))
                i += 1
            assert all(len(r) == len(header) for r in rows)
            tables.append(ParsedTable(title, header, rows, alignments))
            title = ""
            continue
        else:
            assert line == "", f"unexpected line {line!r}"
        i += 1
    return tables, notes


def parse_csv(text: str) -> tuple[list[str], list[list[str]]]:
    header, *rows = list(csv.reader(io.StringIO(text)))
    return header, [r + [""] * (len(header) - len(r)) for r in rows]
