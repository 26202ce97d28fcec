"""Every integer option takes ASCII digits only, as --tokens and --depths do: int() alone would
read '1_0' as 10 and take '+3', ' 7' or full-width digits without a word."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from tfcli.cli.app import app
from tfcli.cli.guard import _is_int_option

GROUP = typer.main.get_command(app)
INT_OPTIONS = [(name, param.opts[0]) for name, command in sorted(GROUP.commands.items())
               for param in command.params if _is_int_option(param) and param.opts[0].startswith("--")]
SPEC_FOR = {"depth-sweep": [], "specs": [], "schema": []}  # commands that need no SPEC argument


def test_the_commands_have_integer_options_to_check() -> None:
    assert ("run", "--batch") in INT_OPTIONS and ("depth-sweep", "--seq-len") in INT_OPTIONS


@pytest.mark.parametrize(("command", "option"), INT_OPTIONS)
@pytest.mark.parametrize("value", ["1_0", "+3", " 7", "3.0", "１２", "0x10", "1e3"])
def test_a_non_ascii_integer_is_refused_in_one_line(command: str, option: str, value: str) -> None:
    spec = SPEC_FOR.get(command, ["lesson-tiny"])
    result = CliRunner().invoke(app, [command, *spec, option, value])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert f"tfcli: error: {option}: {value!r} is not an integer" in result.stderr


@pytest.mark.parametrize("args", [["run", "lesson-tiny", "--text", "--batch", "--tokens", "1"],
                                  ["run", "lesson-tiny", "--tokens=1,2", "--seed=7"]])
def test_other_options_values_and_equals_forms_are_read_right(args: list[str]) -> None:
    """A --text of '--batch' is text, not the --batch option; --seed=7 is an integer."""
    result = CliRunner().invoke(app, args)
    assert "is not an integer" not in result.stderr
