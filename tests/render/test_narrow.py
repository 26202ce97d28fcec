"""Narrow terminals: every command's table at COLUMNS=40, 60 and 80 fits the width, and every
number the JSON output holds appears whole in it (or its column is named as left out).

At 80 columns rich used to show `1×32×409` for 1×32×4096 and cut totals with an ellipsis.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from tfcli.cli.app import app
from tfcli.render.tables import FitTable

WIDTHS = (40, 60, 80)


def invoke(args: list[str], width: int | None) -> str:
    env = {"COLUMNS": str(width)} if width else {}
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def table_and_json(args: list[str], width: int) -> tuple[str, dict]:
    return invoke(args, width), json.loads(invoke([*args, "--format", "json"], None))


def assert_fits(text: str, width: int) -> None:
    too_wide = [line for line in text.splitlines() if cell_len(line) > width]
    assert not too_wide, f"{len(too_wide)} lines wider than {width}: {too_wide[:3]}"
    assert not re.search(r"\d…|…\d", text), "a number was cut with an ellipsis"


def whole(text: str, number: str) -> bool:
    """`number` appears with no digit, × or digit-separator glued to either side ("1,234" is
    not a whole "234"; "[12, 3]" has a whole "12")."""
    pattern = rf"(?<![\d×])(?<!\d[,.]){re.escape(number)}(?![\d×]|[,.]\d)"
    return re.search(pattern, text) is not None


def left_out(text: str) -> set[str]:
    """The column names of the note under a table that had to drop columns."""
    flat = " ".join(text.split())
    names: set[str] = set()
    for found in re.findall(r"\(left out to fit \d+ columns: ([^;]+);", flat):
        names |= {n.strip() for n in found.split(",")}
    return names


def assert_whole_or_left_out(text: str, number: str, column: str) -> None:
    assert whole(text, number) or column in left_out(text), f"{number} ({column}) not shown whole"


# --- per command ------------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_specs(width: int) -> None:
    text, data = table_and_json(["specs"], width)
    assert_fits(text, width)
    for spec in data["specs"]:
        assert whole(text, f"{spec['total']:,}")
        assert_whole_or_left_out(text, f"{spec['d_model']:,}", "d_model")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["gpt2", "mixtral-8x7b", "t5-small"])
def test_params(width: int, name: str) -> None:
    text, data = table_and_json(["params", name], width)
    assert_fits(text, width)
    assert whole(text, f"{data['total']:,}") and whole(text, f"{data['non_embedding']:,}")
    for component in data["components"]:
        assert whole(text, f"{component['count']:,}"), component["name"]
    for size in data["memory_bytes"].values():
        assert whole(text, f"{size:,}")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("args", [["llama-2-7b", "--layers", "1", "--seq-len", "32"],
                                  ["t5-small", "--layers", "1", "--depth", "2"]])
def test_trace(width: int, args: list[str]) -> None:
    text, data = table_and_json(["trace", *args], width)
    assert_fits(text, width)
    for row in data["rows"]:
        assert whole(text, "×".join(map(str, row["output"]))), row
        if row["params"]:
            assert_whole_or_left_out(text, f"{row['params']:,}", "params")
    assert whole(text, f"{data['total_flops']:,}")
    assert_whole_or_left_out(text, f"{data['total_params']:,}", "params")


@pytest.mark.parametrize("width", WIDTHS)
def test_run(width: int) -> None:
    args = ["run", "lesson-tiny", "--seq-len", "40", "--batch", "2"]
    text, data = table_and_json(args, width)
    assert_fits(text, width)
    assert whole(text, f"{data['loss']:.4f}")
    for key in ("mean", "std"):
        assert whole(text, f"{data['logits_stats'][key]:.4f}")
    norms = [n for row in data["hidden_norms"] for n in row]  # one row: their range
    assert whole(text, f"{min(norms):.4g}") and whole(text, f"{max(norms):.4g}")
    for seq in data["top_next"]:
        for rank, top in enumerate(seq, start=1):
            assert_whole_or_left_out(text, f"p={top['prob']:.3g}", f"#{rank}")


@pytest.mark.parametrize("width", WIDTHS)
def test_generate(width: int) -> None:
    args = ["generate", "lesson-tiny", "--tokens", "1,2", "--max-new-tokens", "6", "--check-cache"]
    text, data = table_and_json(args, width)
    assert_fits(text, width)
    for token in data["tokens"]:
        assert whole(text, str(token))
    assert whole(text, f"{data['kv_cache_bytes']['formula']:,}")


@pytest.mark.parametrize("width", WIDTHS)
def test_validate(width: int) -> None:
    text, data = table_and_json(["validate", "gpt2", "llama-2-70b", "t5-small"], width)
    assert_fits(text, width)
    for result in data["results"]:
        assert whole(text, f"{result['total']:,}")


@pytest.mark.parametrize("width", WIDTHS)
def test_depth_sweep(width: int) -> None:
    args = ["depth-sweep", "--sublayer", "linear", "--depths", "1,2,4", "-q"]
    text, data = table_and_json(args, width)
    assert_fits(text, width)
    for point in data["points"]:
        assert whole(text, f"{point['norm_ratio']:.3g}"), point
        assert_whole_or_left_out(text, f"{point['gain']:.3g}", "gain")


def test_import_config_is_yaml_whatever_the_width(tmp_path: Path) -> None:
    from tests.checkpoints.test_configs import GPT2_CONFIG

    (tmp_path / "config.json").write_text(json.dumps(GPT2_CONFIG))
    wide = invoke(["import-config", str(tmp_path)], 200)
    assert invoke(["import-config", str(tmp_path)], 40) == wide


# --- FitTable itself --------------------------------------------------------------------------


def render(table: FitTable, width: int) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(table)
    return console.export_text()


def _numbers_table() -> FitTable:
    table = FitTable(title="t")
    table.add_column("name")
    table.add_column("extra", drop=1)
    table.add_column("value", justify="right", number=True)
    table.add_row("a rather long component name", "droppable words", "68,976,648,192")
    return table


def test_fit_table_keeps_every_column_when_there_is_room() -> None:
    text = render(_numbers_table(), 120)
    assert "droppable words" in text and "left out" not in text


def test_fit_table_wraps_text_before_dropping_and_drops_before_cutting() -> None:
    text = render(_numbers_table(), 46)  # room for all three once the name wraps
    assert "extra" in text and whole(text, "68,976,648,192") and "left out" not in text
    text = render(_numbers_table(), 34)
    assert left_out(text) == {"extra"} and whole(text, "68,976,648,192")
    assert_fits(text, 34)


def test_fit_table_falls_back_to_one_paragraph_per_row() -> None:
    text = render(_numbers_table(), 22)
    assert_fits(text, 22)
    assert whole(text, "68,976,648,192") and "value:" in text


def test_text_columns_never_fold_a_word_with_a_digit() -> None:
    table = FitTable()
    table.add_column("shapes")
    table.add_column("n", number=True)
    table.add_row("1×32×4096, 4096×11008, 11008×4096", "1")
    text = render(table, 20)
    for shape in ("1×32×4096,", "4096×11008,", "11008×4096"):
        assert shape in text


_WORDS = st.sampled_from(["norm", "decoder.0.attn", "1×32×4096,", "p=0.0061", "(× 12)", "a", "x" * 14])


@st.composite
def _tables(draw: st.DrawFn) -> tuple[FitTable, list[tuple[str, str]]]:
    """A random FitTable and its (column header, number cell) pairs."""
    n_columns = draw(st.integers(1, 6))
    kinds = [draw(st.tuples(st.booleans(), st.none() | st.integers(0, 3))) for _ in range(n_columns)]
    table = FitTable(title=draw(st.sampled_from(["", "a title that is long enough to wrap"])))
    for i, (number, drop) in enumerate(kinds):
        table.add_column(f"c{i}", number=number, drop=drop, justify="right" if number else "left")
    numbers = []
    for _ in range(draw(st.integers(1, 4))):
        row = []
        for i, (number, _) in enumerate(kinds):
            if number:
                row.append(f"{draw(st.integers(0, 10**12)):,}")
                numbers.append((f"c{i}", row[-1]))
            else:
                row.append(" ".join(draw(st.lists(_WORDS, max_size=5))))
        table.add_row(*row)
    return table, numbers


@settings(max_examples=200, deadline=None)
@given(_tables(), st.integers(24, 120))
def test_any_table_fits_and_keeps_its_numbers_whole(case: tuple[FitTable, list], width: int) -> None:
    table, numbers = case
    text = render(table, width)
    assert_fits(text, width)
    for header, number in numbers:
        assert_whole_or_left_out(text, number, header)
