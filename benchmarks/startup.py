"""Start-up time: `tfcli params llama-2-7b` and `tfcli --help` beside `python -c "import numpy"`.

Each command runs REPEATS times in a fresh process; the table shows the median wall time and the
ratio to the numpy import (machines here are noisy, so compare ratios, not absolute times).

    python benchmarks/startup.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

REPEATS = 7
COMMANDS = {
    "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
    "python -c 'pass'": [sys.executable, "-c", "pass"],
    "tfcli --help": [sys.executable, "-m", "tfcli", "--help"],
    "tfcli params llama-2-7b": [sys.executable, "-m", "tfcli", "params", "llama-2-7b"],
    "tfcli params llama-2-7b -f json": [sys.executable, "-m", "tfcli", "params", "llama-2-7b", "-f", "json"],
}


def wall_time(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    for cmd in COMMANDS.values():  # warm the file cache once
        wall_time(cmd)
    medians = {name: statistics.median(wall_time(cmd) for _ in range(REPEATS))
               for name, cmd in COMMANDS.items()}
    base = medians["python -c 'import numpy'"]
    print(f"{'command':34s} {'median ms':>10s} {'x numpy import':>15s}")
    for name, seconds in medians.items():
        print(f"{name:34s} {seconds * 1000:10.1f} {seconds / base:15.2f}")


if __name__ == "__main__":
    main()
