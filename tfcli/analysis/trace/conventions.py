"""FLOP-counting conventions for `tfcli trace` and `tfcli perf`: the same rows, recounted.

Published FLOP figures differ mostly by convention, not by arithmetic: MACs or FLOPs (a
multiply-add is 1 or 2), whether a causal mask halves the attention matmuls (FlashAttention's
benchmarks halve them; Megatron's and PaLM's MFU formulas do not), whether keys outside a
sliding window are counted, and whether elementwise ops count at all (the 6N rule counts only
matmuls). The trace counts one way (FlopConvention() below: today's, stated in its convention
line); apply_convention recounts its rows another way, row by row, so every total, fold and
per-token figure follows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tfcli.analysis.trace.build import TraceReport
from tfcli.analysis.trace.rows import TraceRow
from tfcli.spec.model import Spec

# Ops that are a matrix product (a linear layer, or the attention products QK^T and PV).
# experts / shared_experts / transform / pooler / classifier_dense rows keep the activation
# FLOPs they include: their matmuls are all but a fraction of a percent of them.
MATMUL_OPS = frozenset({
    "q_proj", "k_proj", "v_proj", "out_proj", "scores", "weighted_sum", "ffn_up", "ffn_gate",
    "ffn_down", "router", "experts", "shared_experts", "shared_gate", "logits", "transform",
    "pooler", "classifier", "classifier_dense", "embedding_project", "q_a_proj", "q_b_proj",
    "kv_a_proj", "kv_b_proj",
})
PAIR_OPS = frozenset({"scores", "weighted_sum"})  # one dot product per (query, key) pair
_SELF_ATTENTION = re.compile(r"^(encoder|decoder)\.(\d+)(?:-\d+)?\.attn$")


@dataclass(frozen=True)
class FlopConvention:
    """How FLOPs are counted; the defaults are the trace's own (changing nothing)."""

    macs: bool = False  # count a multiply-add as 1 (MACs) in matmul rows, not 2
    causal_half: bool = False  # causal self-attention: half the query-key pairs of QK^T and PV
    window: bool = False  # local layers: only the keys inside the sliding window
    matmuls_only: bool = False  # elementwise rows (norms, softmax, adds, activations) count 0

    @property
    def is_default(self) -> bool:
        return self == FlopConvention()

    def describe(self) -> str:
        """One line: what this convention counts, printed beside every figure it changes."""
        return "; ".join([
            "MACs: a multiply-add is 1 in matmul rows (their FLOPs / 2)" if self.macs
            else "FLOPs: a multiply-add is 2",
            "causal self-attention QK^T and PV halved" if self.causal_half
            else "causal masking not halved (every query-key pair)",
            "keys outside a sliding window not counted" if self.window
            else "sliding windows not subtracted",
            "matmul rows only" if self.matmuls_only else "elementwise ops counted",
        ]) + ("" if not self.is_default else " (the trace's default)")

    def to_dict(self) -> dict[str, object]:
        return {"macs": self.macs, "causal_half": self.causal_half, "window": self.window,
                "matmuls_only": self.matmuls_only, "text": self.describe()}


def pair_fraction(spec: Spec, path: str, queries: int, keys: int,
                  convention: FlopConvention) -> float:
    """The share of the `queries` x `keys` pairs the convention counts in self-attention at
    `path` ("decoder.3.attn"). Causal: the queries are the last `queries` positions. A causal
    window of w keys covers the band T w - w^2 / 2 of the T x T square (w < T) under halving,
    T min(w, S) without; an encoder's bidirectional window min(2w - 1, S) keys per query."""
    match = _SELF_ATTENTION.match(path)
    if match is None or (not convention.causal_half and not convention.window):
        return 1.0
    causal = match.group(1) == "decoder"
    w = _window(spec, int(match.group(2))) if convention.window else None
    if not causal:
        return 1.0 if w is None else min(2 * w - 1, keys) / keys
    half = convention.causal_half and queries == keys > 1  # a decode step's one query sees all
    if w is None or w >= keys:
        return 0.5 if half else 1.0
    if half:
        return (queries * w - w * w / 2) / (queries * keys)
    return w / keys


def _window(spec: Spec, layer: int) -> int | None:
    """The sliding window of layer `layer`, None for a global layer (or no window)."""
    if spec.sliding_window is None:
        return None
    pattern = spec.layer_pattern or ["local"]
    return spec.sliding_window if pattern[layer % len(pattern)] == "local" else None


def recount(spec: Spec, row: TraceRow, convention: FlopConvention) -> int:
    """The row's FLOPs under `convention` (the trace's count when it is the default)."""
    flops = row.flops
    if row.op in PAIR_OPS:
        scores = row.output if row.op == "scores" else row.inputs[0]  # (B, H, T, S)
        flops = round(flops * pair_fraction(spec, row.path, scores[-2], scores[-1], convention))
    if row.op not in MATMUL_OPS:
        return 0 if convention.matmuls_only else flops
    return (flops + 1) // 2 if convention.macs else flops  # a bias add is half a MAC


def apply_convention(report: TraceReport, spec: Spec, convention: FlopConvention) -> TraceReport:
    """`report` with every row's FLOPs recounted under `convention`, its convention line
    saying so (unchanged for the default)."""
    if convention.is_default:
        return report
    rows = tuple(replace(r, flops=recount(spec, r, convention)) for r in report.rows)
    return replace(report, rows=rows,
                   convention=f"Recounted: {convention.describe()}; from the trace's own "
                   f"count: {report.convention}")
