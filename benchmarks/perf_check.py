"""`tfcli perf --gpu cpu` against tfcli's own engine on this machine: gpt2 (random weights,
float32, batch 1), the estimate beside the measurement, and their ratio.

Each round measures, in alternating order (A B C, C B A, ...): the `cpu` entry's two figures
afresh (tfcli.analysis.gpus.cpu_probe: float32 (2048, 2048) GEMM FLOP/s, the bytes/s of the
decode products of width-768 layers in tfcli's layout over 256 MiB, as `tfcli perf gpt2 --gpu
cpu` reads them, and the engine's fixed cost per op; beside them the bytes/s of the one wide
(16384, 4096) product the cpu entry read before, "wide"), tfcli's forward pass
over a prompt (prefill, timed after an untimed one), and tfcli's cached greedy decode tokens/s. The round's estimate uses the round's own figures, so a slow
spell on this shared machine moves the estimate and the measurement together; the ratio is
estimate / measured (seconds for prefill, tokens/s for decode). The acceptance: within 30%.

- prefill estimate: the per-op roofline of tfcli.analysis.perf.estimate (sum over the trace's rows of
  max(FLOPs / peak, bytes / bandwidth) + the cost per op); beside it the compute-bound time at
  MFU 1.
- decode estimate: one step's bytes (weights + KV cache at the mean context of the run) /
  bandwidth, against its FLOPs / peak; tokens/s = 1 / (the slower + ops x the cost per op).

    python benchmarks/perf_check.py                  # 5 rounds, prefill 256, 64 new tokens
    python benchmarks/perf_check.py --repeats 9 --json
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace
from typing import Any

import numpy as np

from _common import emit, interleave, load_average, machine_facts, table
from tfcli.analysis.gpus import catalog as gpus
from tfcli.analysis.perf import estimate as perf
from tfcli.analysis.gpus.catalog import Accelerator
from tfcli.analysis.perf.estimate import PerfOptions
from tfcli.engine.generate import GenerationRequest, generate
from tfcli.engine.init import init_weights
from tfcli.engine.model import forward
from tfcli.engine.weights import Weights
from tfcli.spec.model import Spec
from tfcli.sources import load_spec

TARGET = 0.30  # |estimate / measured - 1| at most


def measured_cpu(width: int) -> Accelerator:
    """The cpu entry measured now, as `tfcli perf gpt2 --gpu cpu` measures it (its bandwidth over
    layers of `width`), bypassing the per-process cache: each round measures afresh."""
    return gpus.cpu_entry.__wrapped__(gpus.probe_width(width))


def prefill_seconds(spec: Spec, weights: Weights, tokens: np.ndarray) -> float:
    """One forward pass after an untimed one: the part before it in the round (the cpu
    probes, a decode) leaves OpenBLAS's threads spinning for ~0.1 s and the caches holding
    other arrays, which a forward pass of its own would not meet."""
    forward(spec, weights, tokens)
    start = time.perf_counter()
    forward(spec, weights, tokens)
    return time.perf_counter() - start


def decode_tokens_per_s(spec: Spec, weights: Weights, prompt: list[int], n: int) -> float:
    """Cached greedy decode: the n - 1 tokens after the first (the first ends the prefill)."""
    stamps = [time.perf_counter() for _ in generate(spec, weights, GenerationRequest(prompt, n))]
    return (n - 1) / (stamps[-1] - stamps[0])


def estimates(spec: Spec, cpu: Accelerator, prefill_len: int, prompt_len: int,
              n: int) -> dict[str, float]:
    options = PerfOptions(gpu="cpu", batch=1, mfu=1.0)
    first = perf.prefill(spec, options, cpu, "float32", prefill_len)
    context = prompt_len + n // 2  # the mean context over the decode steps
    step = perf.decode(spec, options, cpu, "float32", "float32", context)
    return {"prefill_roofline_s": first.roofline_seconds,
            "prefill_compute_s": first.compute_seconds, "decode_tps_est": step.tokens_per_s}


def one_round(spec: Spec, weights: Weights, args: argparse.Namespace) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, spec.vocab_size, size=(1, args.prefill_len), dtype=np.int64)
    prompt = [int(t) for t in rng.integers(0, spec.vocab_size, size=args.prompt_len)]
    load_before = load_average()
    parts = interleave({
        "cpu": lambda: measured_cpu(spec.d_model),
        "wide": lambda: gpus.measure_read_bandwidth(),  # the probe before the layer stack
        "prefill": lambda: prefill_seconds(spec, weights, tokens),
        "decode": lambda: decode_tokens_per_s(spec, weights, prompt, args.new_tokens),
    }, repeats=1 + args.round % 2)  # odd rounds twice, reversed: the order alternates
    cpu = parts["cpu"][-1]
    est = estimates(spec, cpu, args.prefill_len, args.prompt_len, args.new_tokens)
    wide = replace(cpu, bandwidth=parts["wide"][-1])
    est["decode_tps_est_wide"] = estimates(spec, wide, args.prefill_len, args.prompt_len,
                                           args.new_tokens)["decode_tps_est"]
    prefill_s, decode_tps = min(parts["prefill"]), max(parts["decode"])
    return {"load_before": load_before, "load_after": load_average(),
            "gemm_gflops": cpu.fp32_tflops * 1e3, "bandwidth_gbs": cpu.bandwidth / 1e9,
            "op_us": cpu.op_seconds * 1e6, "wide_gbs": wide.bandwidth / 1e9,
            "prefill_s": prefill_s, "decode_tps": decode_tps, **est,
            "prefill_ratio": est["prefill_roofline_s"] / prefill_s,
            "prefill_compute_ratio": est["prefill_compute_s"] / prefill_s,
            "decode_ratio": est["decode_tps_est"] / decode_tps,
            "decode_ratio_wide": est["decode_tps_est_wide"] / decode_tps}


def summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("prefill_ratio", "prefill_compute_ratio", "decode_ratio", "decode_ratio_wide",
                "gemm_gflops", "bandwidth_gbs", "wide_gbs", "op_us", "prefill_s", "decode_tps"):
        values = [r[key] for r in rounds]
        out[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
    out["within_target"] = {k: abs(out[k]["median"] - 1) <= TARGET
                            for k in ("prefill_ratio", "decode_ratio")}
    return out


def report(results: dict[str, Any], args: argparse.Namespace) -> None:
    rounds, total = results["rounds"], results["summary"]
    print(f"machine: {results['machine']}")
    print(f"gpt2, float32, batch 1: prefill {args.prefill_len} tokens, decode {args.new_tokens} "
          f"new after {args.prompt_len}; {os.cpu_count()} CPUs")
    header = ["round", "load 1m", "GEMM GFLOP/s", "GB/s", "wide GB/s", "us/op", "prefill ms",
              "est ms", "ratio", "MFU-1 ratio", "decode tok/s", "est tok/s", "ratio",
              "wide ratio"]
    rows = [[i, f"{r['load_before'][0]:.2f}->{r['load_after'][0]:.2f}", f"{r['gemm_gflops']:.1f}",
             f"{r['bandwidth_gbs']:.2f}", f"{r['wide_gbs']:.2f}", f"{r['op_us']:.1f}",
             f"{1e3 * r['prefill_s']:.1f}",
             f"{1e3 * r['prefill_roofline_s']:.1f}", f"{r['prefill_ratio']:.2f}",
             f"{r['prefill_compute_ratio']:.2f}", f"{r['decode_tps']:.2f}",
             f"{r['decode_tps_est']:.2f}", f"{r['decode_ratio']:.2f}",
             f"{r['decode_ratio_wide']:.2f}"] for i, r in enumerate(rounds)]
    print(table(header, rows))
    for key in ("prefill_ratio", "prefill_compute_ratio", "decode_ratio", "decode_ratio_wide"):
        s = total[key]
        print(f"{key}: median {s['median']:.2f} (spread {s['min']:.2f}-{s['max']:.2f})")
    print(f"within {TARGET:.0%}: {total['within_target']}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds")
    parser.add_argument("--prefill-len", type=int, default=256)
    parser.add_argument("--prompt-len", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--json", action="store_true", help="JSON on stdout instead of a table")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    spec = load_spec("gpt2")
    weights = init_weights(spec, seed=0)
    rounds = []
    for i in range(args.repeats):
        args.round = i
        rounds.append(one_round(spec, weights, args))
    results = {"machine": machine_facts(), "rounds": rounds, "summary": summary(rounds)}
    emit(results, args.json, lambda r: report(r, args))


if __name__ == "__main__":
    main()
