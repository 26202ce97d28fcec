"""The result objects of `tfcli perf` (tfcli.analysis.perf.estimate builds them): one accelerator, one
batch and one sequence length; their JSON (to_dict) and CSV rows (metric_rows)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tfcli.analysis.trace.conventions import FlopConvention
from tfcli.analysis.gpus.catalog import Accelerator


@dataclass(frozen=True)
class OpTime:
    """One trace row on the roofline."""

    path: str
    op: str
    flops: int
    bytes: int
    seconds: float
    bound: str  # "compute" or "memory"

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


@dataclass(frozen=True)
class Prefill:
    tokens: int
    flops: int
    bytes: int
    compute_seconds: float  # FLOPs / (peak x MFU)
    roofline_seconds: float  # sum over ops of max(FLOPs / peak, bytes / bandwidth) + op cost
    memory_bound_ops: int
    ops: int
    slowest: tuple[OpTime, ...]
    attention: str = "eager"  # how the roofline counts the score matrix's bytes
    op_overhead_seconds: float = 0.0  # the part of roofline_seconds that is fixed cost per op

    @property
    def seconds(self) -> float:
        return max(self.compute_seconds, self.roofline_seconds)


@dataclass(frozen=True)
class Decode:
    batch: int
    context: int  # cached tokens each new token attends to
    weight_bytes: int
    kv_bytes: int
    flops: int  # one step: `batch` new tokens
    memory_seconds: float
    compute_seconds: float
    op_overhead_seconds: float = 0.0  # the step's ops x the accelerator's fixed cost per op

    @property
    def seconds(self) -> float:
        return max(self.memory_seconds, self.compute_seconds) + self.op_overhead_seconds

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.seconds


@dataclass(frozen=True)
class Training:
    forward_flops_per_token: float
    multiplier: int  # 3, or 4 with full recomputation
    matmul_params: int  # N of 6N
    step_tokens: int  # over all GPUs
    step_seconds: float
    tokens: float | None
    gpus: int

    @property
    def flops_per_token(self) -> float:
        return self.multiplier * self.forward_flops_per_token

    @property
    def six_n(self) -> int:
        return 6 * self.matmul_params

    @property
    def tokens_per_s(self) -> float:
        return self.step_tokens / self.step_seconds

    @property
    def gpu_hours(self) -> float | None:
        return None if self.tokens is None else \
            self.tokens / self.tokens_per_s * self.gpus / 3600


@dataclass(frozen=True)
class PerfEstimate:
    spec_name: str
    accelerator: Accelerator
    dtype: str
    kv_dtype: str
    batch: int
    seq_len: int
    mfu: float
    convention: FlopConvention
    prefill: Prefill
    decode: Decode | None
    training: Training | None
    notes: tuple[str, ...]

    @property
    def ttft_seconds(self) -> float:
        return self.prefill.seconds

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec_name, "gpu": self.accelerator.to_dict(), "dtype": self.dtype,
                "kv_dtype": self.kv_dtype, "batch": self.batch, "seq_len": self.seq_len,
                "mfu": self.mfu, "convention": self.convention.to_dict(),
                "prefill": _prefill_dict(self.prefill), "ttft_seconds": self.ttft_seconds,
                "decode": _decode_dict(self.decode), "training": _training_dict(self.training),
                "notes": list(self.notes)}

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        return ["metric", "value", "unit"], [list(r) for r in metric_rows(self)]


def _prefill_dict(p: Prefill) -> dict[str, Any]:
    return {"tokens": p.tokens, "flops": p.flops, "bytes": p.bytes,
            "compute_seconds": p.compute_seconds, "roofline_seconds": p.roofline_seconds,
            "seconds": p.seconds, "memory_bound_ops": p.memory_bound_ops, "ops": p.ops,
            "attention": p.attention, "op_overhead_seconds": p.op_overhead_seconds,
            "slowest_ops": [o.to_dict() for o in p.slowest]}


def _decode_dict(d: Decode | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {"batch": d.batch, "context": d.context, "weight_bytes": d.weight_bytes,
            "kv_bytes": d.kv_bytes, "flops": d.flops, "memory_seconds": d.memory_seconds,
            "compute_seconds": d.compute_seconds, "op_overhead_seconds": d.op_overhead_seconds,
            "step_seconds": d.seconds,
            "tokens_per_s": d.tokens_per_s}


def _training_dict(t: Training | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"forward_flops_per_token": t.forward_flops_per_token, "multiplier": t.multiplier,
            "flops_per_token": t.flops_per_token, "matmul_params": t.matmul_params,
            "six_n_flops_per_token": t.six_n, "step_tokens": t.step_tokens,
            "step_seconds": t.step_seconds, "tokens_per_s": t.tokens_per_s,
            "tokens": t.tokens, "gpus": t.gpus, "gpu_hours": t.gpu_hours}


def metric_rows(e: PerfEstimate) -> list[tuple[str, float | int | str, str]]:
    """(metric, value, unit): the CSV rows, and what the table shows."""
    p = e.prefill
    rows: list[tuple[str, float | int | str, str]] = [
        ("prefill FLOPs", p.flops, "FLOP"), ("prefill bytes (roofline)", p.bytes, "B"),
        (f"prefill compute-bound at MFU {e.mfu:g}", p.compute_seconds, "s"),
        ("prefill per-op roofline", p.roofline_seconds, "s"),
        ("prefill fixed cost per op (in the roofline)", p.op_overhead_seconds, "s"),
        ("prefill memory-bound ops", f"{p.memory_bound_ops} of {p.ops}", ""),
        ("time to first token", e.ttft_seconds, "s"),
    ]
    if e.decode is not None:
        d = e.decode
        rows += [("decode weight bytes per step", d.weight_bytes, "B"),
                 ("decode KV-cache bytes per step", d.kv_bytes, "B"),
                 ("decode FLOPs per step", d.flops, "FLOP"),
                 ("decode step (memory)", d.memory_seconds, "s"),
                 ("decode step (compute)", d.compute_seconds, "s"),
                 ("decode step (fixed cost per op)", d.op_overhead_seconds, "s"),
                 ("decode tokens/s", d.tokens_per_s, "token/s")]
    if e.training is not None:
        t = e.training
        rows += [("training FLOPs per token (exact)", t.flops_per_token, "FLOP"),
                 ("training FLOPs per token (6N)", t.six_n, "FLOP"),
                 ("step time", t.step_seconds, "s"), ("training tokens/s", t.tokens_per_s,
                                                      "token/s")]
        if t.gpu_hours is not None:
            rows += [("GPU-hours", t.gpu_hours, "h"), ("wall-clock", t.gpu_hours / t.gpus, "h")]
    return rows
