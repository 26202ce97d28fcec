"""ruff over the code, the tests and the benchmarks ([tool.ruff] in pyproject.toml): part of
the README's test command, so CI runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing() -> None:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "tfcli", "tests",
                           "benchmarks"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
