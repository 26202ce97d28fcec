"""Is what the blueprint drives unchanged by a refactor? Components, random weights and traces
of many small specs, snapshotted in two checkouts and compared.

    python benchmarks/blueprint_identity.py snapshot /path/to/checkout out.json
    python benchmarks/blueprint_identity.py compare before.json after.json

The specs: the engine's test variants (tests/engine/engine_specs.py), every bundled spec scaled
down as tests/checkpoints/test_weight_names.py scales it (same component list), and masked-LM
and classification heads on three bodies; both trees read the test helpers of this checkout.
Per spec: every component (name, group, shape, repeat, note, tied, buffer, path), the path,
shape, strides and md5 of every array `init_weights(spec, 3)` draws, and `trace -f json` of
batch 2 x 8 tokens. json_identity.py covers the CLI's commands at full size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

WORKER = r"""
import hashlib, json, sys
sys.path.insert(1, sys.argv[1])  # this checkout's tests/ helpers, after the tree under test
import numpy as np
from tfcli.analysis.trace.build import build_trace
from tfcli.engine.init import init_weights
from tfcli.engine.weights import named_arrays
from tfcli.spec.counts import components
from tfcli.spec.model import Spec
from tests.engine.engine_specs import VARIANTS, make_spec
from tests.checkpoints.test_weight_names import _cases

specs = [("v:" + v, make_spec(v)) for v in VARIANTS] + [("small:" + n, s) for n, s in _cases()]
for body in ("bert", "gpt", "llama_gqa"):
    for head in ("masked_lm", "sequence_classification", "token_classification"):
        fields = make_spec(body).model_dump(exclude_unset=True) | {"head": head}
        if head != "masked_lm":
            fields["num_labels"] = 3
        try:
            specs.append((f"{body}:{head}", Spec.model_validate(fields)))
        except Exception as error:  # refused the same way in both trees, or not
            specs.append((f"{body}:{head}", repr(error)))
out = {}
for name, spec in specs:
    if isinstance(spec, str):
        out[name] = spec
        continue
    entry = {"components": [[c.name, c.group, list(c.shape), c.repeat, c.note, c.tied, c.buffer,
                             c.path] for c in components(spec)]}
    entry["weights"] = [[p, list(a.shape), list(a.strides),
                         hashlib.md5(np.ascontiguousarray(a).tobytes()).hexdigest()]
                        for p, a in named_arrays(init_weights(spec, 3))]
    entry["trace"] = build_trace(spec, seq_len=8, batch=2).to_dict()
    out[name] = entry
print(json.dumps(out, sort_keys=True, default=str))
"""


def snapshot(tree: Path, target: Path) -> None:
    env = os.environ | {"PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", WORKER, str(HERE)], env=env, cwd=tree,
                         check=True, capture_output=True, text=True).stdout
    target.write_text(out)
    print(f"{len(json.loads(out))} specs -> {target}")


def compare(before: Path, after: Path) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    differ = [name for name in sorted(set(a) | set(b)) if a.get(name) != b.get(name)]
    for name in differ:
        parts = ("components", "weights", "trace")
        which = [p for p in parts if not isinstance(a.get(name), dict) or not isinstance(
            b.get(name), dict) or a[name].get(p) != b[name].get(p)]
        print(f"differs: {name} ({', '.join(which)})")
    print(f"{len(set(a) | set(b))} specs, {len(set(a) | set(b)) - len(differ)} identical, "
          f"{len(differ)} differ")
    return 1 if differ else 0


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "snapshot":
        snapshot(Path(sys.argv[2]).resolve(), Path(sys.argv[3]))
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        raise SystemExit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
