"""The bundled mT5 / UMT5 specs in the trace: who owns the relative-position tables, and the
analytic rows against a real forward (`tfcli trace --execute`, narrowed to 2 blocks a stack)."""

from __future__ import annotations

import json

import pytest

from tfcli.analysis.trace import build_trace
from tfcli.analysis.trace_check import execute_check
from tfcli.spec_io import load_spec

SEQ2SEQ = ["mt5-small", "umt5-small"]


def _score_params(name: str) -> dict[str, int]:
    report = build_trace(load_spec(name).with_layers(2), seq_len=4)
    return {r.path: r.params for r in report.rows if r.op == "scores"}


def test_every_umt5_block_owns_its_own_table() -> None:
    table = 32 * 6  # buckets x heads
    assert _score_params("umt5-small") == {
        "encoder.0.attn": table, "encoder.1.attn": table, "decoder.0.attn": table,
        "decoder.1.attn": table, "decoder.0.cross_attn": 0, "decoder.1.cross_attn": 0}


def test_mt5_tables_stay_with_each_stacks_first_block() -> None:
    table = 32 * 6
    assert _score_params("mt5-small") == {
        "encoder.0.attn": table, "encoder.1.attn": 0, "decoder.0.attn": table,
        "decoder.1.attn": 0, "decoder.0.cross_attn": 0, "decoder.1.cross_attn": 0}


@pytest.mark.parametrize("name", SEQ2SEQ)
def test_execute_check_at_two_blocks_a_stack(name: str) -> None:
    """The bundled spec at 2 + 2 blocks, its 250k vocabulary narrowed to 512 (the tables alone
    are 0.26 G floats; test_trace.py runs one block of every bundled spec)."""
    spec = load_spec(name).replace(vocab_size=512).with_layers(2)
    report = build_trace(spec, batch=2, seq_len=6, tgt_len=4)
    check = execute_check(spec, report, seed=0)
    assert check.mismatches == () and check.ok, check.to_dict()
    assert check.matches == len(report.rows) == check.observed


# Through the CLI at full size for the per-layer tables' spec only (10 s: the 256k tables)
def test_bundled_umt5_trace_execute_at_two_layers(invoke) -> None:  # noqa: ANN001
    result = invoke("trace", "umt5-small", "--execute", "--layers", "2", "--seq-len", "8",
                    "-f", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["execute"]["ok"]
