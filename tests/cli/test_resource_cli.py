"""Resource guards through the CLI: absurd sizes are refused in one line, exit 2, before any
work (each test has a hang guard; none times anything), and a real RLIMIT_AS is honoured."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tfcli.analysis.allocation import MemoryLimit
from tfcli.spec.counts import total_parameters
from tfcli.sources import load_spec

GB = 10**9


@pytest.fixture
def limit_10gb(monkeypatch) -> None:
    """The same memory limit on every host, so refusals and passes do not depend on it."""
    monkeypatch.setattr("tfcli.analysis.allocation.memory_limit",
                        lambda sources=None: MemoryLimit(10 * GB, "cgroup memory.max"))


def _refused(result, *needles: str) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    line = result.stderr.strip()
    assert line.startswith("tfcli: error: ") and "\n" not in line, result.stderr
    for needle in needles:
        assert needle in line, line
    return line


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("args", "needles"), [
    (["run", "gpt2", "--seq-len", "1000000000"], ["--seq-len 1,000,000,000 exceeds max_seq_len 1,024"]),
    (["run", "gpt2", "--batch", "64", "--seq-len", "1024"],
     ["needs about", "logits 12.3 GiB", "over the 9.31 GiB", "(cgroup memory.max)",
      "--batch, --seq-len or --layers"]),
    (["run", "gpt2", "--batch", "1000000000000"], ["needs about"]),
    (["generate", "llama-2-7b", "--tokens", "1", "--max-new-tokens", "4000", "--check-cache"],
     ["KV cache", "weights 25.1 GiB", "--max-new-tokens"]),
    (["depth-sweep", "gpt2", "--depths", "100000000"], ["--depths must be integers from 1 to 10,000"]),
    (["depth-sweep", "--sublayer", "linear", "--d-model", "1000000", "--depths", "1"],
     ["needs about", "weights"]),
    (["depth-sweep", "gpt2", "--seq-len", "1000000"], ["needs about", "bias and Gram"]),
    (["depth-sweep", "gpt2", "--directions", "1000000"], ["6,000,003 sequences of 16"]),
    (["depth-sweep", "gpt2", "--depths", "10000"], ["FLOPs", "over the limit of 2e+13"]),
    (["trace", "llama-2-7b", "--seq-len", str(2**41)], ["at most 2^40"]),
])
def test_absurd_sizes_are_one_line_exit_2(invoke, limit_10gb, args: list[str],
                                          needles: list[str]) -> None:
    _refused(invoke(*args), *needles)


@pytest.mark.timeout(60)
def test_trace_of_a_billion_layers_answers(invoke) -> None:
    result = invoke("trace", "llama-2-7b", "--layers", "1000000000", "--depth", "1", "-f", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["total_params"] == total_parameters(load_spec("llama-2-7b").with_layers(10**9))
    assert [r["path"] for r in data["rows"]] == [
        "embed", "decoder.0", "decoder.1-999999999", "decoder.final_norm", "head"]
    assert data["rows"][2]["repeat"] == 10**9 - 1


@pytest.mark.timeout(120)
def test_trace_execute_of_a_billion_layers_runs_two_blocks(invoke, limit_10gb) -> None:
    result = invoke("trace", "gpt2", "--layers", "1000000000", "--seq-len", "4", "--execute",
                    "-f", "json")
    assert result.exit_code == 0, result.output
    check = json.loads(result.stdout)["execute"]
    assert check["ok"] and check["layers"] == 2 and check["truncated"]


_UNDER_RLIMIT = textwrap.dedent("""
    import resource, sys
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.argv = ["tfcli", *sys.argv[2:]]
    from tfcli.cli.app import main
    main()
""")


def _under_rlimit_as(limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _UNDER_RLIMIT, str(limit), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.timeout(150)
def test_a_real_rlimit_as_refuses_in_one_line_not_a_memory_error() -> None:
    from tfcli.analysis.allocation import memory_limit

    done = _under_rlimit_as(2 * 2**30, "run", "gpt2", "--batch", "8", "--seq-len", "1024")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith("tfcli: error: run of gpt2") and "needs about" in line
    if memory_limit().bytes > 2 * 2**30:  # otherwise this host's own limit binds first
        assert "(RLIMIT_AS soft limit)" in line


@pytest.mark.timeout(150)
def test_a_run_that_fits_under_rlimit_as_runs() -> None:
    done = _under_rlimit_as(2 * 2**30, "run", "lesson-tiny", "--seq-len", "8", "-f", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["logits_shape"] == [1, 8, load_spec("lesson-tiny").vocab_size]
