"""Option errors (unknown option or command, missing argument, bad or out-of-range value, bad
choice, a flag given a value) are one line on stderr and exit 2 - not click's five-line usage
box - naming the option, the value typed (cut short, escaped) and `tfcli CMD --help`."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass

import typer
from hypothesis import given, settings
from hypothesis import strategies as st

from tfcli.cli.app import app
from tests.cli.guarded import run_in_memory

GROUP = typer.main.get_command(app)
SAMPLE_ARGS = {"params": ["gpt2"], "validate": ["gpt2"], "import-config": ["x"], "run": ["gpt2"],
               "generate": ["gpt2"], "trace": ["gpt2"], "depth-sweep": []}


@dataclass(frozen=True)
class Ran:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def invoke(*args: str) -> Ran:
    """`tfcli ARGS` through the guard, in memory (tests/cli/guarded.py)."""
    return Ran(*run_in_memory(*args))


def _one_line(result: Ran, *needles: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tfcli: error: "), result.stderr
    assert "Usage:" not in result.stderr and "╭" not in result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _options(name: str) -> list[typer.core.TyperOption]:
    return [p for p in GROUP.commands[name].params if p.param_type_name == "option"]


def test_every_commands_option_errors_are_one_line() -> None:
    for name in GROUP.commands:
        base = [name, *SAMPLE_ARGS.get(name, [])]
        _one_line(invoke(*base, "--no-such-option"), "no such option", f"tfcli {name} --help")
        for option in _options(name):
            flag = option.opts[0]
            if option.is_flag:
                _one_line(invoke(*base, f"{flag}=1"), flag, "does not take a value")
                continue
            _one_line(invoke(*base, flag), flag, "requires an argument")
            if option.min is not None:  # numbers: a word, and a value under the minimum
                _one_line(invoke(*base, flag, "x"), flag, "'x'")
                below = str(option.min - 1) if isinstance(option.min, int) else "-0.5"
                _one_line(invoke(*base, flag, below), flag, "greater than or equal")
            if flag == "--format":
                _one_line(invoke(*base, flag, "xml"), "--format", "'xml'", "'json'")


def test_missing_arguments_and_extra_arguments() -> None:
    for name, command in GROUP.commands.items():
        required = [p for p in command.params if p.param_type_name == "argument" and p.required]
        if required:
            _one_line(invoke(name), "missing argument", f"tfcli {name} --help")
    _one_line(invoke("params", "gpt2", "extra"), "unexpected extra argument", "(extra)")


def test_did_you_mean_for_commands_and_options() -> None:
    _one_line(invoke("parms"), "no such command 'parms'", "did you mean 'params'", "tfcli --help")
    _one_line(invoke("params", "gpt2", "--seq-le", "4"), "--seq-le", "did you mean --seq-len")
    _one_line(invoke("run", "gpt2", "--seq-le", "4"), "did you mean --seq-len")
    _one_line(invoke("--bogus"), "no such option: --bogus", "tfcli --help")


def test_did_you_mean_for_choice_values() -> None:
    _one_line(invoke("memory", "gpt2", "--train", "--optimizer", "adm"), "--optimizer",
              "'adm' is not one of", "did you mean 'adam'?", "tfcli memory --help")
    _one_line(invoke("params", "gpt2", "--kv-dtype", "bflaot16"), "did you mean 'bfloat16'?")
    _one_line(invoke("trace", "gpt2", "-f", "JSN"), "did you mean 'json'?")
    far = invoke("params", "gpt2", "--kv-dtype", "zzz")
    _one_line(far, "'zzz' is not one of")
    assert "did you mean" not in far.stderr  # nothing close: no guess


def test_echoed_values_are_cut_and_escaped() -> None:
    long = "x" * 10_000
    for args in (["params", "gpt2", "--format", long], ["params", "gpt2", "--" + long],
                 [long], ["run", "gpt2", "--batch", long]):
        line = _one_line(invoke(*args), "…")
        assert len(line) < 250, len(line)
    line = _one_line(invoke("params", "gpt2", "--format", "\x1b]0;pwned\x07\x1b[31mred\r"),
                     "\\x1b", "\\x07", "\\r")
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", line)


def test_help_still_works_and_no_arguments_show_it_with_exit_0() -> None:
    for name in [*GROUP.commands, None]:
        result = invoke(*([name] if name else []), "--help")
        assert result.exit_code == 0 and "Usage" in result.stdout and result.stderr == ""
    result = invoke()  # bare `tfcli`: the help, and no error (it asked for nothing wrong)
    assert result.exit_code == 0 and result.stdout == invoke("--help").stdout
    assert result.stderr == ""


def test_the_console_script_goes_through_the_same_guard() -> None:
    done = subprocess.run([sys.executable, "-m", "tfcli", "run", "gpt2", "--batch", "x"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("tfcli: error: --batch: 'x' is not an integer (ASCII digits, e.g. 16) "
                           "(see tfcli run --help)\n")


def _not_an_int(text: str) -> bool:
    return re.fullmatch(r"\s*[+-]?\d+\s*", text) is None


@settings(max_examples=1000, deadline=None)
@given(value=st.text(min_size=1, max_size=300).filter(_not_an_int),
       command=st.sampled_from(["run", "trace", "params"]))
def test_any_non_integer_value_of_an_integer_option_is_one_line(value: str, command: str) -> None:
    line = _one_line(invoke(command, "gpt2", "--batch", value), "--batch",
                     f"tfcli {command} --help")
    assert len(line) < 400
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", line)


@settings(max_examples=1000, deadline=None)
@given(name=st.text(alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1,
                    max_size=200))
def test_any_unknown_option_name_is_one_line(name: str) -> None:
    option = "--" + name
    known = {opt for p in GROUP.commands["params"].params for opt in p.opts} | {"--help"}
    if option.split("=")[0] in known or option == "--":
        return
    line = _one_line(invoke("params", "gpt2", option))
    assert len(line) < 400
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", line)
