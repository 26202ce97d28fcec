"""Where a tfcli forward pass spends its time outside the GEMMs, per op, batch 1, float32.

Two views of the same runs (random weights, seed 0, of a bundled spec: gpt2 by default):

1. Wall time between the engine's probes (the observer `trace --execute` uses): each probe
   call closes the interval since the previous one, charged to that probe's op name and summed
   over the blocks. An op that contains matrix products (q_proj: the Q/K/V projection, RoPE;
   scores: the whole attention core; out_proj; ffn_up: the whole FFN; logits) is shown beside
   the time of its products alone (benchmarks/_common.labelled_gemms run the engine's way:
   OpenBLAS on one thread, split across the pool), so "outside" is what is left of it.
2. Thread time inside the engine's non-GEMM functions (norms, activation, softmax, masks,
   RoPE), wrapped with perf_counter for the run: summed over the pool's threads, so on 2 cores
   it may exceed the wall time it overlaps.

Medians over --repeats forward passes; the load average is printed (quote it).

    python benchmarks/profile_ops.py                          # gpt2, N = 128, 512, 1024
    python benchmarks/profile_ops.py --spec llama-3.2-1b --layers 2 --sizes 128
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from _common import int_list, labelled_gemms, load_average, run_gemms_pooled, seconds, table
from tfcli.engine import attention, ffn, model
from tfcli.engine.init import init_weights
from tfcli.engine.model import forward
from tfcli.sources import load_spec

# probe op -> the forward_gemms kinds whose products run inside its interval
GEMM_KINDS = {"q_proj": ("qkv",), "scores": ("scores", "mix"), "out_proj": ("out",),
              "ffn_up": ("up", "down"), "logits": ("logits",)}
WRAPPED = ((attention, "softmax_"), (attention, "_mask_block"), (model, "_norm"),
           (attention, "apply_rope"), (attention, "split_heads"))


def gemm_times(spec: Any, weights: Any, n: int, repeats: int) -> dict[str, float]:
    """Seconds per kind of product (labelled_gemms' kinds, summed over the blocks), median of
    `repeats`, run the engine's way (run_gemms_pooled)."""
    labelled = labelled_gemms(spec, weights, n)
    out = {}
    for kind in dict.fromkeys(k for k, _, _ in labelled):
        chosen = [(a, b) for k, a, b in labelled if k == kind]
        run_gemms_pooled(chosen)  # warm-up
        out[kind] = statistics.median(seconds(lambda: run_gemms_pooled(chosen))
                                      for _ in range(repeats))
    return out


class Intervals:
    """An engine observer charging the wall time since its previous call to each op name."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self.last = time.perf_counter()

    def __call__(self, path: str, op: str, shape: tuple[int, ...]) -> None:
        now = time.perf_counter()
        self.totals[op] += now - self.last
        self.last = now


def _timed(fn: Callable[..., Any], name: str, totals: dict[str, float]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[name] += time.perf_counter() - start
    return wrapper


def _timed_activation(totals: dict[str, float]) -> Callable[[str], Callable[..., Any]]:
    original = ffn.activation_fn
    return lambda name: _timed(original(name), "activation", totals)


def profile(spec: Any, weights: Any, n: int, repeats: int) -> dict[str, Any]:
    tokens = np.random.default_rng(0).integers(0, spec.vocab_size, size=(1, n))
    forward(spec, weights, tokens)  # warm-up
    walls, probes, inner = [], defaultdict(list), defaultdict(list)
    for _ in range(repeats):
        observer, totals = Intervals(), defaultdict(float)
        saved = [(mod, name, getattr(mod, name)) for mod, name in WRAPPED]
        saved.append((ffn, "activation_fn", ffn.activation_fn))
        for mod, name, fn in saved[:-1]:
            setattr(mod, name, _timed(fn, name, totals))
        ffn.activation_fn = _timed_activation(totals)
        try:
            start = observer.last = time.perf_counter()
            forward(spec, weights, tokens, observer)
            walls.append(time.perf_counter() - start)
        finally:
            for mod, name, fn in saved:
                setattr(mod, name, fn)
        for op, t in observer.totals.items():
            probes[op].append(t)
        for op, t in totals.items():
            inner[op].append(t)
    return {"n": n, "wall_s": statistics.median(walls),
            "probes": {op: statistics.median(ts) for op, ts in probes.items()},
            "inner": {op: statistics.median(ts) for op, ts in inner.items()},
            "gemms": gemm_times(spec, weights, n, repeats)}


def report(result: dict[str, Any]) -> None:
    wall, gemms = result["wall_s"], result["gemms"]
    print(f"\nN = {result['n']}: forward {wall * 1e3:.1f} ms (median); its GEMMs alone "
          f"{sum(gemms.values()) * 1e3:.1f} ms")
    rows = []
    for op, t in sorted(result["probes"].items(), key=lambda kv: -kv[1]):
        inside = sum(gemms.get(k, 0.0) for k in GEMM_KINDS.get(op, ()))
        rows.append([op, f"{t * 1e3:.1f}", f"{t / wall:.1%}", f"{inside * 1e3:.1f}" if inside else "",
                     f"{(t - inside) * 1e3:.1f}", f"{(t - inside) / wall:.1%}"])
    print(table(["probe interval", "ms", "% forward", "its GEMMs ms", "outside ms", "% forward"],
                rows))
    rows = [[op, f"{t * 1e3:.1f}", f"{t / wall:.1%}"]
            for op, t in sorted(result["inner"].items(), key=lambda kv: -kv[1])]
    print(table(["engine function (thread time)", "ms", "% forward wall"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spec", default="gpt2", help="a bundled spec (default gpt2)")
    parser.add_argument("--layers", type=int, default=None, help="cut the spec to this many blocks")
    parser.add_argument("--sizes", default="128,512,1024")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    spec = load_spec(args.spec)
    if args.layers:
        spec = spec.with_layers(args.layers)
    weights = init_weights(spec, 0, np.float32)
    print(f"{spec.name}, {spec.n_layers} blocks, batch 1, float32, full logits; "
          f"{args.repeats} repeats, median; load average at start {load_average()}")
    for n in int_list(args.sizes):
        report(profile(spec, weights, n, args.repeats))
    print(f"\nload average at end {load_average()}")


if __name__ == "__main__":
    main()
