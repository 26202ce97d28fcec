"""The last line of defence: no traceback ever reaches the user. A bug is one "internal error"
line and exit 70; MemoryError / RecursionError (an input too big or too deep) exit 2; Ctrl-C exits
130 quietly; every error line has its control bytes escaped and its length capped."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st

from tfcli.cli.app import app
from tfcli.core.errors import BadInputError
from tfcli.cli.guard import MAX_MESSAGE_CHARS, error_text
from tests.cli.guarded import run_in_memory

GROUP = typer.main.get_command(app)
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


run = run_in_memory


def _catalog_raises(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    def broken() -> None:
        raise exc

    monkeypatch.setattr("tfcli.analysis.catalog.build_catalog", broken)


def test_a_bug_is_one_internal_error_line_and_exit_70(monkeypatch) -> None:
    monkeypatch.delenv("TFCLI_DEBUG", raising=False)
    _catalog_raises(monkeypatch, ZeroDivisionError("boom \x1b[31m" + "x" * 5000))
    code, out, err = run("specs")
    assert code == 70 and out == ""
    assert err.startswith("tfcli: internal error (a bug; TFCLI_DEBUG=1 shows the traceback): "
                          "ZeroDivisionError: boom \\x1b[31mxxx")
    assert err.count("\n") == 1 and len(err) < 400 and "Traceback" not in err


def test_tfcli_debug_shows_the_traceback(monkeypatch) -> None:
    monkeypatch.setenv("TFCLI_DEBUG", "1")
    _catalog_raises(monkeypatch, ZeroDivisionError("boom"))
    code, _, err = run("specs")
    assert code == 70 and "Traceback" in err and "ZeroDivisionError: boom" in err
    _catalog_raises(monkeypatch, BadInputError("bad"))
    code, _, err = run("specs")
    assert code == 2 and "Traceback" in err and err.endswith("tfcli: error: bad\n")


@pytest.mark.parametrize(("exc", "code", "words"), [
    (MemoryError(), 2, "out of memory"),
    (RecursionError("maximum recursion depth exceeded"), 2, "nested too deeply"),
    (PermissionError(13, "Permission denied"), 70, "internal error"),  # not stdout: a bug
])
def test_exceptions_an_input_can_cause(monkeypatch, exc: BaseException, code: int,
                                       words: str) -> None:
    monkeypatch.delenv("TFCLI_DEBUG", raising=False)
    _catalog_raises(monkeypatch, exc)
    got, out, err = run("specs")
    assert got == code and out == "" and err.count("\n") == 1 and words in err, err


def test_ctrl_c_exits_130_quietly(monkeypatch) -> None:
    _catalog_raises(monkeypatch, KeyboardInterrupt())
    assert run("specs") == (130, "", "")


def test_real_recursion_from_a_deep_input_is_one_line(monkeypatch) -> None:
    """A RecursionError raised from a really exhausted stack (not just constructed)."""
    def deep(n: int) -> int:
        return deep(n + 1) + 1

    monkeypatch.setattr("tfcli.analysis.catalog.build_catalog", lambda: deep(0))
    code, _, err = run("specs")
    assert code == 2 and err == "tfcli: error: the input is nested too deeply to read\n"


def test_a_tfcli_errors_control_bytes_are_escaped_and_its_length_capped(monkeypatch) -> None:
    monkeypatch.delenv("TFCLI_DEBUG", raising=False)
    _catalog_raises(monkeypatch, BadInputError("name \x1b]0;title\x07 \r\u202e here\nline two"))
    code, _, err = run("specs")
    assert code == 2
    assert err == "tfcli: error: name \\x1b]0;title\\x07 \\x0d\\u202e here\nline two\n"
    _catalog_raises(monkeypatch, BadInputError("y" * 100_000))
    code, _, err = run("specs")
    assert code == 2 and len(err) < MAX_MESSAGE_CHARS + 100
    assert err.rstrip().endswith("… (96,000 more characters)")


def test_a_spec_errors_lines_stay_lines(write_spec) -> None:
    """SpecError puts each problem on its own line: those line breaks are kept."""
    path = write_spec("name: x\nfamily: decoder\nvocab_size: -1\nd_model: -2\n")
    code, _, err = run("params", str(path))
    lines = err.splitlines()
    assert code == 2 and len(lines) >= 2 and lines[0].startswith("tfcli: error: ")
    assert all(str(path) in line for line in lines)


def test_the_real_process_prints_no_traceback_for_a_bug(tmp_path) -> None:
    """Through python -m tfcli, with the bug injected by a sitecustomize-free wrapper."""
    script = tmp_path / "bug.py"
    script.write_text(
        "import tfcli.analysis.catalog as c\n"
        "def broken():\n    raise ValueError('injected')\n"
        "c.build_catalog = broken\n"
        "from tfcli.cli.app import main\nmain()\n")
    done = subprocess.run([sys.executable, str(script), "specs"], capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 70 and done.stdout == ""
    assert done.stderr == ("tfcli: internal error (a bug; TFCLI_DEBUG=1 shows the traceback): "
                           "ValueError: injected\n")


@settings(max_examples=2000, deadline=None)
@given(st.text(max_size=300))
def test_error_text_never_lets_a_control_character_through(text: str) -> None:
    shown = error_text(text)
    assert not CONTROL.search(shown)
    assert shown.count("\n") == text.count("\n")  # a SpecError's line breaks survive
    if text.isprintable():
        assert shown == text  # nothing printable is changed


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=MAX_MESSAGE_CHARS + 1, max_value=50 * MAX_MESSAGE_CHARS))
def test_error_text_is_bounded(length: int) -> None:
    shown = error_text("\x1b" * length)
    assert len(shown) <= 4 * MAX_MESSAGE_CHARS + 40  # each kept ESC becomes 4 visible characters
    assert shown.endswith(f"({length - MAX_MESSAGE_CHARS:,} more characters)")
