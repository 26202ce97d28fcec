"""`--format markdown`: GitHub tables of the CSV cells, escaped so that no cell breaks the table."""

from __future__ import annotations

from typing import Any

import pytest

from tests.render.markdown_tables import parse_markdown, split_cells
from tfcli.render.markdown import (
    MarkdownDocument, MarkdownTable, cell_text, document_of, escape_markdown, render_markdown,
)
from tfcli.render.output import OutputFormat, emit

HOSTILE = ["a|b", "back\\slash", "*em* _em_ `code`", "[link](x) <b>html</b>", "~~s~~ &amp; $x$",
           "line\nbreak", "esc\x1b[31m", "trailing\\", "|", ""]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_cell_reads_back_as_itself(text: str) -> None:
    line = "| " + cell_text(text) + " | next |"
    expected = text.replace("\n", "\\x0a").replace("\x1b", "\\x1b")  # control bytes shown
    assert split_cells(line) == [expected, "next"]


def test_pipes_and_backslashes_are_escaped() -> None:
    assert escape_markdown("a|b\\c") == "a\\|b\\\\c"
    assert "\n" not in escape_markdown("two\nlines")


def test_cells_are_the_csv_texts() -> None:
    assert [cell_text(c) for c in (None, 3, 0.25, True, "x")] == ["", "3", "0.25", "True", "x"]


def test_number_columns_are_right_aligned_and_text_left() -> None:
    table = MarkdownTable(["name", "count", "mixed", "empty"],
                          [["a", 1, 2, None], ["b", 2.5, "x", ""]])
    [parsed], _ = parse_markdown(render_markdown(MarkdownDocument([table])))
    assert parsed.alignments == ["---", "---:", "---", "---"]
    assert parsed.rows == [["a", "1", "2", ""], ["b", "2.5", "x", ""]]


def test_tables_titles_and_notes() -> None:
    doc = MarkdownDocument([MarkdownTable(["a"], [[1]], title="first *one*"),
                            MarkdownTable(["b"], [])], notes=["a | note", "second"])
    tables, notes = parse_markdown(render_markdown(doc))
    assert [(t.title, t.header, t.rows) for t in tables] == [
        ("first *one*", ["a"], [["1"]]), ("", ["b"], [])]
    assert notes == ["a | note", "second"]


class _Result:
    notes = ["n1"]

    def to_dict(self) -> dict[str, Any]:
        return {}

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        return ["x", "y"], [[1, "a|b"]]


class _TwoTables(_Result):
    def markdown_tables(self) -> list[tuple[str, list[str], list[list[object]]]]:
        return [("main", *self.csv_rows()), ("more", ["k"], [["v"]])]


def test_a_result_gives_its_csv_table_and_notes() -> None:
    doc = document_of(_Result())
    assert [(t.header, t.rows) for t in doc.tables] == [(["x", "y"], [[1, "a|b"]])]
    assert doc.notes == ("n1",)


def test_a_result_with_several_tables_gives_them_all() -> None:
    doc = document_of(_TwoTables())
    assert [t.title for t in doc.tables] == ["main", "more"]


def test_emit_markdown_writes_the_document(capsys: pytest.CaptureFixture[str]) -> None:
    emit(_Result(), OutputFormat.markdown, lambda: "unused")
    tables, notes = parse_markdown(capsys.readouterr().out)
    assert tables[0].rows == [["1", "a|b"]] and notes == ["n1"]


class _Wrapper(_Result):
    notes = None  # a report wrapping another: its notes live in its JSON form

    def to_dict(self) -> dict[str, Any]:
        return {"notes": ["from the JSON"]}


def test_notes_come_from_the_json_form_when_the_result_has_none() -> None:
    assert document_of(_Wrapper()).notes == ("from the JSON",)


def test_memory_markdown_lists_the_plans_notes() -> None:
    from tests.cli.guarded import run_in_memory

    _, out, _ = run_in_memory("memory", "gpt2", "-f", "markdown")
    _, notes = parse_markdown(out)
    assert any("largest live set" in n for n in notes)
