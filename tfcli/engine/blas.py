"""Thread count of NumPy's OpenBLAS, set per region of code.

The engine runs BLAS on one thread and spreads work over cores itself (parallel.py): OpenBLAS's
threads busy-wait for each other, and on a 2-core machine whose other core was busy that made
GPT-2 small 15x slower on a 128-token forward pass and 10x slower per decoded token in our
measurements. `blas_threads(n)` switches for a `with` block. When NumPy's BLAS is not an
OpenBLAS that exports its thread setter, it does nothing.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads")


def _loaded_openblas() -> list[str]:
    """Paths of OpenBLAS libraries mapped into this process (Linux); [] elsewhere."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


def _symbol(lib: ctypes.CDLL, names: tuple[str, ...]) -> Callable[..., int] | None:
    for name in names:
        fn = getattr(lib, name, None)
        if fn is not None:
            return fn
    return None


@cache
def _controls() -> tuple[Callable[[int], None], Callable[[], int]] | None:
    import numpy  # noqa: F401  (make sure NumPy has loaded its BLAS)

    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter, getter = _symbol(lib, _SETTERS), _symbol(lib, _GETTERS)
        if setter is not None and getter is not None:
            setter.argtypes, getter.restype = [ctypes.c_int], ctypes.c_int
            return setter, getter
    return None


def get_blas_threads() -> int | None:
    """OpenBLAS's current thread count, or None when it cannot be controlled."""
    controls = _controls()
    return None if controls is None else controls[1]()


@contextmanager
def blas_threads(n: int | None) -> Iterator[None]:
    """Run the block with OpenBLAS limited to n threads (None: leave it alone)."""
    controls = _controls()
    if n is None or controls is None:
        yield
        return
    setter, getter = controls
    before = getter()
    setter(n)
    try:
        yield
    finally:
        setter(before)


def _cpu_times() -> tuple[int, int, int] | None:
    """(idle, total) jiffies over all cores from /proc/stat, and this process's own CPU jiffies
    (/proc/self/stat utime + stime, the same clock ticks); None where there is no /proc."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
        with open("/proc/self/stat", encoding="ascii") as own:
            mine = own.read().rsplit(")", 1)[1].split()  # after the command name
    except (OSError, ValueError):
        return None
    return fields[3] + fields[4], sum(fields), int(mine[11]) + int(mine[12])


def _available_cores(first: tuple[int, int, int], second: tuple[int, int, int],
                     cores: int) -> int | None:
    """Cores not busy with other processes between two _cpu_times() samples (None if no tick
    passed). This process's own busy jiffies count as available."""
    idle, total, own = (b - a for a, b in zip(first, second))
    if total <= 0:
        return None
    available = min(1.0, (idle + own) / total)
    return max(1, min(cores, int(available * (os.cpu_count() or cores) + 0.25)))


def idle_cores(cores: int, window: float = 0.02) -> int:
    """Cores not busy with other processes right now, sampled over `window` seconds (>= 1).

    Decode steps are bound by memory bandwidth, which one core cannot saturate: with a second
    idle core OpenBLAS's own threads read the weights about 1.5x faster (GPT-2 small gemvs: 10
    -> 15 GB/s). On a core another process keeps busy its spinning threads stall instead (10x
    slower), so the cores are counted before each generation rather than assumed. This
    process's own threads (e.g. a thread pool still spinning down) count as available.
    """
    first = _cpu_times()
    if first is None or cores <= 1:
        return 1
    time.sleep(window)
    second = _cpu_times()
    found = None if second is None else _available_cores(first, second, cores)
    return 1 if found is None else found


class CoreWatch:
    """idle_cores() measured while the process works instead of while it sleeps: each reading
    covers the time since the previous one, once at least `min_window` seconds have passed.

    idle_cores' 20 ms sample spans only 4 kernel ticks on 2 cores, so one stray tick of another
    process gives a whole generation one BLAS thread (6 of 200 samples on an idle machine here),
    about 25% slower per token; and a neighbour that starts mid-generation is never seen.
    Readings between decode steps fix both.
    """

    def __init__(self, cores: int, min_window: float = 0.25) -> None:
        self.cores, self.min_window = cores, min_window
        self._start, self._since = time.monotonic(), _cpu_times()

    def reading(self) -> int | None:
        """Available cores since the last reading; None until min_window has passed (or where
        there is no /proc to read)."""
        now = time.monotonic()
        if self._since is None or now - self._start < self.min_window:
            return None
        current = _cpu_times()
        if current is None:
            return None
        found = _available_cores(self._since, current, self.cores)
        self._start, self._since = now, current
        return found
