"""The rendered `--help` of every command (tfcli/cli/help.py), under the typer the install resolves:
plain text that reads the same under any typer - no `<bool>`, `{spec}` or `<list[str]>`, every
choice listed, every command with an example, `tfcli[plot]` kept - and the conventions around
it: -h, -V, bare `tfcli`, shell completion."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.cli.guarded import GROUP, run_in_memory
from tfcli.cli.help import choices

ROOT = Path(__file__).resolve().parents[2]
TYPER_LEAKS = ("<bool>", "<str>", "<int", "<float", "<list[", "{spec}", "{", "[x>=1]x")


def _help(*args: str) -> str:
    code, out, err = run_in_memory(*args, "--help")
    assert code == 0 and err == "", (args, code, err)
    return out


def _options(name: str) -> list:
    return [p for p in GROUP.commands[name].params if p.param_type_name == "option"]


@pytest.mark.parametrize("name", sorted(GROUP.commands))
def test_every_commands_help_is_plain_and_complete(name: str, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    text = _help(name)
    assert text.startswith(f"Usage: tfcli {name} [OPTIONS]"), text[:80]
    for leak in TYPER_LEAKS:
        assert leak not in text, (name, leak)
    assert re.search(rf"^  Example: tfcli {re.escape(name)}\b", text, re.M), name
    assert not re.search(r"\x1b|[ \t]$", text, re.M)  # no colour, no trailing spaces
    assert "the lesson" not in text.lower()  # no unexplained course references
    assert all(len(line) <= 80 for line in text.splitlines() if "Example:" not in line)
    for option in _options(name):
        if option.hidden:
            assert not re.search(rf"{re.escape(option.opts[0])}\b", text), option.opts
            continue
        assert option.opts[0] in text, (name, option.opts)
        listed = choices(option)
        if listed:  # every value a choice takes is named in the help
            assert f"[{'|'.join(listed)}]" in text, (name, option.opts, listed)


def test_group_help_lists_commands_and_the_conventions() -> None:
    text = _help()
    assert text.startswith("Usage: tfcli [OPTIONS] COMMAND [ARGS]...")
    for name, command in GROUP.commands.items():
        if not command.hidden:
            assert re.search(rf"^  {re.escape(name)}\s", text, re.M), name
    for option in ("-V, --version", "-h, --help", "--install-completion", "--show-completion"):
        assert option in text, option


def test_dash_h_bare_tfcli_and_dash_v() -> None:
    assert run_in_memory("params", "-h") == (0, _help("params"), "")
    assert run_in_memory() == (0, _help(), "")  # bare tfcli: the help, exit 0
    code, out, err = run_in_memory("-V")
    assert (code, err) == (0, "") and re.fullmatch(r"tfcli \d+\.\d+\.\d+\S*\n", out)


def test_show_completion_prints_a_completion_script() -> None:
    """typer finds the shell among the process's parents: a bash that does not exec it."""
    import subprocess
    import sys

    done = subprocess.run(["bash", "-c", f"{sys.executable} -m tfcli --show-completion; true"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert "complete -o default -F _tfcli_completion tfcli" in done.stdout, done.stderr


def test_markup_characters_in_help_are_kept() -> None:
    assert "tfcli[plot]" in _help("depth-sweep")  # rich markup once ate `[plot]`


def test_help_wraps_to_columns_and_lists_ranges_and_defaults(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    text = _help("trace")
    assert all(len(line) <= 60 for line in text.splitlines() if "Example:" not in line)
    assert "[1<=x<=3]" in text and "[default: 3]" in text  # --depth
    assert "--dtype [float32|bfloat16|float16]" in text


def test_typer_pin_holds_the_tested_version() -> None:
    """Help is tfcli's own, but parsing and its messages are typer's: pyproject pins the range
    these tests ran under, and the installed typer is inside it."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pin = next(d for d in deps if d.startswith("typer"))
    low, high = re.fullmatch(r"typer>=([\d.]+),<([\d.]+)", pin).groups()
    installed = tuple(int(x) for x in version("typer").split(".")[:3])
    assert tuple(int(x) for x in low.split(".")) <= installed < tuple(int(x) for x in high.split("."))


def _readme_commands() -> list[list[str]]:
    """The `$ tfcli ...` lines of README.md and docs/*.md as argument lists, up to a pipe or a
    redirect."""
    import shlex

    runs = []
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for line in (line for page in pages for line in page.read_text().splitlines()):
        if line.startswith("$ tfcli "):
            words = shlex.split(line[2:], comments=True)
            cut = next((i for i, w in enumerate(words) if w in ("|", ";", "&&", ">") or
                        w.startswith((">", "2>"))), len(words))
            runs.append(words[1:cut])
    return runs


def test_readme_examples_use_only_options_that_exist() -> None:
    """A renamed option cannot linger in the README or docs/: every option there is a visible one of its
    command (the examples' outputs are regenerated from real runs)."""
    runs = _readme_commands()
    assert len(runs) > 20
    for args in runs:
        name = next(a for a in args if not a.startswith("-"))
        if name not in GROUP.commands:  # a deliberate typo (an error example) is an argument
            continue
        command = GROUP.commands[name]
        known = {opt for p in command.params if not getattr(p, "hidden", False)
                 for opt in (*p.opts, *p.secondary_opts)} | {"-h", "--help"}
        used = {a.split("=")[0] for a in args if a.startswith("-") and a != "-"}
        wrong = used - known - {"--seqlen"}  # the README's did-you-mean example
        assert not wrong, (args, wrong)


@pytest.mark.parametrize(("words", "cword", "expected"), [
    ("tfcli par", "1", "params"), ("tfcli params gpt2 --kv", "3", "--kv-dtype"),
])
def test_completion_completes_commands_and_options(words: str, cword: str, expected: str,
                                                   monkeypatch) -> None:
    monkeypatch.setenv("_TFCLI_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", cword)
    code, out, _ = run_in_memory()
    assert code == 0 and out.split() == [expected], (code, out)


def test_a_missing_argument_is_named_as_the_help_names_it() -> None:
    from tfcli.cli.help import argument_name

    for name, command in GROUP.commands.items():
        required = [p for p in command.params if p.param_type_name == "argument" and p.required]
        if required:
            code, _, err = run_in_memory(name)
            shown = argument_name(required[0]).removesuffix("...")
            assert code == 2 and f"missing argument '{shown}'" in err, (name, err)
            assert shown in _help(name).splitlines()[0], name
