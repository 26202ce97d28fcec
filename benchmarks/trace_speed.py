"""The analytic paths against an earlier tree: `build_trace` (llama-2-70b, and a 10^9-layer
spec whose blocks fold), the blueprint's counts (deepseek-v3's components) and random weights
(init_weights of GPT-2 small), one tree before a change and this one after, interleaved run by
run (B A A B ...), ratios after / before reported with their range.

    git worktree add /tmp/before <rev>
    python benchmarks/trace_speed.py --before /tmp/before --rounds 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

# Runs inside the tree under test; only APIs both trees have.
WORKER = r"""
import json, time
import numpy as np
from tfcli.sources import load_spec
from tfcli.analysis.trace.build import build_trace
from tfcli.spec.counts import components, total_parameters
from tfcli.engine.init import init_weights

def best(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter(); fn(); times.append(time.perf_counter() - start)
    return statistics.median(times)

import statistics
llama70 = load_spec("llama-2-70b")
deep = load_spec("lesson-tiny").replace(n_layers=10**9)
deepseek = load_spec("deepseek-v3")
gpt2 = load_spec("gpt2")
print(json.dumps({
    "trace llama-2-70b": best(lambda: build_trace(llama70, seq_len=128), 5),
    "trace 10^9 layers": best(lambda: build_trace(deep, seq_len=8), 20),
    "components deepseek-v3": best(lambda: components(deepseek), 20),
    "init_weights gpt2": best(lambda: init_weights(gpt2, 0), 3),
}))
"""


def measure(tree: Path) -> dict[str, float]:
    env = os.environ | {"PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", WORKER], env=env, cwd=tree, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=HERE)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    ratios: dict[str, list[float]] = {}
    seconds: dict[str, list[tuple[float, float]]] = {}
    for r in range(args.rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        got = {name: measure(args.before if name == "before" else args.after) for name in order}
        for key in got["after"]:
            ratios.setdefault(key, []).append(got["after"][key] / got["before"][key])
            seconds.setdefault(key, []).append((got["before"][key], got["after"][key]))
    for key, values in ratios.items():
        before = statistics.median(b for b, _ in seconds[key])
        after = statistics.median(a for _, a in seconds[key])
        print(f"{key:24s} before {before * 1e3:9.2f} ms  after {after * 1e3:9.2f} ms  "
              f"after/before {statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})")


if __name__ == "__main__":
    main()
