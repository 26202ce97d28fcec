"""`tfcli diff A B` through the CLI: every format, the totals `tfcli params` prints, bad input."""

from __future__ import annotations

import json

import pytest

from tests.cli.guarded import run_in_memory
from tests.render.markdown_tables import parse_csv


def _json(*args: str) -> dict:
    code, out, err = run_in_memory(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_the_totals_are_those_tfcli_params_prints() -> None:
    diff = _json("diff", "llama-2-7b", "mistral-7b")
    total = next(r for r in diff["rows"] if r["section"] == "totals" and r["name"] == "total")
    assert total["a"] == _json("params", "llama-2-7b")["total"]
    assert total["b"] == _json("params", "mistral-7b")["total"]
    assert total["difference"] == total["b"] - total["a"]


def test_json_names_both_sides_and_the_lengths() -> None:
    diff = _json("diff", "gpt2", "gpt2-medium", "--seq-len", "64", "--kv-dtype", "bfloat16")
    assert (diff["a"], diff["b"], diff["seq_len"], diff["kv_dtype"]) == ("gpt2", "gpt2-medium", 64, "bfloat16")


def test_csv_has_a_row_per_figure() -> None:
    code, out, _ = run_in_memory("diff", "gpt2", "bert-base", "-f", "csv")
    header, rows = parse_csv(out)
    assert code == 0 and header[:4] == ["section", "name", "a", "b"]
    pooler = next(r for r in rows if r[1] == "pooler")
    assert pooler[2] == "" and pooler[6] == "B"


def test_the_table_shows_each_section_and_one_sided_components() -> None:
    code, out, _ = run_in_memory("diff", "gpt2", "bert-base")
    assert code == 0
    for text in ("gpt2 (A) vs bert-base (B)", "architecture", "parameters", "totals",
                 "FLOPs per token", "KV cache", "weights memory", "only B", "only A"):
        assert text in out


def test_the_table_fits_80_columns(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_in_memory("diff", "llama-2-7b", "mistral-7b")
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 80
    assert "0.250×" in out


@pytest.mark.parametrize("args, says", [
    (("diff", "gpt2", "no-such-spec"), "no-such-spec: no such file"),
    (("diff", "gpt2", "gpt2-medium", "--seq-len", "2048"), "--seq-len 2048 exceeds max_seq_len 1024"),
    (("diff", "gpt2", "gpt2-medium", "--kv-dtype", "fp7"), "--kv-dtype"),
    (("diff", "gpt2"), "B"),
])
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], says: str) -> None:
    code, out, err = run_in_memory(*args)
    assert code == 2 and out == "" and says in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("side", ["A", "B"])
def test_a_hostile_spec_on_either_side_is_one_line(side: str, tmp_path, monkeypatch) -> None:
    from tests.cli.test_hostile_args import BAD, SPEC_VALUES, _spec_fixtures, check, invoke

    monkeypatch.chdir(tmp_path)
    _spec_fixtures(tmp_path)
    for value in SPEC_VALUES:
        pair = (value, "gpt2") if side == "A" else ("gpt2", value)
        assert check(invoke("diff", *pair), BAD).stdout == ""
