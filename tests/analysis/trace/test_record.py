"""The trace is the engine's forward pass on shapes: its rows are the engine's op reports, a block
replayed from one like it equals that block run, and every op the engine reports has a FLOP rule."""

from __future__ import annotations

import pytest

from tests.checkpoints.test_weight_names import CASES, IDS
from tfcli.analysis.trace import build
from tfcli.analysis.trace.build import build_trace
from tfcli.analysis.trace.flops import _RULES
from tfcli.spec.counts import total_parameters
from tfcli.spec.model import Spec
from tfcli.sources import load_spec


def _every_block_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build._Recorder, "replay", lambda self, path, view, block: False)


@pytest.mark.parametrize(("name", "spec"), CASES, ids=IDS)
def test_replayed_blocks_equal_blocks_run(name: str, spec: Spec,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # shared_layers, T5's stack table, UMT5's per-block tables, ModernBERT's block 0, dense and
    # MoE blocks, local and global layers: each kind of block is among the cases
    spec = spec.replace(n_layers=5) if spec.family != "encoder-decoder" else spec
    replayed = build_trace(spec, seq_len=6, batch=2).rows
    _every_block_run(monkeypatch)
    run = build_trace(spec, seq_len=6, batch=2).rows
    assert replayed == run


def test_a_deep_stack_runs_one_block_of_each_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_spec("llama-2-70b")
    ran: list[str] = []
    original = build._Recorder.replay

    def counting(self: build._Recorder, path: str, view: object, block: object) -> bool:
        replayed = original(self, path, view, block)
        if not replayed:
            ran.append(path)
        return replayed

    monkeypatch.setattr(build._Recorder, "replay", counting)
    report = build_trace(spec, seq_len=16)
    assert ran == ["decoder.0"]
    assert report.total_params == total_parameters(spec)
    assert len([r for r in report.rows if r.op == "q_proj"]) == 80


def test_every_op_the_engine_reports_has_a_flop_rule() -> None:
    ops = {r.op for _, spec in CASES for r in build_trace(spec, seq_len=4).rows}
    assert ops <= set(_RULES)


def test_a_row_lists_the_weights_it_owns_and_a_tied_head_owns_none() -> None:
    report = build_trace(load_spec("gpt2"), seq_len=4)
    logits = next(r for r in report.rows if r.op == "logits")
    assert logits.weights == () and logits.params == 0  # the token table is the embedding's
    assert logits.flops == 2 * 4 * 768 * 50257  # but the head still multiplies by it
    q = next(r for r in report.rows if r.op == "q_proj")
    assert q.weights == ("decoder.blocks.0.attn.wq", "decoder.blocks.0.attn.bq")
