"""`tfcli trace` through the CLI: table, JSON and CSV agree; folding, lengths, --execute in
every format, and option errors."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tfcli.spec.counts import total_parameters
from tfcli.sources import load_spec


def _json(invoke, *args: str) -> dict:
    result = invoke("trace", *args, "-f", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_table_shows_rows_totals_and_the_convention(invoke) -> None:
    result = invoke("trace", "gpt2", "--seq-len", "16", "--layers", "2")
    assert result.exit_code == 0, result.output
    for text in ("gpt2 — forward trace, batch 1, seq_len 16", "decoder.1.ffn", "ffn_down",
                 "1×16×3072", "forward FLOPs per token", "causal masking is NOT halved"):
        assert text in result.stdout
    assert result.stderr == ""


def test_json_and_csv_carry_the_same_rows(invoke) -> None:
    data = _json(invoke, "gpt2", "--seq-len", "32", "--batch", "2")
    rows = list(csv.DictReader(io.StringIO(invoke("trace", "gpt2", "--seq-len", "32", "--batch",
                                                  "2", "-f", "csv").stdout)))
    assert len(rows) == len(data["rows"]) > 12 * 14
    for row, want in zip(rows, data["rows"]):
        assert (row["path"], row["op"], int(row["flops"])) == (want["path"], want["op"], want["flops"])
        assert row["output"] == "x".join(map(str, want["output"]))
    assert data["total_params"] == total_parameters(load_spec("gpt2"))
    assert sum(r["flops"] for r in data["rows"]) == data["total_flops"]
    assert data["flops_per_token"] == data["total_flops"] / (2 * 32)
    assert data["rows"][-1]["output"] == [2, 32, 50257]


@pytest.mark.parametrize(("depth", "first_paths"), [
    (1, ["embed", "decoder.0", "decoder.1"]),
    (2, ["embed", "decoder.0.attn", "decoder.0.ffn"]),
])
def test_depth_folds_rows_and_keeps_totals(invoke, depth: int, first_paths: list[str]) -> None:
    full = _json(invoke, "gpt2", "--seq-len", "8", "--layers", "2")
    folded = _json(invoke, "gpt2", "--seq-len", "8", "--layers", "2", "--depth", str(depth))
    assert [r["path"] for r in folded["rows"][:3]] == first_paths
    assert len(folded["rows"]) < len(full["rows"])
    for key in ("total_flops", "total_params", "total_act_bytes"):
        assert folded[key] == full[key]


def test_encoder_decoder_lengths(invoke) -> None:
    data = _json(invoke, "t5-small", "--src-len", "7", "--tgt-len", "3", "--layers", "1")
    assert (data["src_len"], data["tgt_len"]) == (7, 3)
    shapes = {(r["path"], r["op"]): r["output"] for r in data["rows"]}
    assert shapes[("decoder.0.cross_attn", "scores")] == [1, 8, 3, 7]
    assert shapes[("encoder.0.attn", "scores")] == [1, 8, 7, 7]


def test_analytic_for_a_70b_model(invoke) -> None:
    data = _json(invoke, "llama-2-70b", "--seq-len", "4096", "--depth", "1")
    assert data["seq_len"] == 4096 and data["total_params"] == 68_976_648_192
    # ~2 x params x tokens for the matmuls, plus attention: 5.6e14 at 4,096 tokens
    assert 2 * 68_976_648_192 * 4096 < data["total_flops"] < 2.2 * 68_976_648_192 * 4096


def test_execute_in_every_format(invoke) -> None:
    args = ["trace", "lesson-tiny", "--execute", "--seq-len", "6"]
    table = invoke(*args)
    assert table.exit_code == 0 and "execute check: shapes match" in table.stdout
    data = json.loads(invoke(*args, "-f", "json").stdout)
    assert data["execute"]["ok"] and data["execute"]["mismatches"] == []
    as_csv = invoke(*args, "-f", "csv")
    assert as_csv.exit_code == 0
    assert list(csv.reader(io.StringIO(as_csv.stdout)))[0][:2] == ["path", "op"]
    assert "execute check: shapes match" in as_csv.stderr  # CSV rows have no room for it


def test_execute_truncates_a_big_spec_to_the_layers_asked(invoke) -> None:
    result = invoke("trace", "llama-2-7b", "--execute", "--seq-len", "4", "--layers", "1")
    assert result.exit_code == 0, result.output
    assert "shapes match" in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["gpt2", "--src-len", "5"], "--src-len/--tgt-len apply to encoder-decoder specs"),
    (["gpt2", "--dtype", "float8"], "--dtype: 'float8' is not one of 'float32', 'bfloat16', 'float16'"),
    (["gpt2", "--seq-len", "2000"], "exceeds max_seq_len 1024"),
    (["gtp2"], "did you mean 'gpt2'?"),
])
def test_errors(invoke, args: list[str], message: str) -> None:
    result = invoke("trace", *args)
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.output
    assert result.stdout == ""
