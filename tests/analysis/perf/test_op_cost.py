"""The accelerator's fixed cost per op in `tfcli perf`: the cpu entry measures tfcli's engine's
(Python and NumPy dispatch between ops, which a decode step of gpt2 pays 172 times), catalog
entries have none, and the estimates add it once per op the trace runs. Arithmetic on a made-up
accelerator, as test_perf.py; the one measurement is bounded, not timed against anything."""

from __future__ import annotations

import dataclasses
import io

import pytest

from tfcli.analysis.gpus import catalog as gpus
from tfcli.analysis.perf import estimate as perf
from tfcli.analysis.gpus.catalog import CATALOG, Accelerator
from tfcli.analysis.perf.estimate import PerfOptions, build_perf_estimate
from tfcli.analysis.trace.build import build_trace
from rich.console import Console

from tfcli.render.perf import render_perf
from tfcli.sources import load_spec

UNIT = Accelerator("unit", (), "test", 2**34, 1.0, 1.0, 1.0, 1.0, 1e12, "https://example.org")
COSTLY = dataclasses.replace(UNIT, name="costly", op_seconds=1e-5)  # 10 us per op


def _estimates(monkeypatch: pytest.MonkeyPatch, spec_name: str = "gpt2", layers: int = 2,
               **options: object) -> tuple[perf.PerfEstimate, perf.PerfEstimate]:
    """The same point on UNIT and on COSTLY (UNIT plus 10 us per op)."""
    spec = load_spec(spec_name).with_layers(layers)
    found = {"unit": UNIT, "costly": COSTLY}
    monkeypatch.setattr(perf, "find_gpu", lambda name, width=None: found[name])
    return tuple(build_perf_estimate(spec, PerfOptions(gpu=g, **options))  # type: ignore[return-value]
                 for g in ("unit", "costly"))


def _text(estimate: perf.PerfEstimate) -> str:
    console = Console(file=io.StringIO(), width=200)
    console.print(render_perf(estimate))
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_the_catalog_has_no_cost_per_op() -> None:
    assert {entry.op_seconds for entry in CATALOG} == {0.0}


@pytest.mark.parametrize("spec_name", ["gpt2", "llama-3.2-1b", "mixtral-8x7b"])
def test_prefill_adds_the_cost_once_per_op_of_the_trace(monkeypatch: pytest.MonkeyPatch,
                                                        spec_name: str) -> None:
    plain, costly = _estimates(monkeypatch, spec_name, seq_len=64)
    spec = load_spec(spec_name).with_layers(2)
    ops = sum(r.repeat for r in build_trace(spec, seq_len=64, dtype="bfloat16").rows)
    assert costly.prefill.op_overhead_seconds == pytest.approx(ops * 1e-5)
    assert plain.prefill.op_overhead_seconds == 0
    assert costly.prefill.roofline_seconds == pytest.approx(plain.prefill.roofline_seconds
                                                            + ops * 1e-5)
    assert costly.prefill.compute_seconds == plain.prefill.compute_seconds  # the MFU's figure


def test_a_row_standing_for_repeated_blocks_pays_for_each() -> None:
    row = perf.TraceRow("decoder.1-3.ffn", "ffn_up", ((8, 16),), (8, 16), 0, 0, 0, repeat=3)
    assert perf._op_time(row, 0, COSTLY, 1e12).seconds == pytest.approx(3e-5)
    assert perf._op_count([row, dataclasses.replace(row, repeat=1)]) == 4


def test_a_decode_step_adds_the_cost_of_its_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    plain, costly = _estimates(monkeypatch, batch=2, seq_len=100)
    ops = len(build_trace(load_spec("gpt2").with_layers(2), batch=2, seq_len=1).rows)
    assert ops == 2 * 14 + 4  # per block 2 norms, q/k/v, scores ... 2 adds; embeddings, norm, head
    d, c = plain.decode, costly.decode
    assert (d.memory_seconds, d.compute_seconds) == (c.memory_seconds, c.compute_seconds)
    assert c.op_overhead_seconds == pytest.approx(ops * 1e-5)
    assert c.seconds == pytest.approx(max(c.memory_seconds, c.compute_seconds) + ops * 1e-5)
    assert c.tokens_per_s == pytest.approx(2 / c.seconds) and c.tokens_per_s < d.tokens_per_s


def test_json_csv_and_table_show_the_cost_only_where_there_is_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plain, costly = _estimates(monkeypatch, seq_len=32)
    assert costly.to_dict()["decode"]["op_overhead_seconds"] == pytest.approx(
        costly.decode.op_overhead_seconds)
    metrics = dict((m, v) for m, v, _ in costly.csv_rows()[1])
    assert metrics["decode step (fixed cost per op)"] == costly.decode.op_overhead_seconds
    with_cost = _text(costly)
    without = _text(plain)
    assert "fixed cost of its ops" in with_cost and "+ 10 us per op" in with_cost
    assert "fixed cost" not in without and "per op," not in without


def test_the_cpu_entry_measures_the_engines_cost_per_op(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus.cpu_entry.cache_clear()
    monkeypatch.setattr(gpus, "measure_gemm_flops", lambda: 80e9)
    monkeypatch.setattr(gpus, "measure_read_bandwidth", lambda **_: 12e9)
    monkeypatch.setattr(gpus, "measure_op_seconds", lambda: 7.5e-6)
    try:
        cpu = gpus.find_gpu("cpu")
    finally:
        gpus.cpu_entry.cache_clear()
    assert cpu.op_seconds == 7.5e-6 and "engine cost per op 7.5 us" in cpu.note
    assert cpu.to_dict()["op_seconds"] == 7.5e-6


def test_measuring_the_cost_per_op_runs_a_tiny_model() -> None:
    # a few decode steps of a width-32 model: microseconds to a millisecond per op on any host
    assert 1e-8 < gpus.measure_op_seconds(steps=8) < 1e-3
