"""`tfcli memory --gpu NAME` and `--fit`: the plan against one accelerator's memory, and the
largest batch and the longest context that still fit (binary search over the plan itself, so
the answers agree with the breakdown: one step more does not fit)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from tfcli.analysis.gpus.catalog import CPU_NAME, Accelerator
from tfcli.analysis.memory.plan import MemoryOptions, MemoryPlan, build_memory_plan
from tfcli.spec.model import Spec

# What a GPU's memory cannot give a model: the CUDA context, cuBLAS / cuDNN workspaces and
# NCCL buffers (about 0.5-1 GiB on current drivers), and the caching allocator's fragmentation.
CONTEXT_RESERVE = 2**30
FRAGMENTATION = 0.05  # share of the memory lost to fragmentation
MAX_BATCH = 1 << 24  # the search stops there: "at least" beyond it


@dataclass(frozen=True)
class GpuFit:
    gpu: str
    memory_bytes: int
    reserve_bytes: int
    need_bytes: int
    reserve_for: str = "the CUDA context and fragmentation"  # what the reserve stands for

    @property
    def usable_bytes(self) -> int:
        return self.memory_bytes - self.reserve_bytes

    @property
    def fits(self) -> bool:
        return self.need_bytes <= self.usable_bytes

    def to_dict(self) -> dict[str, object]:
        return {"gpu": self.gpu, "memory_bytes": self.memory_bytes,
                "reserve_bytes": self.reserve_bytes, "reserve_for": self.reserve_for,
                "usable_bytes": self.usable_bytes,
                "need_bytes": self.need_bytes, "fits": self.fits}


@dataclass(frozen=True)
class FitSearch:
    """The largest batch at the plan's seq_len and the longest seq_len at its batch that fit;
    None when not even 1 fits. `*_capped`: the search hit its bound (MAX_BATCH, max_seq_len)."""

    max_batch: int | None
    max_seq_len: int | None
    batch_capped: bool
    seq_capped: bool

    def to_dict(self) -> dict[str, object]:
        return {"max_batch": self.max_batch, "max_seq_len": self.max_seq_len,
                "batch_capped": self.batch_capped, "seq_len_capped": self.seq_capped}


@dataclass(frozen=True)
class MemoryReport:
    """What `tfcli memory` prints: the plan, and with --gpu its verdict and --fit's answers."""

    plan: MemoryPlan
    fit: GpuFit | None = None
    search: FitSearch | None = None

    def to_dict(self) -> dict[str, object]:
        out = self.plan.to_dict()
        if self.fit is not None:
            out["gpu"] = self.fit.to_dict()
        if self.search is not None:
            out["fit"] = self.search.to_dict()
        return out

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        header, rows = self.plan.csv_rows()
        if self.fit is not None:
            rows.append([f"usable on {self.fit.gpu}", self.fit.usable_bytes,
                         "fits" if self.fit.fits else "does not fit"])
        if self.search is not None:
            rows.append(["largest batch that fits", self.search.max_batch or 0, ""])
            rows.append(["longest seq_len that fits", self.search.max_seq_len or 0, ""])
        return header, rows


def reserve_bytes(memory: int) -> int:
    return CONTEXT_RESERVE + int(FRAGMENTATION * memory)


def gpu_fit(plan: MemoryPlan, gpu: Accelerator) -> GpuFit:
    # the same share held back on this machine's memory (--gpu cpu), for another reason: the
    # operating system and other processes hold some of it, and no allocator packs perfectly
    reason = ("the operating system, other processes and fragmentation" if gpu.name == CPU_NAME
              else GpuFit.reserve_for)
    return GpuFit(gpu.name, gpu.memory_bytes, reserve_bytes(gpu.memory_bytes), plan.total, reason)


def largest(fits: Callable[[int], bool], bound: int) -> tuple[int | None, bool]:
    """The largest n in [1, bound] with fits(n) (fits monotone: True then False), and whether
    the bound itself fits."""
    if not fits(1):
        return None, False
    lo, hi = 1, 2
    while hi <= bound and fits(hi):
        lo, hi = hi, hi * 2
    if hi > bound:
        if fits(bound):
            return bound, True
        hi = bound
    while hi - lo > 1:  # fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo, False


def fit_search(spec: Spec, options: MemoryOptions, usable: int) -> FitSearch:
    """Binary searches over build_memory_plan: batch at the options' seq_len, then seq_len (up
    to max_seq_len) at the options' batch."""
    seq_len = options.resolved_seq_len(spec)

    def batch_fits(b: int) -> bool:
        return build_memory_plan(spec, replace(options, batch=b, seq_len=seq_len)).total <= usable

    def seq_fits(t: int) -> bool:
        return build_memory_plan(spec, replace(options, seq_len=t)).total <= usable

    max_batch, batch_capped = largest(batch_fits, MAX_BATCH)
    max_seq, seq_capped = largest(seq_fits, spec.max_seq_len)
    return FitSearch(max_batch, max_seq, batch_capped, seq_capped)


def build_memory_report(spec: Spec, options: MemoryOptions, gpu: Accelerator | None = None,
                        search: bool = False) -> MemoryReport:
    """The plan, its verdict on `gpu`, and with `search` the largest batch and context."""
    plan = build_memory_plan(spec, options)
    if gpu is None:
        return MemoryReport(plan)
    fit = gpu_fit(plan, gpu)
    found = fit_search(spec, options, fit.usable_bytes) if search else None
    return MemoryReport(plan, fit, found)
