"""The engine's block pool: every block once, errors surface, no nested deadlock, and split
matmuls and row-wise functions equal the plain ones."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tests.tolerance import assert_close
from tfcli.engine import parallel
from tfcli.engine.parallel import linear, linear_split, parallel_for, rowwise
from tfcli.engine.layout import fuse_columns


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


def test_the_caller_runs_the_blocks_while_the_pool_is_busy():
    # Every pool thread stuck elsewhere (a core another process holds): the caller takes all
    # the blocks itself instead of waiting for them. The stuck tasks give up after 10 s, so a
    # caller that waits fails this test instead of hanging it.
    release = threading.Event()
    pool = parallel._executor()
    stuck = [pool.submit(release.wait, 10.0) for _ in range(pool._max_workers)]
    runners = set()
    try:
        parallel_for(40, 10, lambda start, stop: runners.add(threading.get_ident()))
    finally:
        release.set()
        for future in stuck:
            future.result()
    assert runners == {threading.get_ident()}


def test_nested_parallel_for_runs_serially_inside_a_block():
    out = np.zeros((8, 8))

    def inner_row(row):
        def cells(c0, c1):
            out[row, c0:c1] += 1
        return cells

    parallel_for(8, 2, lambda r0, r1: [parallel_for(8, 3, inner_row(r)) for r in range(r0, r1)])
    assert (out == 1).all()


# A split product sums each element's 12 terms in whatever order the BLAS kernel picks for its
# block's shape (1 ulp apart on some kernels); then the bias adds one rounding.
PRODUCT_OPS = 12 + 1


@pytest.mark.parametrize("rows", [1, 5, 63, 64, 65, 300])
def test_linear_equals_matmul(rows):
    rng = np.random.default_rng(rows)
    x, w, b = rng.normal(size=(2, rows, 12)), rng.normal(size=(12, 7)), rng.normal(size=7)
    assert_close(linear(x, w, b), x @ w + b, ops=PRODUCT_OPS)
    assert_close(linear(x, w), x @ w, ops=PRODUCT_OPS)
    assert linear(x.astype(np.float32), w.astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize("rows", [1, 63, 64, 300])
def test_wide_linear_splits_columns_and_equals_matmul(rows):
    rng = np.random.default_rng(rows)
    x, w = rng.normal(size=(rows, 12)), rng.normal(size=(12, 2 * parallel.MIN_COL_BLOCK + 5))
    b = rng.normal(size=w.shape[1])
    assert_close(linear(x, w, b), x @ w + b, ops=PRODUCT_OPS)
    assert_close(linear(x, np.asfortranarray(w)), x @ w, ops=PRODUCT_OPS)


@pytest.mark.parametrize("fused", [True, False])
def test_linear_split_gives_each_projection(fused):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 70, 12))

    class Owner:
        pass

    owner = Owner()
    ws, bs = [rng.normal(size=(12, n)) for n in (5, 3)], [rng.normal(size=n) for n in (5, 3)]
    owner.a, owner.b = fuse_columns(ws) if fused else ws
    owner.ba, owner.bb = fuse_columns(bs) if fused else bs
    first, second = linear_split(x, owner, ("a", "b"), ("ba", "bb"))
    assert_close(first, x @ ws[0] + bs[0], ops=PRODUCT_OPS)
    assert_close(second, x @ ws[1] + bs[1], ops=PRODUCT_OPS)


@pytest.mark.parametrize("rows", [3, 64, 257])
def test_rowwise_equals_the_function_on_the_whole_array(rows):
    x = np.random.default_rng(rows).normal(size=(rows, 9))
    fn = lambda a: a - a.mean(axis=-1, keepdims=True)  # noqa: E731
    # Close, not equal: the same function on fewer rows may take another reduction loop.
    assert_close(rowwise(fn, x), fn(x), ops=9 + 1)  # a 9-term mean, a subtraction
    assert_close(rowwise(fn, x.reshape(1, rows, 9)), fn(x).reshape(1, rows, 9), ops=9 + 1)
