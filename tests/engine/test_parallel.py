"""The engine's block pool: every block once, errors surface, no nested deadlock, and a
row-split matmul equals the plain one."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tfcli.engine import parallel
from tfcli.engine.parallel import linear, parallel_for


@pytest.fixture(autouse=True)
def two_workers(monkeypatch):
    monkeypatch.setattr(parallel, "WORKERS", 2)  # exercise the pool even on a 1-core machine


def test_every_block_runs_once():
    seen = []
    lock = threading.Lock()

    def body(start, stop):
        with lock:
            seen.append((start, stop))

    parallel_for(103, 10, body)
    assert sorted(seen) == [(s, min(s + 10, 103)) for s in range(0, 103, 10)]


def test_a_failing_block_raises_in_the_caller():
    def body(start, stop):
        if start == 20:
            raise ValueError("block 20")

    with pytest.raises(ValueError, match="block 20"):
        parallel_for(50, 10, body)


def test_nested_parallel_for_runs_serially_inside_a_block():
    out = np.zeros((8, 8))

    def inner_row(row):
        def cells(c0, c1):
            out[row, c0:c1] += 1
        return cells

    parallel_for(8, 2, lambda r0, r1: [parallel_for(8, 3, inner_row(r)) for r in range(r0, r1)])
    assert (out == 1).all()


@pytest.mark.parametrize("rows", [1, 5, 63, 64, 65, 300])
def test_linear_equals_matmul(rows):
    rng = np.random.default_rng(rows)
    x, w, b = rng.normal(size=(2, rows, 12)), rng.normal(size=(12, 7)), rng.normal(size=7)
    np.testing.assert_allclose(linear(x, w, b), x @ w + b, rtol=1e-13)
    np.testing.assert_allclose(linear(x, w), x @ w, rtol=1e-13)
    assert linear(x.astype(np.float32), w.astype(np.float32)).dtype == np.float32
