"""`tfcli trace --execute`: run a real forward pass and compare its observed shapes with the
trace (the same forward pass run on shapes), op by op, in order: the shape path of every op
(one query block, the experts as one op, replayed blocks) against what the arrays do.

A spec too large for memory is truncated to fewer blocks per stack first (every block has
the same ops, so one or two blocks check every distinct shape; a stack whose first MoE block
comes later, DeepSeek's dense first blocks, runs through that block).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any

from tfcli.analysis.trace.build import MAX_LISTED_BLOCKS, TraceReport, build_trace
from tfcli.analysis.trace.rows import Shape, TraceRow, expand_rows
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import total_parameters
from tfcli.core.shapes import shape_text
from tfcli.spec.model import Spec

EXECUTE_BUDGET_BYTES = 8 * 2**30  # upper bound on the memory --execute may use
ENGINE_BYTES = 4  # the engine runs in float32 whatever the report's dtype
LIVE_ACTIVATIONS = 4  # rough count of the largest activations alive at once

Observed = tuple[str, str, Shape]


@dataclass(frozen=True)
class Mismatch:
    """One disagreement between the analytic trace and the observed forward pass."""

    kind: str  # "missing" (analytic op never observed), "extra" (observed, not analytic), "shape"
    index: int  # position in the analytic rows (missing, shape) or the observed ops (extra)
    path: str
    op: str
    expected: Shape | None
    observed: Shape | None

    def to_dict(self) -> dict[str, Any]:
        def shape(s: Shape | None) -> list[int] | None:
            return None if s is None else list(s)
        return {"kind": self.kind, "index": self.index, "path": self.path, "op": self.op,
                "expected": shape(self.expected), "observed": shape(self.observed)}


@dataclass(frozen=True)
class ExecuteCheck:
    """Result of comparing analytic (path, op, output shape) rows with a real forward pass."""

    spec_name: str
    layers: int  # blocks per stack that ran
    spec_layers: int  # blocks per stack of the spec as given
    seed: int
    expected: int  # analytic rows compared
    observed: int  # ops the engine reported
    matches: int
    mismatches: tuple[Mismatch, ...]

    @property
    def ok(self) -> bool:
        return not self.mismatches and self.matches == self.expected == self.observed

    @property
    def truncated(self) -> bool:
        return self.layers < self.spec_layers

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec_name, "ok": self.ok, "layers": self.layers,
            "spec_layers": self.spec_layers, "truncated": self.truncated, "seed": self.seed,
            "expected": self.expected, "observed": self.observed, "matches": self.matches,
            "mismatches": [m.to_dict() for m in self.mismatches],
        }

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        header = ["kind", "index", "path", "op", "expected", "observed"]
        return header, [[m.kind, m.index, m.path, m.op, shape_text(m.expected),
                         shape_text(m.observed)] for m in self.mismatches]


@dataclass(frozen=True)
class TracedExecution:
    """`tfcli trace --execute`: the analytic report and the check against a real forward."""

    report: TraceReport
    check: ExecuteCheck

    def to_dict(self) -> dict[str, Any]:
        return self.report.to_dict() | {"execute": self.check.to_dict()}

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        return self.report.csv_rows()


# --- memory --------------------------------------------------------------------------------------


def _blocks(spec: Spec) -> int:
    return max(spec.encoder_layers, spec.decoder_layers)


def execute_bytes(spec: Spec, report: TraceReport) -> int:
    """Rough peak memory of a forward pass: float32 weights + the largest live activations."""
    biggest = sorted((math.prod(r.output) for r in report.rows), reverse=True)[:LIVE_ACTIVATIONS]
    return ENGINE_BYTES * (total_parameters(spec) + sum(biggest))


def layers_that_fit(spec: Spec, report: TraceReport, budget_bytes: int) -> int:
    """Blocks per stack to run: all if they fit in `budget_bytes`, else enough to reach a block
    of each FFN kind (at least 2), else 2 or 1; 0 if none fit."""
    full = _blocks(spec)
    for layers in sorted({full, max(2, _blocks_to_each_kind(spec)), 2, 1}, reverse=True):
        if layers <= full and execute_bytes(_truncated(spec, layers), report) <= budget_bytes:
            return layers
    return 0


def _blocks_to_each_kind(spec: Spec) -> int:
    """The first blocks that hold a dense and an MoE block, when the stack has both (DeepSeek-V3,
    dense_layers [0, 1, 2]: 4); 1 otherwise. Looks no further than MAX_LISTED_BLOCKS."""
    layers = min(spec.decoder_layers, MAX_LISTED_BLOCKS)
    kinds = [spec.moe_layer(i) for i in range(layers)]
    other = next((i for i, moe in enumerate(kinds) if moe != kinds[0]), None) if kinds else None
    return 1 if other is None else other + 1


def _truncated(spec: Spec, layers: int) -> Spec:
    return spec if layers >= _blocks(spec) else spec.with_layers(layers)


def _default_budget() -> int:
    from tfcli.analysis.allocation import memory_limit

    return min(EXECUTE_BUDGET_BYTES, memory_limit().bytes // 2)


# --- the check -----------------------------------------------------------------------------------


def compare(rows: tuple[TraceRow, ...] | list[TraceRow],
            seen: list[Observed]) -> tuple[int, list[Mismatch]]:
    """Align analytic rows and observed ops by (path, op), in order; then compare shapes."""
    expected = [(r.path, r.op) for r in rows]
    observed = [(path, op) for path, op, _ in seen]
    matcher = difflib.SequenceMatcher(None, expected, observed, autojunk=False)
    matches, out = 0, []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                if rows[i].output == seen[j][2]:
                    matches += 1
                else:
                    out.append(Mismatch("shape", i, *expected[i], rows[i].output, seen[j][2]))
            continue
        out += [Mismatch("missing", i, *expected[i], rows[i].output, None) for i in range(i1, i2)]
        out += [Mismatch("extra", j, *observed[j], None, seen[j][2]) for j in range(j1, j2)]
    return matches, out


def _observe_forward(spec: Spec, report: TraceReport, seed: int) -> list[Observed]:
    """(path, op, output shape) of every op of a real forward pass, in order."""
    import numpy as np

    from tfcli.analysis.run.finite import is_finite, nonfinite_error, quiet_numerics
    from tfcli.engine.model import ModelInput, forward
    from tfcli.engine.init import init_weights

    seen: list[Observed] = []
    def observe(path: str, op: str, shape: tuple[int, ...]) -> None:
        seen.append((path, op, tuple(int(n) for n in shape)))

    rng = np.random.default_rng(seed)
    weights = init_weights(spec, seed)
    first = report.src_len if report.src_len is not None else report.seq_len
    tokens = rng.integers(0, spec.vocab_size, (report.batch, first))  # (B, T) or source (B, S)
    target = None
    if report.tgt_len is not None:
        target = rng.integers(0, spec.vocab_size, (report.batch, report.tgt_len))  # (B, T)
    with quiet_numerics():  # NaN / inf are reported below in one line, not as NumPy warnings
        out = forward(spec, weights, ModelInput(tokens, decoder_tokens=target), observe)
    if not all(is_finite(a) for a in (out.hidden, out.logits, out.encoder_hidden, out.pooled)):
        raise nonfinite_error(spec, weights, "float32", f"random weights (seed {seed})", tokens,
                              target, what="the --execute forward pass", dtype_hint=False)
    return seen


def _spec_to_run(spec: Spec, report: TraceReport, layers: int | None,
                 budget_bytes: int | None) -> Spec:
    """`spec` cut to `layers` blocks per stack (default: as many as fit); BadInputError if the
    forward pass would not fit in the budget."""
    budget = _default_budget() if budget_bytes is None else budget_bytes
    if layers is None:
        layers = layers_that_fit(spec, report, budget) or 1
    if layers < 1:
        raise BadInputError(f"layers must be at least 1, got {layers}")
    run_spec = _truncated(spec, layers)
    needed = execute_bytes(run_spec, report)
    if needed > budget:
        raise BadInputError(f"--execute on {spec.name} with {_blocks(run_spec)} block(s) per "
                            f"stack needs about {needed / 2**30:.1f} GiB, over the "
                            f"{budget / 2**30:.1f} GiB budget; {_what_to_try(run_spec, budget)}")
    return run_spec


def _what_to_try(run_spec: Spec, budget: int) -> str:
    """When the float32 weights alone are over budget, a shorter run cannot help: say so."""
    weights = ENGINE_BYTES * total_parameters(run_spec)
    if weights <= budget:
        return "try a smaller --batch or --seq-len"
    return (f"its float32 weights alone are {weights / 2**30:.1f} GiB, so no --batch or "
            f"--seq-len fits; the trace without --execute is analytic at any size")


def execute_check(spec: Spec, report: TraceReport, seed: int = 0, *, layers: int | None = None,
                  budget_bytes: int | None = None) -> ExecuteCheck:
    """Run init_weights + forward on `spec` with the report's batch and lengths, and compare every
    analytic (path, op, output shape) with the observed one, in order.

    layers: blocks per stack to run; default: all of them if they fit in budget_bytes (default
    min(8 GiB, half the available memory)), else 2, else 1. BadInputError if not even one fits.
    The analytic rows compared are rebuilt for the spec that runs, from the report's settings.
    """
    run_spec = _spec_to_run(spec, report, layers, budget_bytes)
    run_report = build_trace(run_spec, batch=report.batch, seq_len=report.seq_len,
                             src_len=report.src_len, tgt_len=report.tgt_len, dtype=report.dtype)
    seen = _observe_forward(run_spec, run_report, seed)
    rows = expand_rows(run_report.rows)  # one row per block, as the forward pass reports them
    matches, mismatches = compare(rows, seen)
    return ExecuteCheck(
        spec_name=spec.name, layers=_blocks(run_spec), spec_layers=_blocks(spec), seed=seed,
        expected=len(rows), observed=len(seen), matches=matches,
        mismatches=tuple(mismatches),
    )
