"""A second adversarial sweep, over the newer commands (memory, perf, diff) and the SPEC
argument's model directories: each class found is one test here, and each failed before its fix.

- a tiny but positive --mfu (5e-324) made the step time inf, tokens/s 0 and GPU-hours a
  ZeroDivisionError (exit 70); 1e-300 printed GPU-hours 'inf';
- a float just past a bound was echoed rounded by `:g` onto the bound itself ("--mfu must be in
  (0, 1], got 1"; "init_std must lie in [1e-06, 1000] (got 1000)");
- memory's size refusal named five options at once and no value;
- memory planned a sequence longer than a learned position table (trace, perf and diff refuse it);
- params and diff took any --batch (a 60-digit one printed a 55-digit PiB figure);
- a model directory whose config.json is a FIFO, a device, a folder or a symlink loop was
  "a directory without config.json".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.guarded import run_in_memory
from tests.conftest import VALID_SPEC

BIG = 2**40


def _refused(*args: str) -> str:
    code, out, err = run_in_memory(*args)
    assert code == 2, (args, code, err)
    assert out == "" and "Traceback" not in err
    line = err.strip()
    assert line.startswith("tfcli: error: ") and "\n" not in line, err
    return line


# --- perf --mfu: tiny values -------------------------------------------------------------------


@pytest.mark.parametrize("mfu", ["5e-324", "1e-300", "1e-7"])
@pytest.mark.parametrize("train", [(), ("--train", "--train-tokens", "1e29")])
def test_a_vanishing_mfu_is_refused_not_divided_by(mfu: str, train: tuple[str, ...]) -> None:
    line = _refused("perf", "gpt2", "--gpu", "h100", "--mfu", mfu, *train)
    assert "--mfu must be at least 1e-06" in line and f"got {float(mfu)!r}" in line


def test_the_smallest_mfu_taken_gives_finite_figures() -> None:
    code, out, err = run_in_memory("perf", "gpt2", "--gpu", "h100", "--mfu", "1e-6", "--train",
                                   "--train-tokens", "9.9e29", "-f", "json")
    assert code == 0, err
    assert "Infinity" not in out and "NaN" not in out and '"gpu_hours": null' not in out


# --- floats just past a bound are echoed as given ----------------------------------------------


def test_a_value_just_past_a_bound_is_echoed_exactly() -> None:
    line = _refused("perf", "gpt2", "--gpu", "h100", "--mfu", "1.0000001")
    assert line.endswith("got 1.0000001")


@pytest.mark.parametrize(("field", "value"), [
    ("init_std", "1000.0001"), ("init_std", "9.9999999e-07"), ("norm_eps", "1.0000001"),
])
def test_a_spec_value_just_past_its_range_is_echoed_exactly(write_spec, field: str,
                                                            value: str) -> None:
    path = write_spec(VALID_SPEC + f"{field}: {value}\n")
    line = _refused("params", str(path))
    assert f"field '{field}'" in line and f"(got {float(value)!r})" in line, line


# --- memory: the option at fault ---------------------------------------------------------------


@pytest.mark.parametrize(("args", "option"), [
    (("--train", "--lora-rank", str(BIG + 1)), "--lora-rank"),
    (("--train", "--gpus", str(BIG + 1)), "--gpus"),
    (("--seq-len", f"1,{BIG + 1}"), "--seq-len"),
    (("--batch", str(BIG + 1)), "--batch"),
    (("--group-size", str(BIG + 1), "--dtype", "int4"), "--group-size"),
])
def test_memory_names_the_one_option_too_large_and_its_value(args: tuple[str, ...],
                                                             option: str) -> None:
    line = _refused("memory", "lesson-tiny", *args)
    assert f"error: {option} must be between 1 and 2^40" in line and line.endswith(str(BIG + 1))


# --- memory: past a learned position table -----------------------------------------------------


@pytest.mark.parametrize(("spec", "seq"), [("gpt2", "1025"), ("bert-base", "513"),
                                           ("gpt2", "512,2048")])
@pytest.mark.parametrize("train", [(), ("--train",)])
def test_memory_refuses_a_sequence_past_learned_positions(spec: str, seq: str,
                                                          train: tuple[str, ...]) -> None:
    line = _refused("memory", spec, "--seq-len", seq, *train)
    assert "exceeds max_seq_len" in line and "learned positions" in line


def test_memory_still_plans_up_to_the_table_and_past_it_for_rope() -> None:
    for args in (("gpt2", "--seq-len", "1024"), ("llama-2-7b", "--seq-len", "65536"),
                 ("gpt2", "--gpu", "h100", "--fit")):
        code, _, err = run_in_memory("memory", *args, "-f", "json")
        assert code == 0, (args, err)


# --- params and diff: --batch and --seq-len bounded ---------------------------------------------


@pytest.mark.parametrize("args", [
    ("params", "gpt2", "--batch", str(BIG + 1)), ("params", "gpt2", "--seq-len", "9" * 40),
    ("diff", "llama-2-7b", "mistral-7b", "--batch", "9" * 60),
    ("diff", "gpt2", "gpt2-medium", "--batch", str(BIG + 1)),
])
def test_params_and_diff_bound_batch_and_seq_len(args: tuple[str, ...]) -> None:
    option = args[-2]
    line = _refused(*args)
    assert f"{option} must be between 1 and 2^40" in line and len(line) < 200


def test_a_spec_whose_table_is_longer_than_the_bound_still_counts(write_spec) -> None:
    path = write_spec(VALID_SPEC.replace("max_seq_len: 32", f"max_seq_len: {10**15}"))
    code, _, err = run_in_memory("params", str(path), "-f", "json")
    assert code == 0, err


# --- a model directory whose config.json is not a file -----------------------------------------


def _directories(root: Path) -> dict[str, tuple[Path, str]]:
    made = {name: root / name for name in ("fifo", "device", "folder", "loop")}
    for folder in made.values():
        folder.mkdir()
    os.mkfifo(made["fifo"] / "config.json")
    (made["device"] / "config.json").symlink_to(os.devnull)
    (made["folder"] / "config.json").mkdir()
    (made["loop"] / "config.json").symlink_to("config.json")
    return {"fifo": (made["fifo"], "is a FIFO"), "device": (made["device"], "is a character device"),
            "folder": (made["folder"], "is a directory"), "loop": (made["loop"], "cannot be read")}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", [("params",), ("memory",), ("perf", "--gpu", "h100"),
                                     ("diff", "lesson-tiny"), ("run",), ("trace",)])
def test_a_config_json_that_is_not_a_file_is_named(tmp_path: Path,
                                                   command: tuple[str, ...]) -> None:
    for name, (folder, what) in _directories(tmp_path).items():
        line = _refused(command[0], str(folder), *command[1:])
        assert f"its config.json {what}" in line, (name, line)
        assert "without config.json" not in line


def test_a_folder_without_config_json_still_says_so(tmp_path: Path) -> None:
    (tmp_path / "dangling").mkdir()
    (tmp_path / "dangling" / "config.json").symlink_to(tmp_path / "nowhere")
    for folder in (tmp_path, tmp_path / "dangling"):
        assert "is a directory without config.json" in _refused("params", str(folder))
