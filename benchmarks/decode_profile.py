"""Where a decode step's time goes: GPT-2 small (random, seed 0), batch 1, greedy, float32.

Two views, each over `--steps` cached decode steps after a 16-token prompt, `--repeats` runs:

1. BLAS threads: the step time (median of a run's steps) with the engine's own choice
   (generate._decode_threads: the cores other processes left idle since the last reading) beside
   two and one OpenBLAS threads forced, and how many steps the engine's choice gave each count.
   On a shared machine the forced-two column shows what a busy neighbour does to OpenBLAS's
   spinning threads.
2. Inside a step (two threads forced): the wall time spent in the weight-streaming products
   (engine.parallel.linear), attention over the cache (attention.attend, its two small
   products included), the norms, GELU, sampling, and the rest (Python between them, the cache
   update, embedding), per step; then the same products alone, back to back (what the
   products column would be with nothing between them).

    python benchmarks/decode_profile.py              # 64 steps, 4 runs
    python benchmarks/decode_profile.py --steps 128 --repeats 3 --json
"""

from __future__ import annotations

import argparse
import collections
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


import tfcli.engine.attention as attention_module
import tfcli.engine.ffn as ffn_module
import tfcli.engine.generate as generate_module
import tfcli.engine.model as model_module
import tfcli.engine.ops as ops_module
import tfcli.engine.parallel as parallel_module
from _common import (emit, gpt2_pair, labelled_gemms, load_average, machine_facts, median,
                     run_gemms, seconds, table)
from tfcli.engine.generate import GenerationRequest, generate

PROMPT = list(range(1, 17))


def step_times(spec: Any, weights: Any, steps: int) -> list[float]:
    """Seconds of each cached decode step (the prefill's first token left out)."""
    request = GenerationRequest(prompts=[PROMPT], max_new_tokens=steps + 1)
    times, last = [], None
    for step in generate(spec, weights, request):
        now = time.perf_counter()
        if step.step >= 1:
            times.append(now - last)
        last = now
    return times


@contextmanager
def forced_threads(threads: int | None, chosen: collections.Counter) -> Iterator[None]:
    """Decode steps on `threads` BLAS threads (None: the engine's choice, counted in `chosen`)."""
    engine_choice = generate_module._decode_threads

    def choose(*args: Any, **kwargs: Any) -> int:
        count = engine_choice(*args, **kwargs) if threads is None else threads
        chosen[count] += 1
        return count

    generate_module._decode_threads = choose
    try:
        yield
    finally:
        generate_module._decode_threads = engine_choice


@contextmanager
def timed_parts(spent: collections.Counter) -> Iterator[None]:
    """Wrap the engine functions a decode step calls so their wall time adds up in `spent`."""
    targets: list[tuple[str, str, tuple[Any, ...]]] = [
        ("linear", "linear", (parallel_module, attention_module, ffn_module, model_module)),
        ("attend", "attention", (attention_module,)),
        ("_norm", "norms", (model_module,)),
        ("sample", "sampling", (generate_module,)),
    ]
    saved: list[tuple[Any, str, Any]] = []

    def wrap(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - start
        return timed

    for name, label, modules in targets:
        wrapped = wrap(getattr(modules[0], name), label)
        for module in modules:
            saved.append((module, name, getattr(module, name)))
            setattr(module, name, wrapped)
    gelu = ops_module.ACTIVATIONS["gelu_tanh"]
    ops_module.ACTIVATIONS["gelu_tanh"] = wrap(gelu, "GELU")
    try:
        yield
    finally:
        for module, name, fn in saved:
            setattr(module, name, fn)
        ops_module.ACTIVATIONS["gelu_tanh"] = gelu


def threads_view(spec: Any, weights: Any, steps: int, repeats: int) -> dict[str, Any]:
    medians: dict[str, list[float]] = {"engine": [], "2": [], "1": []}
    chosen: collections.Counter = collections.Counter()
    for _ in range(repeats):  # interleaved: a slow spell hits every column
        for label, threads in (("engine", None), ("2", 2), ("1", 1)):
            counter = chosen if threads is None else collections.Counter()
            with forced_threads(threads, counter):
                medians[label].append(median(step_times(spec, weights, steps)) * 1e3)
    return {"step_ms": medians, "engine_chose": dict(sorted(chosen.items()))}


def parts_view(spec: Any, weights: Any, steps: int, repeats: int) -> list[dict[str, float]]:
    runs = []
    request = GenerationRequest(prompts=[PROMPT], max_new_tokens=steps + 1)
    for _ in range(repeats):
        spent: collections.Counter = collections.Counter()
        with forced_threads(2, collections.Counter()), timed_parts(spent):
            tokens = generate(spec, weights, request)
            next(tokens)  # the prefill and its token, outside the timed window
            spent.clear()
            start = time.perf_counter()
            n = sum(1 for _ in tokens)
            total = time.perf_counter() - start
        per_step = {label: seconds / n * 1e3 for label, seconds in spent.items()}
        per_step["step"] = total / n * 1e3
        runs.append(per_step)
    return runs


def gemvs_view(spec: Any, weights: Any, repeats: int) -> list[float]:
    """ms of one step's matrix-vector products alone, back to back on OpenBLAS's threads (one
    per core), `repeats` times: what the "linear" column of a step would be with nothing between
    the products (generate.py's step_gemvs_s takes the best of these)."""
    pairs = [(a, b) for kind, a, b in labelled_gemms(spec, weights, 1)
             if kind not in ("scores", "mix")]
    run_gemms(pairs)  # warm-up
    return [seconds(lambda: run_gemms(pairs)) * 1e3 for _ in range(repeats)]


def report(results: dict[str, Any]) -> None:
    print(f"GPT-2 small, greedy decode, batch 1, float32, {results['steps']} steps; load "
          f"{results['load_start']} -> {results['load_end']}")
    view = results["threads"]
    rows = [[label, " ".join(f"{t:.1f}" for t in times), f"{median(times):.1f}"]
            for label, times in view["step_ms"].items()]
    print(table(["BLAS threads", "step ms per run (median of its steps)", "median"], rows))
    print(f"the engine's choice per step: {view['engine_chose']}\n")
    parts = results["parts"]
    labels = ["step", "linear", "attention", "norms", "GELU", "sampling"]
    rows = [[f"{run['step']:.2f}"] + [f"{run.get(k, 0.0):.2f}" for k in labels[1:]]
            + [f"{run['step'] - sum(run.get(k, 0.0) for k in labels[1:]):.2f}"] for run in parts]
    print("inside a step, two BLAS threads forced, ms per step:")
    print(table(labels + ["rest"], rows))
    gemvs = results["gemvs_ms"]
    print(f"\nthe same products alone, back to back on {results['machine']['cpus']} BLAS "
          f"threads, ms: {' '.join(f'{t:.2f}' for t in gemvs)} (median {median(gemvs):.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--json", action="store_true", help="print every figure as JSON")
    args = parser.parse_args()
    _, spec, weights = gpt2_pair("sdpa")
    start = load_average()
    step_times(spec, weights, 4)  # warm-up
    results = {"machine": machine_facts(), "steps": args.steps, "load_start": start,
               "threads": threads_view(spec, weights, args.steps, args.repeats),
               "parts": parts_view(spec, weights, args.steps, args.repeats),
               "gemvs_ms": gemvs_view(spec, weights, 3 * args.repeats)}
    results["load_end"] = load_average()
    emit(results, args.json, report)


if __name__ == "__main__":
    main()
