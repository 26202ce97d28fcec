"""Block parallelism on a small thread pool: how the engine uses more than one core for
matrix-matrix work (decode steps instead give OpenBLAS the idle cores, see blas.idle_cores).

NumPy runs elementwise work on one thread, and OpenBLAS's own threads busy-wait for each
other: on a machine whose other cores are busy, one descheduled BLAS thread stalled whole
forward passes 10x in our measurements. Here the work is instead cut into independent blocks
(columns of a projection's weights, rows of a norm, query blocks of attention, hidden units of
the FFN in ffn.py) that a pool of one thread per core takes from a shared queue, each running
BLAS single-threaded. NumPy drops the GIL inside matmuls and large ufunc loops, so the blocks
run truly in parallel; a thread that gets descheduled simply takes fewer blocks, and a waiting
thread sleeps instead of spinning.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.blas import blas_threads
from tfcli.engine.layout import fused_projection
from tfcli.engine.shaped import is_shaped


_state = threading.local()  # .inside: this thread is already running a parallel block
_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def n_workers() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


WORKERS = n_workers()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="tfcli-engine")
        return _pool


def _run_block(body: Callable[[int, int], None], start: int, stop: int) -> None:
    _state.inside = True
    try:
        body(start, stop)
    finally:
        _state.inside = False


class _Blocks:
    """The blocks of one parallel_for, each taken once by whichever thread asks first: the
    caller and the pool's helpers. A helper that starts after the caller took the last block
    finds none and returns, so the caller never waits for a thread that was not scheduled."""

    def __init__(self, n_items: int, block: int, body: Callable[[int, int], None]) -> None:
        self.n_items, self.block, self.body = n_items, block, body
        self.starts = iter(range(0, n_items, block))
        self.total = len(range(0, n_items, block))
        self.done = 0
        self.error: BaseException | None = None
        self.lock = threading.Condition()

    def take(self) -> None:
        """Run blocks until none is left (a block's exception is kept for the caller)."""
        while True:
            with self.lock:
                start = next(self.starts, None)
            if start is None:
                return
            try:
                _run_block(self.body, start, min(start + self.block, self.n_items))
            except BaseException as error:  # noqa: BLE001  (re-raised in the caller)
                self.error = self.error or error
            with self.lock:
                self.done += 1
                if self.done == self.total:
                    self.lock.notify_all()

    def wait(self) -> None:
        """Until every block has run (those helpers took included); re-raise the first error."""
        with self.lock:
            self.lock.wait_for(lambda: self.done == self.total)
        if self.error is not None:
            raise self.error


def parallel_for(n_items: int, block: int, body: Callable[[int, int], None]) -> None:
    """Call body(start, stop) for consecutive blocks of [0, n_items), in parallel when it helps.

    The blocks must write disjoint outputs. Runs serially with one worker, one block, or when
    called from inside another parallel block (no nesting, so no pool deadlock). The calling
    thread takes blocks too instead of sleeping until the pool's threads finish: on a machine
    whose other processes keep the cores busy a helper may not run for milliseconds (GPT-2,
    N=128, load average 5 on 2 cores: 25 norms took 54 ms, 4x their work), and the caller then
    simply runs its blocks as well.
    """
    block = max(1, block)
    starts = range(0, n_items, block)
    if WORKERS == 1 or len(starts) == 1 or getattr(_state, "inside", False):
        for start in starts:
            body(start, min(start + block, n_items))
        return
    blocks = _Blocks(n_items, block, body)
    with blas_threads(1):
        for _ in range(min(WORKERS, len(starts)) - 1):  # the caller is the last worker
            _executor().submit(blocks.take)
        blocks.take()
        blocks.wait()


def split(n_items: int, min_block: int, blocks_per_worker: int = 2) -> int:
    """A block size giving each worker about `blocks_per_worker` blocks, never below min_block."""
    target = -(-n_items // (WORKERS * blocks_per_worker))  # ceil
    return max(min_block, target)


MIN_ROW_BLOCK = 32  # rows per block of a row-split matmul: still an efficient GEMM
MIN_COL_BLOCK = 256  # columns per block of a column-split matmul


def linear(x: Array, w: Array, b: Array | None = None) -> Array:
    """x @ w + b for x (..., k), w (k, m), split across the pool by columns of w when they are
    wide enough, else by rows of x.

    Columns first: OpenBLAS packs the whole right-hand matrix inside each call, so a row split
    makes every core pack all of w for a share of the rows, a column split only its share of w
    (GPT-2 shapes, N=128, 2 cores: (768, 2304) 112 -> 123 GFLOP/s; the same at N=512).
    Fewer than 2 * MIN_ROW_BLOCK rows (a decode step, a short prompt) run as one product on
    the calling thread: such products are bound by memory bandwidth, and the calling thread's
    BLAS may use idle cores itself (generate.py).
    """
    flat = x.reshape(-1, x.shape[-1])  # (..., k) -> (N, k)
    n_rows, n_cols = flat.shape[0], w.shape[1]
    # the decode-step case: nothing to split, keep it short; on shapes, one product too
    if n_rows < 2 * MIN_ROW_BLOCK or is_shaped(flat):
        product = flat @ w  # (N, k) @ (k, m)
        if b is not None:
            product += b
        return product.reshape(*x.shape[:-1], n_cols)  # (N, m) -> (..., m)
    out = np.empty((n_rows, n_cols), dtype=np.result_type(x, w))  # (N, m)

    def rows(r0: int, r1: int) -> None:
        np.matmul(flat[r0:r1], w, out=out[r0:r1])  # (n, k) @ (k, m)
        if b is not None:
            out[r0:r1] += b

    def columns(c0: int, c1: int) -> None:
        np.matmul(flat, w[:, c0:c1], out=out[:, c0:c1])  # (N, k) @ (k, c) -> (N, c)
        if b is not None:
            out[:, c0:c1] += b[c0:c1]

    if n_cols >= WORKERS * MIN_COL_BLOCK:
        parallel_for(n_cols, split(n_cols, MIN_COL_BLOCK, blocks_per_worker=1), columns)
    else:
        parallel_for(n_rows, split(n_rows, MIN_ROW_BLOCK, blocks_per_worker=1), rows)
    return out.reshape(*x.shape[:-1], n_cols)  # (N, m) -> (..., m)


# rows below which a row-wise function runs on the calling thread: a (128, 768) layer norm
# took 0.28 ms alone and 0.56 ms split in two (medians of 200 alternating calls, load 3 on 2
# cores); from 256 rows the split's best times win
MIN_ROWWISE_ROWS = 256


def rowwise(fn: Callable[[Array], Array], x: Array) -> Array:
    """fn(x) for a function that treats each row (last axis) on its own, such as a norm: split
    by rows across the pool when x has many. NumPy runs elementwise work on one thread; a
    (1024, 768) layer norm took 2.8 ms alone, 25 of them 3% of a GPT-2 forward pass."""
    flat = x.reshape(-1, x.shape[-1])  # (..., d) -> (N, d)
    if flat.shape[0] < MIN_ROWWISE_ROWS or WORKERS == 1 or is_shaped(x):
        return fn(x)
    out = np.empty_like(flat)

    def rows(r0: int, r1: int) -> None:
        out[r0:r1] = fn(flat[r0:r1])

    block = split(flat.shape[0], MIN_ROWWISE_ROWS // 2, blocks_per_worker=1)
    parallel_for(flat.shape[0], block, rows)
    return out.reshape(x.shape)


def linear_split(x: Array, owner: object, weights: tuple[str, ...],
                 biases: tuple[str, ...]) -> list[Array]:
    """[x @ w_i + b_i] for the projections named `weights` / `biases` of `owner`, which all read
    x: one product when they are column views of one array (layout.arrange_weights), else one
    product each.

    x (..., k), w_i (k, m_i) -> list of (..., m_i); fused, they are column views of one result.
    """
    ws = [getattr(owner, name) for name in weights]
    fused = _shaped_fusion(ws, [getattr(owner, b) for b in biases]) if is_shaped(x) \
        else fused_projection(owner, weights, biases)
    if fused is None:
        return [linear(x, w, getattr(owner, b)) for w, b in zip(ws, biases)]
    out = linear(x, *fused)  # (..., k) -> (..., sum m_i)
    views, start = [], 0
    for w in ws:  # slicing, not np.split: 1 us a view instead of 18 us a call
        views.append(out[..., start : start + w.shape[1]])  # (..., m_i)
        start += w.shape[1]
    return views


def _shaped_fusion(ws: list[Any], bs: list[Any]) -> tuple[Any, Any] | None:
    """On shapes, the fused (W, b) that layout.arrange_weights makes of real weights (every
    weight present; the biases all or none), as views of the first weight (no allocation):
    the forward on shapes then allocates the one product and its column views as the engine
    does, which the engine's live set (analysis/memory/record.py) follows."""
    if any(w is None for w in ws) or any(b is None for b in bs) and any(b is not None for b in bs):
        return None
    width = sum(w.shape[1] for w in ws)
    w = ws[0]._view((ws[0].shape[0], width))
    b = None if bs[0] is None else bs[0]._view((width,))
    return w, b
