"""The trace renderers format what the report holds: rows, totals, per-token FLOPs, convention."""

from __future__ import annotations

from rich.console import Console, RenderableType

from tfcli.analysis.trace.build import build_trace
from tfcli.analysis.trace.check import ExecuteCheck, Mismatch
from tfcli.render.trace import render_execute_check, render_trace
from tfcli.sources import load_spec


def _text(renderable: RenderableType) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_render_trace_shows_rows_totals_and_convention() -> None:
    report = build_trace(load_spec("gpt2").with_layers(2), seq_len=16)
    text = _text(render_trace(report, 3))
    assert "q_proj" in text and "1×12×16×64" in text
    assert f"{report.total_params:,}" in text and "total" in text
    assert "forward FLOPs per token" in text and "GFLOP" in text
    assert "causal masking is NOT halved" in text


def test_render_trace_folds_to_the_report_depth() -> None:
    report = build_trace(load_spec("gpt2").with_layers(2), seq_len=16).at_depth(1)
    text = _text(render_trace(report))
    assert "decoder.1" in text and "14 ops" in text and "q_proj" not in text


def test_render_execute_check() -> None:
    ok = ExecuteCheck("gpt2", 2, 12, 0, 32, 32, 32, ())
    assert "shapes match" in _text(render_execute_check(ok))
    assert "2 of 12 blocks" in _text(render_execute_check(ok))
    wrong = Mismatch("shape", 5, "decoder.0.attn", "q_proj", (1, 12, 4, 64), (1, 4, 768))
    bad = ExecuteCheck("gpt2", 2, 12, 0, 32, 32, 31, (wrong,))
    text = _text(render_execute_check(bad))
    assert "MISMATCH" in text and "1×12×4×64" in text and "1×4×768" in text
