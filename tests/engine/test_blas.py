"""blas_threads() switches NumPy's OpenBLAS thread count for a block and restores it."""

from __future__ import annotations

import numpy as np
import pytest

from tfcli.engine.blas import blas_threads, get_blas_threads


def test_blas_threads_sets_and_restores():
    before = get_blas_threads()  # None where NumPy's BLAS is not OpenBLAS: then a no-op
    with blas_threads(1):
        assert get_blas_threads() == (None if before is None else 1)
        a = np.ones((64, 64), np.float32)
        np.testing.assert_array_equal(a @ a, np.full((64, 64), 64.0, np.float32))
    assert get_blas_threads() == before


def test_blas_threads_none_leaves_blas_alone():
    before = get_blas_threads()
    with blas_threads(None):
        assert get_blas_threads() == before



def test_idle_cores_falls_back_to_one_thread(monkeypatch) -> None:
    """One core, or no /proc to sample (not Linux): one BLAS thread, without sampling."""
    from tfcli.engine import blas

    assert blas.idle_cores(1) == 1
    monkeypatch.setattr(blas, "_cpu_times", lambda: None)
    monkeypatch.setattr(blas.time, "sleep", lambda seconds: pytest.fail("sampled anyway"))
    assert blas.idle_cores(4) == 1


@pytest.mark.parametrize("idle, own, expected", [
    (100, 0, 2),  # both cores idle
    (50, 0, 1),  # another process keeps one core busy
    (0, 0, 1),  # all busy: still one thread, never zero
    (10, 90, 2),  # the busy core is this process's own (a pool spinning down): available
    (60, 0, 1),  # 1.2 cores idle rounds to 1: a half-idle core would stall BLAS threads
    (90, 0, 2),
])
def test_idle_cores_counts_cores_other_processes_leave_free(monkeypatch, idle: int, own: int,
                                                             expected: int) -> None:
    """Two /proc samples 100 jiffies apart on a 2-core machine: idle and own jiffies in the
    window decide how many BLAS threads a decode step gets."""
    from tfcli.engine import blas

    samples = iter([(0, 0, 0), (idle, 100, own)])  # (idle, total, own) jiffies
    monkeypatch.setattr(blas, "_cpu_times", lambda: next(samples))
    monkeypatch.setattr(blas.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(blas.os, "cpu_count", lambda: 2)
    assert blas.idle_cores(2) == expected


def test_core_watch_reads_the_time_since_its_last_reading(monkeypatch) -> None:
    """Nothing until min_window has passed; then each reading covers only its own interval:
    a neighbour that starts mid-generation is seen at the next reading, and one that stops too."""
    from tfcli.engine import blas

    clock = iter([0.0, 0.1, 0.3, 0.6, 0.9])  # time.monotonic() at creation and each reading
    samples = iter([(0, 0, 0), (100, 100, 0), (125, 200, 25), (225, 300, 25)])
    monkeypatch.setattr(blas.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(blas, "_cpu_times", lambda: next(samples))
    monkeypatch.setattr(blas.os, "cpu_count", lambda: 2)
    watch = blas.CoreWatch(2, min_window=0.25)
    assert watch.reading() is None  # 0.1 s: too soon, /proc not even read
    assert watch.reading() == 2  # 0 -> 0.3 s: all idle
    assert watch.reading() == 1  # 0.3 -> 0.6 s: half the ticks went to another process
    assert watch.reading() == 2  # 0.6 -> 0.9 s: idle again


def test_core_watch_without_proc_never_reads(monkeypatch) -> None:
    from tfcli.engine import blas

    monkeypatch.setattr(blas, "_cpu_times", lambda: None)
    watch = blas.CoreWatch(2, min_window=0.0)
    assert watch.reading() is None
