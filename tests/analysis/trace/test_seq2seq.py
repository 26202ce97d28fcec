"""The bundled mT5 / UMT5 / BART specs in the trace: who owns the relative-position tables and
each stack's embedding tables, and the analytic rows against a real forward (`tfcli trace
--execute`, 2 blocks a stack)."""

from __future__ import annotations

import json

import pytest

from tfcli.analysis.trace.build import build_trace
from tfcli.analysis.trace.check import execute_check
from tfcli.sources import load_spec

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


def test_each_bart_stack_owns_its_own_position_table_and_norm() -> None:
    report = build_trace(load_spec("bart-base").with_layers(2), seq_len=4)
    owned = {(r.path, r.op): (r.params, r.weights) for r in report.rows if r.path == "embed"}
    rows = [r for r in report.rows if r.path == "embed"]
    assert [(r.op, r.params, r.weights) for r in rows] == [
        ("token_embedding", 50265 * 768, ("token_embedding",)),
        ("position_embedding", 1026 * 768, ("encoder.position_embedding",)),
        ("embedding_norm", 2 * 768, ("encoder.embedding_norm.scale", "encoder.embedding_norm.bias")),
        ("token_embedding", 0, ()),
        ("position_embedding", 1026 * 768, ("decoder.position_embedding",)),
        ("embedding_norm", 2 * 768, ("decoder.embedding_norm.scale", "decoder.embedding_norm.bias")),
    ], owned
    (logits,) = [r for r in report.rows if r.op == "logits"]
    assert (logits.params, logits.weights) == (0, ("final_logits_bias",))  # tied head, buffer


# Through the CLI at full size: UMT5 (10 s: the 256k tables) and BART-base
@pytest.mark.parametrize("name", ["umt5-small", "bart-base"])
def test_bundled_trace_execute_at_two_layers(name: str, invoke) -> None:  # noqa: ANN001
    result = invoke("trace", name, "--execute", "--layers", "2", "--seq-len", "8", "-f", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["execute"]["ok"]
