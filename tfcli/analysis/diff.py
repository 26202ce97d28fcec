"""`tfcli diff A B`: two specs compared figure by figure, each figure as `tfcli params` and
`tfcli trace` compute it for one spec alone.

Sections, in order: architecture (layers, widths, heads, vocabulary, context), parameters per
component (the params report's rows, aligned by component
name; a component only one side has is shown as such), totals, FLOPs per token (the analytic
trace at one sequence length for both), KV cache (bytes per token, and at one context for both,
with and without sliding windows), weights memory per dtype, and the inference memory plan of
`tfcli memory` (weights, KV cache, peak activations, total) where it models both specs. Each row carries A, B, B - A and
B / A; nothing here is estimated that the single-spec commands do not already report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tfcli.analysis.params_report import ParamsReport, build_params_report
from tfcli.analysis.trace.build import build_trace
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

ARCHITECTURE, PARAMETERS, TOTALS, FLOPS, KV_CACHE, MEMORY, INFERENCE = (
    "architecture", "parameters", "totals", "FLOPs per token", "KV cache", "weights memory",
    "inference memory")
SECTIONS = (ARCHITECTURE, PARAMETERS, TOTALS, FLOPS, KV_CACHE, MEMORY, INFERENCE)
# the Spec's sizes shown in the architecture section, in this order
SHAPE_FIELDS = ("encoder_layers", "decoder_layers", "d_model", "n_heads", "n_kv_heads", "d_head",
                "d_ff", "vocab_size", "max_seq_len")
NAMES_SHOWN = 8  # components named in the "only A has" note; the table has them all
BOTH, ONLY_A, ONLY_B = "both", "A", "B"

Number = int | float


@dataclass(frozen=True)
class DiffRow:
    """One figure of both specs; `a` / `b` None where that side has no such component."""

    section: str
    name: str
    a: Number | None
    b: Number | None
    unit: str = ""  # "parameters", "bytes", "FLOP"

    @property
    def present(self) -> str:
        """both, A (only A has it) or B."""
        return BOTH if self.a is not None and self.b is not None else (ONLY_A if self.b is None else ONLY_B)

    @property
    def difference(self) -> Number | None:
        """B - A, counting a missing side as 0 (a component only B has adds all of it)."""
        return (self.b or 0) - (self.a or 0)

    @property
    def ratio(self) -> float | None:
        """B / A; None where A is missing or zero (no finite ratio)."""
        return None if not self.a or self.b is None else self.b / self.a

    def to_dict(self) -> dict[str, Any]:
        return {"section": self.section, "name": self.name, "a": self.a, "b": self.b,
                "difference": self.difference, "ratio": self.ratio, "present": self.present,
                "unit": self.unit}

    def csv_row(self) -> list[object]:
        return [self.section, self.name, self.a, self.b, self.difference, self.ratio,
                self.present, self.unit]


CSV_HEADER = ["section", "name", "a", "b", "difference", "ratio", "present", "unit"]


@dataclass(frozen=True)
class SpecDiff:
    a_name: str
    b_name: str
    seq_len: int  # the trace's tokens per sequence for FLOPs per token, and the KV context
    kv_dtype: str
    rows: tuple[DiffRow, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def section(self, name: str) -> list[DiffRow]:
        return [r for r in self.rows if r.section == name]

    def row(self, section: str, name: str) -> DiffRow:
        return next(r for r in self.rows if r.section == section and r.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a_name, "b": self.b_name, "seq_len": self.seq_len,
                "kv_dtype": self.kv_dtype, "rows": [r.to_dict() for r in self.rows],
                "notes": list(self.notes)}

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        return list(CSV_HEADER), [r.csv_row() for r in self.rows]


# --- the rows of each section ----------------------------------------------------------------


def _architecture_rows(a: Spec, b: Spec) -> list[DiffRow]:
    return [DiffRow(ARCHITECTURE, name, getattr(a, name), getattr(b, name)) for name in SHAPE_FIELDS]


def _component_rows(a: ParamsReport, b: ParamsReport) -> list[DiffRow]:
    """Aligned by component name: A's order, then the components only B has, in B's order."""
    counts_a = {r.name: r.count for r in a.rows}
    counts_b = {r.name: r.count for r in b.rows}
    names = list(counts_a) + [n for n in counts_b if n not in counts_a]
    return [DiffRow(PARAMETERS, n, counts_a.get(n), counts_b.get(n), "parameters") for n in names]


def _total_rows(a: ParamsReport, b: ParamsReport) -> list[DiffRow]:
    figures = (("total", lambda r: r.total), ("non-embedding", lambda r: r.non_embedding),
               ("active per token", lambda r: r.active), ("attention", lambda r: r.attention),
               ("FFN", lambda r: r.ffn))
    return [DiffRow(TOTALS, name, get(a), get(b), "parameters") for name, get in figures]


def _flop_rows(a: Spec, b: Spec, seq_len: int) -> list[DiffRow]:
    ta, tb = build_trace(a, seq_len=seq_len), build_trace(b, seq_len=seq_len)
    return [DiffRow(FLOPS, f"forward, {seq_len} tokens", ta.flops_per_token, tb.flops_per_token,
                    "FLOP")]


def _kv_rows(a: ParamsReport, b: ParamsReport) -> list[DiffRow]:
    ka, kb = a.kv_cache, b.kv_cache
    context = f"{ka.context} tokens × batch {ka.batch}"
    rows = [DiffRow(KV_CACHE, f"per token ({ka.dtype})", ka.per_token_bytes, kb.per_token_bytes,
                    "bytes"),
            DiffRow(KV_CACHE, f"{context}, every token kept", ka.total_bytes, kb.total_bytes, "bytes")]
    if ka.window_bytes is not None or kb.window_bytes is not None:  # a window shortens one side
        rows.append(DiffRow(KV_CACHE, f"{context}, sliding windows honoured",
                            _needed(a), _needed(b), "bytes"))
    return rows


def _needed(report: ParamsReport) -> int:
    kv = report.kv_cache
    return kv.total_bytes if kv.window_bytes is None else kv.window_bytes


def _memory_rows(a: ParamsReport, b: ParamsReport) -> list[DiffRow]:
    return [DiffRow(MEMORY, dtype, a.memory_bytes[dtype], b.memory_bytes.get(dtype), "bytes")
            for dtype in a.memory_bytes]


def _inference_rows(a: Spec, b: Spec, seq_len: int, batch: int,
                    kv_dtype: str) -> tuple[list[DiffRow], list[str]]:
    """`tfcli memory`'s inference plan of each (bfloat16 weights, sdpa attention, the KV cache
    in kv_dtype), part by part; none, and a note why, where it does not model one of them."""
    from tfcli.analysis.memory.plan import MemoryOptions, build_memory_plan

    options = MemoryOptions(batch=batch, seq_len=seq_len, kv_dtype=kv_dtype)
    try:
        pa, pb = build_memory_plan(a, options), build_memory_plan(b, options)
    except BadInputError as exc:
        return [], [f"inference memory left out: {exc.message}"]
    names = list(dict.fromkeys(p.name for p in pa.parts + pb.parts))
    rows = [DiffRow(INFERENCE, name, pa.part(name), pb.part(name), "bytes") for name in names]
    rows.append(DiffRow(INFERENCE, f"total ({seq_len} tokens × batch {batch}, bfloat16, sdpa)",
                        pa.total, pb.total, "bytes"))
    return rows, []


# --- the diff ----------------------------------------------------------------------------------


def default_seq_len(a: Spec, b: Spec) -> int:
    """The longest sequence both specs take: the shorter max_seq_len."""
    return min(a.max_seq_len, b.max_seq_len)


def build_spec_diff(a: Spec, b: Spec, *, seq_len: int | None = None, batch: int = 1,
                    kv_dtype: str = "float32") -> SpecDiff:
    """A against B: every row's A and B are what `tfcli params` / `tfcli trace` report for
    that spec alone at the same seq_len (the KV context too), batch and kv_dtype."""
    seq = default_seq_len(a, b) if seq_len is None else seq_len
    pa = build_params_report(a, context=seq, batch=batch, kv_dtype=kv_dtype)
    pb = build_params_report(b, context=seq, batch=batch, kv_dtype=kv_dtype)
    inference, left_out = _inference_rows(a, b, seq, batch, kv_dtype)
    rows = (_architecture_rows(a, b) + _component_rows(pa, pb) + _total_rows(pa, pb)
            + _flop_rows(a, b, seq) + _kv_rows(pa, pb) + _memory_rows(pa, pb) + inference)
    return SpecDiff(a.name, b.name, seq, kv_dtype, tuple(rows),
                    tuple(_notes(a, b, pa, pb) + left_out))


def _notes(a: Spec, b: Spec, pa: ParamsReport, pb: ParamsReport) -> list[str]:
    notes = []
    only = [(side, [r.name for r in rows]) for side, rows in
            (("A", _only(pa, pb)), ("B", _only(pb, pa)))]
    notes += [f"only {side} ({name}) has {_listed(names)}"
              for (side, names), name in zip(only, (a.name, b.name)) if names]
    for spec in (a, b):
        if spec.sliding_window is not None and spec.family == "decoder":
            notes.append(f"{spec.name}: sliding window of {spec.sliding_window:,} tokens")
    return notes


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    more = len(names) - NAMES_SHOWN
    return shown if more <= 0 else f"{shown} and {more} more"


def _only(x: ParamsReport, y: ParamsReport) -> list[Any]:
    names = {r.name for r in y.rows}
    return [r for r in x.rows if r.name not in names]
