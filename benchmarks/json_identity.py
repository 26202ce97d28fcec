"""Is the JSON of every command unchanged by a refactor? Run it on two checkouts and compare.

    python benchmarks/json_identity.py snapshot /path/to/checkout out.json
    python benchmarks/json_identity.py compare before.json after.json

The snapshot runs `python -m tfcli` of the given checkout (PYTHONPATH points at it, the
dependencies come from the current interpreter) over a fixed list: the README's commands that
need no network or downloaded file, with `--format json`, and `memory`/`params`/`trace`/`perf`
for every bundled spec under several option sets. Each entry keeps the exit code, stdout and
stderr, so a refused case is compared too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

README = [
    "trace lesson-tiny --seq-len 8 --depth 1",
    "params gpt2", "params llama-3-8b --seq-len 8192 --batch 4 --kv-dtype bfloat16",
    "params mistral-7b --seq-len 32768", "params gemma-2-9b --seq-len 8192",
    "params deepseek-v3 --seq-len 32768 --kv-dtype bfloat16", "specs",
    "trace gpt2 --seq-len 1024 --depth 2",
    "trace llama-2-7b --layers 1 --seq-len 32 --depth 1 --execute",
    "run gpt2 --tokens 1,2,3 --layers 2", "run tiny-llama --tokens 1,15,27,4",
    "generate gpt2 --tokens 464,3602,318 --max-new-tokens 8 --check-cache --layers 2",
    "depth-sweep --sublayer linear --share-weights --d-model 16 --seq-len 6 --weight-scale 0.3"
    " --depths 20 --seed 0",
    "gpus", "diff llama-2-7b mistral-7b --seq-len 8192",
    "memory llama-2-7b --seq-len 4096 --train --recompute full --gpus 8 --zero 3 --gpu a100-80gb",
    "memory llama-2-7b --seq-len 4096 --gpu a100-80gb --fit",
    "perf llama-2-7b --gpu a100 --seq-len 4096 --train --train-tokens 2e12 --gpus 8",
    "memory llama-2-7b --batch 1,8,32 --seq-len 1024,8192,32768 --gpu h100",
    "perf llama-2-7b --gpu h100 --batch 1,8,32 --seq-len 1024,8192,32768",
    "memory llama-3-8b --seq-len 8192 --gpu h100 --fit",  # the README's tour since issue 29
    "trace lesson-tiny --seq-len 8 --depth 1 --format markdown",
]
PER_SPEC = [
    "params {s}", "trace {s} --seq-len 64",
    "memory {s} --seq-len 512", "memory {s} --seq-len 512 --attention engine",
    "memory {s} --seq-len 512 --train",
    "memory {s} --seq-len 256 --train --recompute selective --lora-rank 8",
    "memory {s} --seq-len 256 --train --gpus 4 --zero 2 --tp 2",
    "perf {s} --gpu h100 --seq-len 512",
]
# fields that measure this machine, not the model
VOLATILE = {"seconds", "wall_s", "elapsed_s", "time_s", "ms", "timing"}


TIMED = ("run ", "generate ")  # commands that time this machine (and `--execute`)


def is_timed(command: str) -> bool:
    return command.startswith(TIMED) or "--execute" in command.split()


def scrub(value: object, timed: bool = False) -> object:
    """`value` with this machine's measurements replaced by '*', for the commands that time a
    real run; every other command (perf's times and rates are estimates) is compared whole."""
    def volatile(key: str) -> bool:
        return timed and (key in VOLATILE or key.endswith(("_ms", "_seconds", "_per_s"))
                          or key == "speedup")

    if isinstance(value, dict):
        return {k: "*" if volatile(k) else scrub(v, timed) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, timed) for v in value]
    return value


def _commands(checkout: Path) -> list[str]:
    specs = sorted(p.stem for p in (checkout / "tfcli" / "specs").glob("*.yaml"))
    return README + [c.format(s=s) for s in specs for c in PER_SPEC]


def snapshot(checkout: Path, out: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(checkout), "COLUMNS": "200", "TFCLI_DEBUG": ""}
    results = {}
    for command in _commands(checkout):
        argv = [sys.executable, "-m", "tfcli", *command.split(), "--format", "json"]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=checkout)
        try:
            body: object = json.loads(done.stdout)
        except json.JSONDecodeError:
            body = done.stdout
        results[command] = {"rc": done.returncode, "stdout": body, "stderr": done.stderr}
    out.write_text(json.dumps(results, indent=1, sort_keys=True))
    print(f"{len(results)} commands -> {out}")


def compare(before: Path, after: Path) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())

    def seen(entry: dict | None, command: str) -> object:
        return None if entry is None else {**entry, "stdout": scrub(entry["stdout"],
                                                                     is_timed(command))}

    differ = [c for c in a if seen(a[c], c) != seen(b.get(c), c)]
    for c in differ:
        print(f"DIFFERS: {c}")
    print(f"{len(a)} commands, {len(a) - len(differ)} identical, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    if sys.argv[1] == "snapshot":
        snapshot(Path(sys.argv[2]).resolve(), Path(sys.argv[3]))
    else:
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
