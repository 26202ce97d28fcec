"""`tfcli perf` and the FLOP-convention options of `tfcli trace` through the CLI: the table
states its formulas, JSON and CSV carry the same figures, bad input is one line and exit 2."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tests.cli.guarded import run_in_memory


def _json(*args: str) -> dict:
    code, out, err = run_in_memory("perf", *args, "-f", "json")
    assert code == 0, err
    return json.loads(out)


def test_table_states_each_figure_and_how(invoke) -> None:
    result = invoke("perf", "gpt2", "--gpu", "h100", "--seq-len", "256", "--train",
                    "--train-tokens", "1e9", "--layers", "2")
    assert result.exit_code == 0, result.output
    for text in ("gpt2 on H100 SXM — batch 1, seq_len 256, bfloat16", "peak 989.4 TFLOP/s",
                 "compute-bound", "FLOPs / (989.4 TFLOP/s x MFU 0.5)", "per-op roofline",
                 "time to first token", "decode tokens/s", "weights", "KV cache",
                 "training FLOPs / token", "x 3", "6N", "GPU-hours", "FLOPs counted: FLOPs: a "
                 "multiply-add is 2"):
        assert text in result.stdout, text


def test_json_and_csv_carry_the_same_figures() -> None:
    data = _json("gpt2", "--gpu", "a100-80gb", "--layers", "2", "--seq-len", "128", "--batch", "4")
    code, out, _ = run_in_memory("perf", "gpt2", "--gpu", "a100-80gb", "--layers", "2",
                                 "--seq-len", "128", "--batch", "4", "-f", "csv")
    rows = {r["metric"]: r["value"] for r in csv.DictReader(io.StringIO(out))}
    assert data["gpu"]["name"] == "A100 SXM 80GB" and data["batch"] == 4
    assert float(rows["decode tokens/s"]) == pytest.approx(data["decode"]["tokens_per_s"])
    assert float(rows["time to first token"]) == pytest.approx(data["ttft_seconds"])
    assert data["training"] is None and data["convention"]["macs"] is False


def test_conventions_change_the_counted_flops() -> None:
    base = _json("gpt2", "--gpu", "h100", "--layers", "2", "--seq-len", "64")
    macs = _json("gpt2", "--gpu", "h100", "--layers", "2", "--seq-len", "64", "--macs",
                 "--matmuls-only")
    assert macs["prefill"]["flops"] < base["prefill"]["flops"] / 2
    assert "MACs" in macs["convention"]["text"]


def test_trace_takes_the_conventions_and_says_so() -> None:
    code, out, _ = run_in_memory("trace", "gpt2", "--layers", "2", "--seq-len", "32",
                                 "--causal-half", "-f", "json")
    half = json.loads(out)
    full = json.loads(run_in_memory("trace", "gpt2", "--layers", "2", "--seq-len", "32",
                                    "-f", "json")[1])
    pairs = sum(r["flops"] for r in full["rows"] if r["op"] in ("scores", "weighted_sum"))
    assert full["total_flops"] - half["total_flops"] == pairs // 2
    assert half["convention"].startswith("Recounted: ")
    assert "causal masking is NOT halved" in full["convention"]  # the default, as before


@pytest.mark.parametrize(("args", "message"), [
    (("--gpu", "h10"), "unknown accelerator 'h10'; did you mean 'h100'?"),
    (("--gpu", "h100", "--mfu", "0"), "--mfu must be in (0, 1]"),
    (("--gpu", "h100", "--mfu", "1.5"), "--mfu must be in (0, 1]"),
    (("--gpu", "a100", "--dtype", "float8"), "--dtype float8: A100 SXM 80GB has no float8"),
    (("--gpu", "h100", "--train", "--train-tokens", "-5"), "--train-tokens must be a positive count"),
])
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    code, out, err = run_in_memory("perf", "gpt2", "--layers", "1", *args)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_gpu_option_is_required() -> None:
    code, _, err = run_in_memory("perf", "gpt2")
    assert code == 2 and "--gpu" in err and len(err.strip().splitlines()) == 1
