"""Depth sweep wall time and memory: the default sweep on the bundled GPT-2 spec (depths 1..64,
pre / post / plain, seq-len 16), and the peak memory of sweeps to depth 16 and to depth 64,
which should be the same: layers are drawn from the seed one at a time, never all held.

    python benchmarks/depth_sweep.py [--spec gpt2] [--repeats 1] [--json]

Peak memory is tracemalloc's peak (NumPy reports its array buffers to it), measured in separate
runs so that tracing does not slow the timed one. The machines here are shared: the load
average is printed alongside, and CPU time says how much work the sweep itself did.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
import tracemalloc
from typing import Any

from tfcli.analysis.depth.sweep import DepthSweepOptions, run_depth_sweep
from tfcli.sources import load_spec

FULL = (1, 2, 4, 8, 16, 32, 64)
SHALLOW = (1, 2, 4, 8, 16)


def timed(spec_name: str, depths: tuple[int, ...]) -> dict[str, float]:
    spec = load_spec(spec_name)
    wall, cpu = time.perf_counter(), time.process_time()
    run_depth_sweep(spec, DepthSweepOptions(depths=depths))
    return {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}


def peak_bytes(spec_name: str, depths: tuple[int, ...]) -> int:
    spec = load_spec(spec_name)
    tracemalloc.start()
    tracemalloc.reset_peak()
    run_depth_sweep(spec, DepthSweepOptions(depths=depths))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0],
        "blas_threads_env": {k: os.environ[k] for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
                             if k in os.environ},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="gpt2")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs of the full sweep")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    report: dict[str, Any] = {"spec": args.spec, "machine_before": machine()}
    runs = [timed(args.spec, FULL) for _ in range(args.repeats)]
    report["full_sweep"] = {"depths": list(FULL), "runs": runs,
                            "best_wall_s": min(r["wall_s"] for r in runs)}
    report["peak_mib_to_16"] = peak_bytes(args.spec, SHALLOW) / 2**20
    report["peak_mib_to_64"] = peak_bytes(args.spec, FULL) / 2**20
    report["max_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report["machine_after"] = machine()
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"depth sweep on {args.spec}: depths {FULL}, variants pre/post/plain, seq-len 16")
    for i, r in enumerate(runs, 1):
        print(f"  run {i}: wall {r['wall_s']:.2f} s, CPU {r['cpu_s']:.2f} s")
    print(f"  peak traced memory: to depth 16 {report['peak_mib_to_16']:.1f} MiB, "
          f"to depth 64 {report['peak_mib_to_64']:.1f} MiB "
          f"(ratio {report['peak_mib_to_64'] / report['peak_mib_to_16']:.2f}: flat means ~1)")
    print(f"  max RSS of this process: {report['max_rss_mib']:.0f} MiB")
    print(f"  load average (1 min) before / after: {report['machine_before']['load_average_1m']:.2f}"
          f" / {report['machine_after']['load_average_1m']:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
