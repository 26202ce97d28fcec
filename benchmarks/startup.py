"""Start-up time and time to first result, each command in a fresh process.

1. `tfcli --help`, `tfcli params llama-2-7b` (table and JSON) beside `python -c "import numpy"`:
   the median wall time of REPEATS runs and its ratio to the numpy import.
2. Time to first result: `tfcli run gpt2 --tokens 1,2,3 -f json` as a whole process (random
   weights: 124M normals drawn, then one forward pass) against `python -c "import numpy"` plus
   the forward time the run itself reports (`seconds` in its JSON). Target (issue #12): the
   whole process within 2x of that sum. With `--compare TREE` (a checkout or `git archive` of
   another commit, e.g. /tmp/pre12) the same command also runs from TREE's tfcli
   (PYTHONPATH=TREE), alternating with this tree's run by run, and the before/after ratio of the
   medians is printed.

Machines here are noisy: medians with their spread (min-max), and ratios, not absolute times.

    python benchmarks/startup.py                         # both parts
    python benchmarks/startup.py --first-result --compare /tmp/pre12 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPEATS = 7
ROOT = Path(__file__).resolve().parents[1]
NUMPY = [sys.executable, "-c", "import numpy"]
COMMANDS = {
    "python -c 'import numpy'": NUMPY,
    "python -c 'pass'": [sys.executable, "-c", "pass"],
    "tfcli --help": [sys.executable, "-m", "tfcli", "--help"],
    "tfcli params llama-2-7b": [sys.executable, "-m", "tfcli", "params", "llama-2-7b"],
    "tfcli params llama-2-7b -f json": [sys.executable, "-m", "tfcli", "params", "llama-2-7b", "-f", "json"],
}
FIRST_RESULT = ["run", "gpt2", "--tokens", "1,2,3", "-f", "json"]


def wall_time(cmd: list[str], tree: Path | None = None) -> tuple[float, str]:
    """(seconds, stdout) of one fresh process; with `tree`, its tfcli is the one imported."""
    env = None if tree is None else {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    # cwd: `python -m` puts the current folder first on sys.path, ahead of PYTHONPATH
    done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True, env=env, cwd=tree)
    return time.perf_counter() - start, done.stdout


def spread(values: list[float]) -> str:
    return (f"{statistics.median(values) * 1000:8.1f} ms "
            f"({min(values) * 1000:.0f}-{max(values) * 1000:.0f})")


def startup_table(repeats: int) -> None:
    for cmd in COMMANDS.values():  # warm the file cache once
        wall_time(cmd)
    times = {name: [wall_time(cmd)[0] for _ in range(repeats)] for name, cmd in COMMANDS.items()}
    base = statistics.median(times["python -c 'import numpy'"])
    print(f"{'command':34s} {'median (min-max)':>24s} {'x numpy import':>15s}")
    for name, values in times.items():
        print(f"{name:34s} {spread(values):>24s} {statistics.median(values) / base:15.2f}")


def first_result(trees: dict[str, Path], repeats: int) -> dict[str, dict[str, list[float]]]:
    """Per tree: whole-process times, reported forward times and numpy-import times, the trees
    alternating run by run (A B, B A, ...) with a numpy import beside each run."""
    cmd = [sys.executable, "-m", "tfcli", *FIRST_RESULT]
    out = {label: {"whole": [], "forward": [], "numpy": []} for label in trees}
    for label, tree in trees.items():  # warm-up: file cache, and a first huge-page fault storm
        where = wall_time([sys.executable, "-c", "import tfcli; print(tfcli.__file__)"], tree)[1]
        if not Path(where.strip()).resolve().is_relative_to(tree.resolve()):
            raise SystemExit(f"{label}: tfcli imports from {where.strip()}, not from {tree}")
        wall_time(cmd, tree)
    order = list(trees)
    for i in range(repeats):
        for label in order if i % 2 == 0 else order[::-1]:
            seconds, stdout = wall_time(cmd, trees[label])
            out[label]["whole"].append(seconds)
            out[label]["forward"].append(float(json.loads(stdout)["seconds"]))
            out[label]["numpy"].append(wall_time(NUMPY)[0])
    return out


def print_first_result(figures: dict[str, dict[str, list[float]]]) -> None:
    print(f"\ntime to first result: tfcli {' '.join(FIRST_RESULT)} (fresh process each)")
    medians = {}
    for label, f in figures.items():
        whole, floor = statistics.median(f["whole"]), statistics.median(f["numpy"]) + statistics.median(f["forward"])
        medians[label] = whole
        print(f"  {label:8s} whole {spread(f['whole'])}; import numpy {spread(f['numpy'])}; "
              f"forward {spread(f['forward'])}")
        print(f"  {'':8s} whole / (import numpy + forward) = {whole / floor:.2f} (target <= 2)")
    if len(medians) == 2:
        (a, ta), (b, tb) = medians.items()
        print(f"  {b} / {a} (medians of the whole process): {tb / ta:.3f}")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--first-result", action="store_true", help="only part 2")
    parser.add_argument("--compare", type=Path, help="another tree (e.g. /tmp/pre12) as 'before'")
    parser.add_argument("--json", action="store_true", help="part 2's raw times as JSON")
    args = parser.parse_args()
    print(f"load average at start: {load_average()}")
    if not args.first_result:
        startup_table(args.repeats)
    trees = {"before": args.compare, "after": ROOT} if args.compare else {"this": ROOT}
    figures = first_result(trees, args.repeats)
    print_first_result(figures)
    if args.json:
        print(json.dumps(figures, indent=1))
    print(f"load average at end: {load_average()}")


if __name__ == "__main__":
    main()
