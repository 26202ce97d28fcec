"""User text (spec names, paths, token texts, generated text, error details) reaches the screen
as typed: never parsed as rich markup, and with control bytes shown as escapes, in every command.

Each CLI case feeds a hostile string and checks three things: exit 0, the literal (escaped) text
on screen, and no control character in the output at all (CliRunner is not a terminal, so rich
writes no codes of its own: any ESC / BEL would be the user's).
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

from tests.conftest import VALID_SPEC
from tfcli.analysis.catalog import Catalog, CatalogEntry
from tfcli.core.errors import TfcliError
from tfcli.render.catalog import render_catalog
from tfcli.render.safe import PROSE, SafeConsole, escape_user, for_matplotlib, plain, visible
from tfcli.render.tables import FitTable
from tfcli.sources import load_spec
from tfcli.checkpoints.tokenizer import ByteTokenizer

MARKUP = ["[/]", "[bold]x[/bold]", "[link=http://e.x]y[/link]", "[blink]z", "[/INST]", ":thumbs_up:"]
CONTROL = ["\x1b[31mred", "bell\x07", "rtl\u202eevil", "c1\x9b2J", "cr\rx", "nul\x00", "tab\tx"]
HOSTILE = MARKUP + CONTROL
# For the CLI matrix, each kind at once (a loader refusing control bytes leaves markup tested)
NAMES = ["[/]", " ".join(MARKUP), " ".join(CONTROL)]
HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs"}
WIDE = {"COLUMNS": "200"}  # no wrapping inside the names we look for


def hidden_chars(text: str) -> list[str]:
    return [c for c in text if c != "\n" and unicodedata.category(c) in HIDDEN]


def assert_clean(output: str) -> None:
    assert hidden_chars(output) == [], f"control characters reached the output: {output!r}"


def record(renderable: object, width: int = 200) -> str:
    console = SafeConsole(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


# --- the helpers ------------------------------------------------------------------------------


@pytest.mark.parametrize("text, shown", [
    ("\x1b[31mred", "\\x1b[31mred"), ("bell\x07", "bell\\x07"), ("rtl\u202eevil", "rtl\\u202eevil"),
    ("c1\x9b2J", "c1\\x9b2J"), ("nul\x00", "nul\\x00"), ("zwj\u200d", "zwj\\u200d"),
    ("surrogate\udcff", "surrogate\\udcff"), ("line\u2028sep", "line\\u2028sep"),
    ("[/]", "[/]"), ("ünïcödé 中文 ×", "ünïcödé 中文 ×"),
])
def test_visible_escapes_exactly_the_hidden_characters(text: str, shown: str) -> None:
    assert visible(text) == shown
    assert plain(text).plain == shown and not plain(text).spans  # no markup was parsed


def test_prose_keeps_line_breaks_and_tabs_only() -> None:
    assert visible("a\nb\tc\x1b", keep=PROSE) == "a\nb\tc\\x1b"
    assert visible("a\nb") == "a\\x0ab"  # in a name, a line break is shown


def test_escape_user_and_matplotlib() -> None:
    assert escape_user("[bold]x\x07") == "\\[bold]x\\x07"
    assert for_matplotlib("$\\frac{x\x1b") == "\\$\\frac{x\\x1b"


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_any_text_becomes_printable(text: str) -> None:
    shown = visible(text)
    assert shown.isprintable() or not hidden_chars(shown)
    assert visible(shown) == shown  # escaping twice changes nothing more


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40))
def test_any_text_renders_in_a_table_and_as_a_str(title: str, cell: str) -> None:
    table = FitTable(title=title)
    table.add_column(cell or "x")
    table.add_column("n", number=True)
    table.add_row(cell, "12,345")
    for renderable in (table, title, Text(cell)):  # str: SafeConsole takes it literally
        out = record(renderable, width=60)
        assert_clean(out)
    assert "12,345" in record(table, width=60)


def test_safe_console_takes_str_literally_and_escapes_text_it_is_given() -> None:
    out = record("[/] [bold]b[/bold] :thumbs_up: \x1b[2J\x07")
    assert "[/] [bold]b[/bold] :thumbs_up: \\x1b[2J\\x07" in out
    # Text built without plain() still cannot drive the terminal (the last line of defence)
    assert_clean(record(Text("a\x1b]8;;http://e.x\x07b")))


def test_catalog_names_are_shown_literally() -> None:
    entries = [CatalogEntry(name, "decoder", "2", 16, 1234, "") for name in HOSTILE]
    out = record(render_catalog(Catalog(entries)))
    assert_clean(out)
    for name in HOSTILE:
        assert visible(name) in out


# --- every command ----------------------------------------------------------------------------


def hostile_spec(tmp_path: Path, name: str) -> Path:
    """A valid spec named `name` (a JSON string is a YAML double-quoted string: \\u escapes)."""
    path = tmp_path / "hostile.yaml"
    path.write_text(VALID_SPEC.replace("name: tiny", f"name: {json.dumps(name)}"))
    return path


def loads(path: Path) -> bool:
    try:
        load_spec(str(path))
    except TfcliError:
        return False
    return True


COMMANDS = {
    "params": ["params"],
    "trace": ["trace", "--seq-len", "4"],
    "run": ["run", "--seq-len", "4"],
    "generate": ["generate", "--tokens", "1,2", "--max-new-tokens", "2"],
    "validate": ["validate"],
    "depth-sweep": ["depth-sweep", "--depths", "1,2", "--seq-len", "4", "-q"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("name", NAMES)
def test_every_command_shows_a_hostile_spec_name_literally(runner, tmp_path: Path, command: str,
                                                           name: str) -> None:
    from tfcli.cli.app import app

    path = hostile_spec(tmp_path, name)
    args = COMMANDS[command]
    result = runner.invoke(app, [args[0], str(path), *args[1:]], env=WIDE)
    assert_clean(result.stdout)
    assert_clean(result.stderr)
    if not loads(path):  # a loader that refuses control bytes in names: one line, exit 2
        assert result.exit_code == 2 and result.stderr.count("\n") == 1
        return
    assert result.exit_code == 0, result.output
    assert visible(name) in result.stdout


@pytest.mark.parametrize("name", NAMES)
def test_validate_shows_a_hostile_path_and_error_literally(runner, tmp_path: Path, name: str) -> None:
    from tfcli.cli.app import app

    good = tmp_path / f"{name.replace('/', '_').replace(chr(0), '_')}.yaml"
    good.write_text(VALID_SPEC)
    bad = tmp_path / "bad.yaml"
    bad.write_text(VALID_SPEC + f"{json.dumps(name)}: 1\n")  # an unknown key, echoed in the error
    result = runner.invoke(app, ["validate", str(good), str(bad)], env=WIDE)
    assert result.exit_code == 2
    assert_clean(result.stdout)
    assert visible(str(good)) in result.stdout and "BAD" in result.stdout


@pytest.mark.parametrize("token", ["[/INST]", "[link=http://e.x]y[/link]", "\x1b[31m", "\x07", "\u202e"])
def test_run_top5_tokens_like_inst_are_shown_literally(runner, monkeypatch, token: str) -> None:
    """A Mistral-style vocabulary has "[/INST]": as a top-5 token it used to crash the table."""
    from tfcli.cli.app import app

    monkeypatch.setattr(ByteTokenizer, "token_text", lambda self, t: token)
    result = runner.invoke(app, ["run", "lesson-tiny", "--text", "Hi"], env=WIDE)
    assert result.exit_code == 0, result.output
    assert_clean(result.stdout)
    top5 = result.stdout[result.stdout.index("top-5"):]
    assert top5.count(repr(token)) == 5  # repr: quotes show a token's spaces, \x1b its escapes


def test_generated_text_cannot_drive_the_terminal(runner, monkeypatch) -> None:
    """A random model over bytes generates ESC and BEL; the stream and the result show them
    escaped (line breaks stay: generated prose may have them)."""
    from tfcli.cli.app import app

    monkeypatch.setattr(ByteTokenizer, "decode", lambda self, ids: "[/]\x1b[2J\x07line\nnext")
    result = runner.invoke(app, ["generate", "lesson-tiny", "--text", "Hi", "--max-new-tokens", "3"],
                           env=WIDE)
    assert result.exit_code == 0, result.output
    assert_clean(result.stdout)
    assert_clean(result.stderr)
    assert "[/]\\x1b[2J\\x07line\nnext" in result.stdout


def test_png_title_with_dollar_signs(tmp_path: Path) -> None:
    """A spec name is not matplotlib mathtext: "$\\frac{x$" used to raise at savefig."""
    from typer.testing import CliRunner

    from tfcli.cli.app import app

    path = hostile_spec(tmp_path, "$\\frac{x$")
    target = tmp_path / "sweep.png"
    result = CliRunner().invoke(app, ["depth-sweep", str(path), "--depths", "1,2", "--seq-len", "4",
                                      "-q", "--plot", str(target)], env=WIDE)
    assert result.exit_code == 0, result.output
    assert target.read_bytes()[:4] == b"\x89PNG"
