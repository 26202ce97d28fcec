"""tfcli against an earlier tfcli: the engine's forward pass and KV-cached decoding, one tree
before a change and this one after, interleaved run by run (B A A B ...), ratios reported.

Each measurement runs in a fresh process with PYTHONPATH set to its tree, on random weights
(seed 0) of bundled specs: GPT-2 small (12 layers) and a Llama shape (llama-3.2-1b truncated
to --llama-layers blocks: d_model 2048, GQA 32/8, SwiGLU, RoPE with llama3 scaling). A figure
is the median of the repeats inside one process; the verdict is on the median of the per-round
ratios after / before, shown with their range (shared machines are noisy: a spread wider than
the effect settles nothing).

    git worktree add /tmp/before <rev>
    python benchmarks/before_after.py --before /tmp/before            # ~3-5 min
    python benchmarks/before_after.py --before /tmp/before --rounds 4 --json
    python benchmarks/before_after.py --before /tmp/before --suite mixtral --rounds 6
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
import json, sys, time
import numpy as np
import pathlib, tfcli
if (pathlib.Path(tfcli.__file__).parent / "sources.py").exists():
    from tfcli.sources import load_spec
else:  # a tree from before issue 29 (an ImportError fallback would reach the installed tree)
    from tfcli.spec_io import load_spec
from tfcli.engine.init import init_weights
from tfcli.engine.model import forward
from tfcli.engine.generate import GenerationRequest, generate

cases, repeats = json.loads(sys.argv[1]), int(sys.argv[2])
out = {}
for name, spec_name, layers, kind, n, *changes in cases:
    spec = load_spec(spec_name).with_layers(layers)
    if changes:  # a reshaped bundled spec (Spec.replace exists in every tree compared)
        spec = spec.replace(**changes[0])
    weights = init_weights(spec, 0, np.float32)
    tokens = np.random.default_rng(1).integers(0, spec.vocab_size, size=(1, n))
    def once():
        if kind == "forward":
            forward(spec, weights, tokens)
        else:  # n new tokens after an 8-token prompt, cached
            for _ in generate(spec, weights, GenerationRequest([list(tokens[0, :8])], n)):
                pass
    once()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        once()
        times.append(time.perf_counter() - start)
    out[name] = sorted(times)[len(times) // 2]
print(json.dumps(out))
"""


# One Mixtral-8x7B block at a quarter of its width (d_model 1024, 8 experts of 3584, top-2,
# GQA 8/2): the MoE path of issue 15 timed without allocating 5.6 GB of float32 experts.
MIXTRAL_BLOCK = {"d_model": 1024, "n_heads": 8, "n_kv_heads": 2, "d_ff": 3584, "vocab_size": 1000}


def cases(llama_layers: int, suite: str = "default") -> list[tuple]:
    if suite == "mixtral":
        return [("mixtral block forward N=128", "mixtral-8x7b", 1, "forward", 128, MIXTRAL_BLOCK),
                ("mixtral block forward N=512", "mixtral-8x7b", 1, "forward", 512, MIXTRAL_BLOCK),
                ("mixtral block decode 32 tokens", "mixtral-8x7b", 1, "decode", 32, MIXTRAL_BLOCK)]
    return [
        ("gpt2 forward N=128", "gpt2", 12, "forward", 128),
        ("gpt2 forward N=512", "gpt2", 12, "forward", 512),
        ("gpt2 decode 32 tokens", "gpt2", 12, "decode", 32),
        (f"llama forward N=128 ({llama_layers} blocks)", "llama-3.2-1b", llama_layers, "forward", 128),
        (f"llama decode 32 tokens ({llama_layers} blocks)", "llama-3.2-1b", llama_layers, "decode", 32),
    ]


def measure(tree: Path, todo: list[tuple], repeats: int) -> dict[str, float]:
    env = os.environ | {"PYTHONPATH": str(tree)}
    result = subprocess.run([sys.executable, "-c", WORKER, json.dumps(todo), str(repeats)],
                            capture_output=True, text=True, env=env, cwd=tree, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the earlier tree (a worktree)")
    parser.add_argument("--after", type=Path, default=HERE, help="default: this tree")
    parser.add_argument("--rounds", type=int, default=3, help="before/after pairs (default 3)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per case per process")
    parser.add_argument("--llama-layers", type=int, default=4)
    parser.add_argument("--suite", choices=["default", "mixtral"], default="default",
                        help="mixtral: one Mixtral-shaped block (the MoE path)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    todo = cases(args.llama_layers, args.suite)
    load = os.getloadavg()
    ratios: dict[str, list[float]] = {c[0]: [] for c in todo}
    for round_index in range(args.rounds):
        order = ["before", "after"] if round_index % 2 == 0 else ["after", "before"]
        got = {side: measure(getattr(args, side), todo, args.repeats) for side in order}
        for name in ratios:
            ratios[name].append(got["after"][name] / got["before"][name])
    summary = {name: {"median_ratio": statistics.median(r), "min": min(r), "max": max(r),
                      "ratios": r} for name, r in ratios.items()}
    result = {"load_start": load, "load_end": os.getloadavg(), "rounds": args.rounds,
              "cases": summary}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"load average {load[0]:.2f} -> {os.getloadavg()[0]:.2f}; after / before, "
          f"{args.rounds} interleaved rounds (1.00 = unchanged; below = faster)")
    for name, s in summary.items():
        print(f"  {name:<36} {s['median_ratio']:.3f}  (range {s['min']:.3f} .. {s['max']:.3f})")


if __name__ == "__main__":
    main()
