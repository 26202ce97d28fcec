"""`--format markdown` on every command that takes --format: its first table has exactly the
cells of `--format csv`, and the notes come as a list under the tables."""

from __future__ import annotations

import pytest

from tests.cli.guarded import GROUP, run_in_memory
from tests.render.markdown_tables import parse_csv, parse_markdown

# Commands run small: tiny specs, few tokens, two depths. A command not named here runs as
# `tfcli NAME lesson-tiny` when it takes a SPEC, else as `tfcli NAME`.
CASES: dict[str, tuple[str, ...]] = {
    "params": ("params", "gpt2"),
    "diff": ("diff", "llama-2-7b", "mistral-7b"),
    "validate": ("validate", "lesson-tiny", "gpt2"),
    "run": ("run", "lesson-tiny", "--seq-len", "4"),
    "generate": ("generate", "lesson-tiny", "--tokens", "1,2", "--max-new-tokens", "3"),
    "trace": ("trace", "lesson-tiny", "--seq-len", "8", "--depth", "2"),
    "depth-sweep": ("depth-sweep", "--sublayer", "linear", "--depths", "1,2", "--quiet"),
    "perf": ("perf", "lesson-tiny", "--gpu", "h100", "--train"),
}


def _formatted_commands() -> list[str]:
    return sorted(name for name, command in GROUP.commands.items()
                  if any(p.name == "fmt" for p in command.params))


def _case(name: str) -> tuple[str, ...]:
    if name in CASES:
        return CASES[name]
    takes_spec = any(p.name == "spec" for p in GROUP.commands[name].params)
    return (name, "lesson-tiny") if takes_spec else (name,)


def test_the_named_cases_are_commands_with_a_format() -> None:
    assert set(CASES) <= set(_formatted_commands())


def test_markdown_is_a_format_choice_of_every_command() -> None:
    for name in _formatted_commands():
        code, out, _ = run_in_memory(name, "--help")
        assert code == 0 and "markdown" in out, name


@pytest.mark.parametrize("name", _formatted_commands())
def test_markdown_has_the_csv_cells(name: str) -> None:
    code, csv_out, _ = run_in_memory(*_case(name), "--format", "csv")
    assert code == 0
    code, md_out, err = run_in_memory(*_case(name), "--format", "markdown")
    assert code == 0 and "Traceback" not in err
    tables, _ = parse_markdown(md_out)
    header, rows = parse_csv(csv_out)
    assert (tables[0].header, tables[0].rows) == (header, rows)


def test_params_markdown_adds_the_summary_and_notes() -> None:
    _, out, _ = run_in_memory("params", "gpt2", "-f", "markdown")
    tables, notes = parse_markdown(out)
    summary = dict(tables[1].rows)
    assert tables[1].title == "summary" and summary["total"] == "124439808"
    assert summary["weights in float32 (bytes)"] == str(4 * 124439808)
    assert "output head tied to the token embedding: counted once" in notes


def test_depth_sweep_markdown_lists_the_verdict() -> None:
    _, out, _ = run_in_memory(*CASES["depth-sweep"], "-f", "markdown")
    _, notes = parse_markdown(out)
    assert len(notes) == 1 and "up to depth 2" in notes[0]


def test_trace_execute_markdown_sends_the_verdict_to_stderr() -> None:
    code, out, err = run_in_memory("trace", "lesson-tiny", "--seq-len", "4", "--execute",
                                   "-f", "markdown")
    assert code == 0 and "match" in err
    tables, _ = parse_markdown(out)
    assert tables[0].header[0] == "path"


def test_a_hostile_spec_name_cannot_break_the_table(tmp_path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: 'a|b\\c *x*'\nfamily: decoder\nvocab_size: 64\nmax_seq_len: 32\n"
                    "d_model: 16\nn_heads: 4\nn_layers: 2\nd_ff: 32\n")
    code, out, _ = run_in_memory("params", str(spec), "-f", "markdown")
    tables, _ = parse_markdown(out)
    assert code == 0 and tables[0].title == "a|b\\c *x* — parameters per component"
