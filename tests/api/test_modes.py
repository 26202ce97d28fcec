"""Issue 28.1: an option the command's mode does not read is refused by name, before any work,
for every rule of tfcli/cli_modes.MODE_RULES - and read where the mode reads it. Without the
table, `memory gpt2 --gpus 8 --tp 8` answered how gpt2 fits on one GPU."""

from __future__ import annotations

import pytest

from tests.cli.guarded import run_in_memory
from tfcli.api.modes import MODE_RULES

# A value each option takes; a flag without a value (--dropout, --fit) maps to ().
VALUES: dict[str, tuple[str, ...]] = {
    "--gpus": ("2",), "--tp": ("1",), "--zero": ("1",), "--optimizer": ("sgd",),
    "--recompute": ("full",), "--lora-rank": ("4",), "--dropout": (), "--kv-dtype": ("float16",),
    "--group-size": ("64",), "--lora-targets": ("q,v",), "--fit": (), "--train-tokens": ("1e9",),
    "--seed": ("3",), "--expert-dtype": ("mxfp4",),
}
# What each command needs besides, and the arguments that put it in the other mode.
BASE = {"memory": ("lesson-tiny",), "perf": ("lesson-tiny", "--gpu", "a100"),
        "trace": ("lesson-tiny", "--seq-len", "4")}
OUTSIDE = {  # (command, flag) -> arguments of a mode that does not read the flag
    ("memory", "--kv-dtype"): ("--train",),
    ("perf", "--expert-dtype"): ("--train",),
}
CASES = [(command, flag) for command, rules in MODE_RULES.items() for rule in rules
         for flag in rule.options]


def test_the_table_covers_what_the_issue_names() -> None:
    memory = {f for rule in MODE_RULES["memory"] for f in rule.options}
    perf = {f for rule in MODE_RULES["perf"] for f in rule.options}
    assert {"--gpus", "--tp", "--zero", "--optimizer", "--recompute", "--lora-rank", "--dropout",
            "--group-size", "--kv-dtype"} <= memory
    assert {"--train-tokens", "--recompute", "--gpus"} <= perf


@pytest.mark.parametrize(("command", "flag"), CASES)
def test_an_option_outside_its_mode_is_refused_by_name(command: str, flag: str) -> None:
    args = (*BASE[command], *OUTSIDE.get((command, flag), ()), flag, *VALUES[flag])
    code, out, err = run_in_memory(command, *args, "-f", "json")
    assert code == 2 and out == "", (args, err)
    assert err.startswith(f"tfcli: error: {flag} applies only ") and err.count("\n") == 1, err


@pytest.mark.parametrize(("command", "flag"), CASES)
def test_it_is_refused_before_the_spec_is_read(command: str, flag: str) -> None:
    """Checked before any work: a SPEC that does not exist is not even looked at."""
    args = ("no-such-spec", *BASE[command][1:], *OUTSIDE.get((command, flag), ()), flag,
            *VALUES[flag])
    code, _, err = run_in_memory(command, *args)
    assert code == 2 and f"{flag} applies only" in err, err


def test_its_default_value_given_explicitly_is_refused_too() -> None:
    """`--gpus 1` without --train is still a question about GPUs the plan does not answer."""
    code, _, err = run_in_memory("memory", "lesson-tiny", "--gpus", "1")
    assert code == 2 and "--gpus applies only with --train" in err


@pytest.mark.parametrize("args", [
    ("memory", "lesson-tiny", "--train", "--gpus", "2", "--tp", "1", "--zero", "1",
     "--optimizer", "sgd", "--recompute", "full", "--dropout"),
    ("memory", "lesson-tiny", "--train", "--lora-rank", "4", "--lora-targets", "q,v"),
    ("memory", "lesson-tiny", "--kv-dtype", "float16"),
    ("memory", "lesson-tiny", "--dtype", "int4", "--group-size", "64"),
    ("memory", "lesson-tiny", "--train", "--lora-rank", "4", "--dtype", "int8",
     "--group-size", "64"),
    ("memory", "lesson-tiny", "--gpu", "t4", "--fit"),
    ("perf", "lesson-tiny", "--gpu", "a100", "--train", "--gpus", "8", "--recompute", "full",
     "--train-tokens", "1e9"),
    ("trace", "lesson-tiny", "--seq-len", "4", "--execute", "--seed", "3"),
])
def test_in_its_mode_the_option_is_read(args: tuple[str, ...]) -> None:
    code, out, err = run_in_memory(*args, "-f", "json")
    assert code == 0, err


@pytest.mark.parametrize(("gpus", "word"), [("1", "1 GPU(s)"), ("8", "8 GPU(s)")])
def test_training_reports_the_gpus_it_was_asked_about(gpus: str, word: str) -> None:
    code, out, err = run_in_memory("memory", "lesson-tiny", "--train", "--gpus", gpus)
    assert code == 0 and word in out, err


@pytest.mark.parametrize("flag", ["--n-heads", "--n-kv-heads", "--d-ff", "--init-std"])
def test_depth_sweep_without_a_spec_names_the_option_it_does_not_read(flag: str) -> None:
    """--sublayer linear without a SPEC stacks d x d matrices: the line named the field
    ('got n_heads'), not the option typed."""
    code, _, err = run_in_memory("depth-sweep", "--sublayer", "linear", flag, "2")
    assert code == 2 and err.startswith(f"tfcli: error: {flag}: without a SPEC only --d-model"), err
