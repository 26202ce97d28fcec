"""NaN / inf through the CLI (issue 11, section 2): every extreme setting, non-finite weight and
overflow ends in one line on stderr and a non-zero exit, never a NaN table or a NumPy warning."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.analysis.run.test_nonfinite import NO_NORM
from tests.conftest import VALID_SPEC
from tests.checkpoints.test_configs import GPT2_CONFIG, gpt2_tensors, write_model

COMMANDS = {  # each command that runs a forward pass, with arguments that keep it small
    "run": ["run", "{spec}", "--tokens", "1,2,3"],
    "generate": ["generate", "{spec}", "--tokens", "1,2,3", "--max-new-tokens", "3"],
    "trace": ["trace", "{spec}", "--execute", "--seq-len", "4"],
    "depth-sweep": ["depth-sweep", "{spec}", "--depths", "1,2", "--seq-len", "4", "-q"],
}


def args_for(command: str, spec: Path | str) -> list[str]:
    return [str(spec) if a == "{spec}" else a for a in COMMANDS[command]]


def one_line_error(result, exit_code: int, *needles: str) -> str:
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tfcli: error: "), result.stderr
    assert "Traceback" not in result.output and "Warning" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("setting, field", [
    ("init_std: 1e20", "init_std"), ("init_std: 1e-9", "init_std"),
    ("norm_eps: 1e39", "norm_eps"), ("norm_eps: 1e-50", "norm_eps"),
])
def test_extreme_spec_settings_are_refused_by_every_command(invoke, write_spec, command: str,
                                                             setting: str, field: str) -> None:
    path = write_spec(VALID_SPEC + setting + "\n")
    one_line_error(invoke(*args_for(command, path)), 2, f"spec.yaml:9: field '{field}': must lie in")


@pytest.mark.parametrize("command", ["run", "generate", "trace"])
def test_an_overflow_is_one_line_naming_the_block(invoke, write_spec, command: str) -> None:
    line = one_line_error(invoke(*args_for(command, write_spec(NO_NORM))), 1, "decoder block ",
                          "produced ")
    assert ("--dtype float64" in line) == (command != "trace")  # trace's engine is float32 only


def test_float64_runs_the_same_spec(invoke, write_spec) -> None:
    result = invoke("run", str(write_spec(NO_NORM)), "--tokens", "1,2,3", "--dtype", "float64",
                    "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert np.isfinite(json.loads(result.stdout)["logits_stats"]["max"])


def test_depth_sweep_measures_an_overflow_instead_of_failing(invoke, write_spec) -> None:
    """The sweep studies explosion: a variant that overflows is marked from that layer on."""
    result = invoke(*args_for("depth-sweep", write_spec(NO_NORM)), "--dtype", "float32",
                    "--variants", "residual-no-norm", "--depths", "1,4", "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert "Warning" not in result.stderr
    statuses = [p["status"] for p in json.loads(result.stdout)["points"]]
    assert statuses[-1] in ("overflow", "nan") and statuses != ["ok", "ok"]


@pytest.fixture(params=[np.nan, np.inf], ids=["nan", "inf"])
def bad_checkpoint(request, tmp_path: Path) -> Path:
    tensors = gpt2_tensors(np.random.default_rng(0))
    tensors["transformer.h.0.mlp.c_fc.weight"][3, 5] = request.param
    return write_model(tmp_path / "bad-gpt2", GPT2_CONFIG, tensors)


@pytest.mark.parametrize("command", ["run", "generate"])
def test_a_nonfinite_checkpoint_weight_is_bad_input(invoke, bad_checkpoint: Path,
                                                    command: str) -> None:
    one_line_error(invoke(*args_for(command, bad_checkpoint)), 2,
                   f"{bad_checkpoint}: weight decoder.blocks.0.ffn.w_up holds 1 ")


@pytest.mark.parametrize("option, value, needle", [
    ("--temperature", "5e-324", "temperature must be 0 (greedy) or at least 1e-06"),
    ("--temperature", "1e-9", "temperature must be 0 (greedy) or at least 1e-06"),
    ("--top-p", "0", "top_p must lie in (0, 1]"),
])
def test_extreme_sampling_options_are_refused(invoke, option: str, value: str, needle: str) -> None:
    one_line_error(invoke("generate", "lesson-tiny", "--tokens", "1,2", option, value), 2, needle)


@pytest.mark.parametrize("extra, needle", [
    (["--sublayer", "linear", "--weight-scale", "inf"], "--weight-scale must be finite (got inf)"),
    (["lesson-tiny", "--init-std", "1e20"], "field 'init_std': must lie in [1e-06, 1000]"),
])
def test_depth_sweep_scales_are_bounded(invoke, extra: list[str], needle: str) -> None:
    one_line_error(invoke("depth-sweep", *extra, "--depths", "1", "-q"), 2, needle)


def test_depth_sweep_measures_a_huge_finite_weight_scale(invoke) -> None:
    """x + x @ W grows ~4e10 a layer: finite at depth 1, past float32 by depth 4, marked so."""
    result = invoke("depth-sweep", "--sublayer", "linear", "--weight-scale", "1e10", "--dtype",
                    "float32", "--variants", "residual-no-norm", "--depths", "1,4", "-q", "-f", "json")
    assert result.exit_code == 0 and "Warning" not in result.stderr, result.stderr
    assert [p["status"] for p in json.loads(result.stdout)["points"]] == ["ok", "overflow"]


def test_check_cache_passes_at_large_logits(invoke, tmp_path: Path) -> None:
    import tfcli

    # lesson-tiny has no final norm and a tied head: init_std 3 gives logits ~2e4
    text = (Path(tfcli.__file__).parent / "specs" / "lesson-tiny.yaml").read_text()
    spec = tmp_path / "loud.yaml"
    spec.write_text(text.replace("init_std: 0.1", "init_std: 3"))
    result = invoke("generate", str(spec), "--tokens", "1,2,3,4,5,6,7,8", "--max-new-tokens", "8",
                    "--check-cache", "-f", "json")
    assert result.exit_code == 0, result.stderr
    check = json.loads(result.stdout)["check"]
    assert check["ok"] and check["logit_scale"] > 1e3 and check["max_abs_logit_diff"] > 1e-4
    table = invoke("generate", str(spec), "--tokens", "1,2,3", "--max-new-tokens", "2",
                   "--check-cache")
    assert table.exit_code == 0 and "eps × logit scale" in table.stdout


def test_a_real_process_prints_one_line_and_no_numpy_warning(write_spec) -> None:
    """pytest swallows warnings raised in-process; a subprocess shows what a user's terminal
    gets, including warnings from the engine's worker threads."""
    path = write_spec(NO_NORM.replace("n_layers: 4", "n_layers: 3").replace("d_model: 16", "d_model: 256")
                      .replace("d_ff: 32", "d_ff: 1024").replace("n_heads: 4", "n_heads: 8"))
    done = subprocess.run([sys.executable, "-m", "tfcli", "run", str(path), "--seq-len", "32",
                           "--batch", "4"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("tfcli: error: "), done.stderr
    assert "decoder block" in done.stderr


@pytest.fixture
def huge_embedding_checkpoint(tmp_path: Path) -> Path:
    """GPT-2's LayerNorms with biases: before issue 28.8 the overflowed norm gave its bias at
    every position, so logits were finite and the same for every token (exit 0, nothing said)."""
    tensors = gpt2_tensors(np.random.default_rng(0))
    tensors["transformer.wte.weight"] *= 1e20
    return write_model(tmp_path / "huge-gpt2", GPT2_CONFIG, tensors)


@pytest.mark.parametrize("command", ["run", "generate"])
def test_a_norm_that_overflows_is_named_not_shown_as_a_result(invoke, huge_embedding_checkpoint,
                                                             command: str) -> None:
    args = args_for(command, huge_embedding_checkpoint)
    if command == "generate":
        args[-1] = "2"  # the checkpoint holds 8 positions
    one_line_error(invoke(*args), 1, "overflowed float32: first in decoder block 0",
                   "try --dtype float64")
    result = invoke(*args, "--dtype", "float64")
    assert result.exit_code == 0 and "Warning" not in result.stderr, result.stderr
