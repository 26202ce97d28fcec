"""Sweep rendering: the table, a chart whose series read apart without colour, the PNG."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from tests.render.markdown_tables import parse_markdown
from tfcli.analysis.sweep import sweep_axes, trace_sweep
from tfcli.core.errors import BadInputError
from tfcli.render.markdown import result_markdown
from tfcli.render.sweep import (
    CHART_MARKERS, chart_layout, check_png_possible, format_value, legend, render_sweep,
    sweep_chart, write_sweep_png,
)
from tfcli.sources import load_spec

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def grid():
    return trace_sweep(load_spec("lesson-tiny"), sweep_axes("1,4,16", "8,32,64", default_seq_len=8))


def _printed(renderable, width: int = 100) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(renderable)
    return out.getvalue()


def test_the_table_has_a_row_per_point(grid) -> None:
    text = _printed(render_sweep(grid, chart=False))
    for (point, report), _ in zip(grid.pairs, grid.values):
        assert format_value(report.total_flops, "FLOP") in text
    assert "9 points" in text and "forward FLOPs" in text


def test_units_are_the_tables_own() -> None:
    assert format_value(1536, "bytes") == "1.50 KiB"
    assert format_value(2.5e9, "FLOP") == "2.50 GFLOP"
    assert [format_value(v, "s") for v in (2.0, 0.0123, 4e-6, 2.76e-7)] == [
        "2 s", "12.3 ms", "4 µs", "276 ns"]
    assert format_value(None, "s") == "—" and format_value(1234.56, "token/s") == "1,235"
    assert [format_value(v, u) for v, u in ((True, "yes/no"), (0, "yes/no"), (7200.0, "s"),
                                            (-2048, "B"), (12345, ""), (0.5, ""))] == [
        "yes", "no", "2 h", "-2.00 KiB", "12,345", "0.5"]


def test_each_series_has_its_own_glyph_without_colour(grid) -> None:
    layout = chart_layout(grid)
    text = sweep_chart(layout, width=80, height=18, colorless=True)
    assert "\x1b" not in text
    body, last = text.rsplit("\n", 1)
    assert last == legend(layout) and "o batch 1" in last and "x batch 4" in last and "+ batch 16" in last
    for marker in CHART_MARKERS[:3]:
        assert marker in body.split("\n", 1)[1]  # under the title, on the canvas
    assert max(len(line) for line in text.splitlines()) <= 80


def test_one_batch_charts_against_the_batch_when_only_it_varies() -> None:
    result = trace_sweep(load_spec("lesson-tiny"), sweep_axes("1,2,4", None, default_seq_len=8))
    layout = chart_layout(result, "act_bytes")
    assert layout.x_label == "batch" and [xs for _, xs, _ in layout.lines] == [[1.0, 2.0, 4.0]]


def test_no_chart_for_a_single_seq_len_and_batch() -> None:
    result = trace_sweep(load_spec("lesson-tiny"), sweep_axes("1", "8", default_seq_len=8))
    assert chart_layout(result) is None
    assert " vs " not in _printed(render_sweep(result))  # no chart title: no chart


def test_the_png_is_a_png(grid, tmp_path: Path) -> None:
    target = tmp_path / "sweep.png"
    check_png_possible(target)
    write_sweep_png(grid, target)
    assert target.read_bytes()[:8] == PNG_MAGIC


def test_another_suffix_is_refused_before_the_sweep(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="--plot"):
        check_png_possible(tmp_path / "sweep.jpg")


def test_markdown_of_a_sweep_is_its_csv(grid) -> None:
    [table], _ = parse_markdown(result_markdown(grid))
    header, rows = grid.csv_rows()
    assert table.header == header and table.rows == [[str(c) for c in r] for r in rows]
