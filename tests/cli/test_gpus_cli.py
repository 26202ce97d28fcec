"""`tfcli gpus` through the CLI: table with sources, JSON and CSV with the same entries, and the
measured cpu row (measuring replaced by given figures: no timing in tests)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tfcli.analysis.gpus import catalog as gpus
from tfcli.analysis.gpus.catalog import CATALOG


def test_table_lists_every_entry_and_its_source(invoke) -> None:
    result = invoke("gpus")
    assert result.exit_code == 0, result.output
    for entry in CATALOG:
        assert entry.name in result.stdout
    for text in ("dense peak TFLOP/s (not 2:4 sparse)", "1,978.9", "sources:",
                 "https://www.nvidia.com/en-us/data-center/h200/", "no bf16"):
        assert text in result.stdout


def test_json_and_csv_carry_the_same_entries(invoke) -> None:
    data = json.loads(invoke("gpus", "-f", "json").stdout)["accelerators"]
    rows = list(csv.DictReader(io.StringIO(invoke("gpus", "-f", "csv").stdout)))
    assert [d["name"] for d in data] == [r["name"] for r in rows] == [e.name for e in CATALOG]
    a100 = next(d for d in data if d["name"] == "A100 SXM 80GB")
    assert a100["fp8_tflops"] is None and a100["bandwidth_bytes_per_s"] == pytest.approx(2.039e12)
    assert rows[0]["aliases"] == ";".join(CATALOG[0].aliases)


def test_measure_cpu_adds_the_measured_row(invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    gpus.cpu_entry.cache_clear()
    monkeypatch.setattr(gpus, "measure_gemm_flops", lambda: 50e9)
    monkeypatch.setattr(gpus, "measure_read_bandwidth", lambda **_: 10e9)
    try:
        data = json.loads(invoke("gpus", "--measure-cpu", "-f", "json").stdout)["accelerators"]
        table = invoke("gpus", "--measure-cpu").stdout
    finally:
        gpus.cpu_entry.cache_clear()
    assert data[-1]["name"] == "cpu" and data[-1]["fp32_tflops"] == pytest.approx(0.05)
    assert "measured in this process" in data[-1]["note"] and "cpu: measured" in table
