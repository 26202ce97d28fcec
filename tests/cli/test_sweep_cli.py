"""Sweeps on the command line: `--batch 1,8 --seq-len 128,1024` gives one table (a row per
point, each the command's own one-point figures), a chart, `--plot FILE.png`; bad lists exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.guarded import run_in_memory
from tests.render.markdown_tables import parse_csv, parse_markdown

PERF = ("perf", "gpt2", "--gpu", "h100")


def _json(*args: str) -> dict:
    code, out, err = run_in_memory(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_a_perf_sweep_row_is_perf_at_that_point() -> None:
    sweep = _json(*PERF, "--batch", "1,8", "--seq-len", "128,1024")
    assert [(p["batch"], p["seq_len"]) for p in sweep["points"]] == [(1, 128), (1, 1024), (8, 128), (8, 1024)]
    for point in sweep["points"]:
        alone = _json(*PERF, "--batch", str(point["batch"]), "--seq-len", str(point["seq_len"]))
        assert point["ttft_seconds"] == alone["ttft_seconds"]
        assert point["decode_tokens_per_s"] == alone["decode"]["tokens_per_s"]
        assert point["result"] == alone


def test_one_value_each_is_the_one_point_report() -> None:
    assert "prefill" in _json(*PERF, "--batch", "4", "--seq-len", "256")


def test_the_table_has_a_row_per_point_and_a_chart() -> None:
    code, out, _ = run_in_memory(*PERF, "--batch", "1,8,32", "--seq-len", "128,1024")
    assert code == 0 and "6 points" in out
    assert "time to first token vs seq_len" in out and "o batch 1   x batch 8   + batch 32" in out


def test_csv_and_markdown_have_the_same_cells() -> None:
    args = (*PERF, "--batch", "1,2", "--seq-len", "64")
    _, csv_out, _ = run_in_memory(*args, "-f", "csv")
    _, md_out, _ = run_in_memory(*args, "-f", "markdown")
    header, rows = parse_csv(csv_out)
    [table], _ = parse_markdown(md_out)
    assert header[:3] == ["batch", "seq_len", "ttft_seconds"] and len(rows) == 2
    assert (table.header, table.rows) == (header, rows)


def test_plot_writes_a_png(tmp_path: Path) -> None:
    target = tmp_path / "perf.png"
    code, _, err = run_in_memory(*PERF, "--seq-len", "128,1024", "--plot", str(target))
    assert code == 0, err
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_encoder_sweep_has_no_decode_figures() -> None:
    sweep = _json("perf", "bert-base", "--gpu", "h100", "--batch", "1,2")
    assert all(p["decode_tokens_per_s"] is None and p["ttft_seconds"] > 0 for p in sweep["points"])


@pytest.mark.parametrize("args, says", [
    (("--batch", "0"), "--batch values must be at least 1"),
    (("--batch", "1,0"), "--batch values must be at least 1"),
    (("--seq-len", "128,junk"), "--seq-len takes comma-separated integers"),
    (("--batch", ""), "--batch is empty"),
    (("--batch", "1,1"), "--batch repeats 1"),
    (("--batch", ",".join(map(str, range(1, 66)))), "at most 64 points"),
    (("--batch", "1,2,3,4,5,6,7,8,9", "--seq-len", "1,2,3,4,5,6,7,8"), "9 x 8 = 72 points"),
    (("--plot", "x.png"), "--plot charts a sweep"),
    (("--seq-len", "64,128", "--plot", "sweep.jpg"), "--plot"),
])
def test_a_bad_sweep_is_one_line_and_exit_2(args: tuple[str, ...], says: str) -> None:
    code, out, err = run_in_memory(*PERF, *args)
    assert code == 2 and out == "" and says in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


MEMORY = ("memory", "gpt2")


def test_a_memory_sweep_row_is_memory_at_that_point() -> None:
    sweep = _json(*MEMORY, "--batch", "1,4", "--seq-len", "128,512", "--gpu", "h100")
    assert [f["key"] for f in sweep["figures"]] == [
        "total_bytes", "fits", "headroom_bytes", "weights_bytes", "kv_cache_bytes", "activations_bytes"]
    for point in sweep["points"]:
        alone = _json(*MEMORY, "--batch", str(point["batch"]), "--seq-len", str(point["seq_len"]),
                      "--gpu", "h100")
        assert point["total_bytes"] == alone["total_bytes"] and point["result"] == alone
        parts = {p["name"]: p["bytes"] for p in alone["parts"]}
        assert point["kv_cache_bytes"] == parts["KV cache"]
        assert point["fits"] == alone["gpu"]["fits"] == (point["headroom_bytes"] >= 0)
        assert point["headroom_bytes"] == alone["gpu"]["usable_bytes"] - alone["total_bytes"]


def test_the_kv_cache_grows_exactly_with_batch_and_seq_len() -> None:
    sweep = _json(*MEMORY, "--batch", "1,4", "--seq-len", "128,512")
    kv = {(p["batch"], p["seq_len"]): p["kv_cache_bytes"] for p in sweep["points"]}
    assert kv[(4, 512)] == 4 * kv[(1, 512)] == 16 * kv[(1, 128)]
    assert kv[(1, 128)] == 128 * 2 * 12 * 768 * 2  # K and V, 12 layers, d_model 768, bfloat16


def test_a_training_sweep_shows_the_training_parts() -> None:
    sweep = _json(*MEMORY, "--train", "--seq-len", "64,128")
    keys = [f["key"] for f in sweep["figures"]]
    assert "optimizer_bytes" in keys and "kv_cache_bytes" not in keys
    assert len({p["optimizer_bytes"] for p in sweep["points"]}) == 1  # the state has no seq_len


def test_fit_and_a_sweep_are_refused_together() -> None:
    code, out, err = run_in_memory(*MEMORY, "--batch", "1,2", "--gpu", "h100", "--fit")
    assert code == 2 and out == "" and "--fit searches the batch and seq_len itself" in err


def test_a_memory_sweep_plots(tmp_path: Path) -> None:
    target = tmp_path / "memory.png"
    code, out, err = run_in_memory(*MEMORY, "--batch", "1,8", "--plot", str(target))
    assert code == 0, err
    assert "total vs batch" in out and target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_narrow_terminal_keeps_the_first_figures_whole(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_in_memory(*MEMORY, "--train", "--batch", "1,8", "--gpu", "h100")
    header = next(line for line in out.splitlines() if line.startswith("┃"))
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 80
    assert "total" in header and "fits" in header and "headroom" in header
    assert "left out to fit 80 columns" in out
