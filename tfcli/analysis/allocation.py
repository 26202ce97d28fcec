"""The memory guard: what a command will allocate, against what this process may really use.

A command estimates its whole peak (weights + live activations + logits + loss copies, and
for generation the KV cache and the logits kept per step) BEFORE it allocates anything, and
`check_fits` refuses, in one line with both figures, when the estimate is over the limit.

The limit is the smallest of (each read where it exists; a missing file just drops out):
  * MemAvailable in /proc/meminfo (else free physical pages from sysconf);
  * RLIMIT_AS and RLIMIT_DATA soft limits, minus what the process already maps (VmSize /
    VmData in /proc/self/status; getrusage's peak RSS where there is no /proc);
  * cgroup v2 memory.max - memory.current, for the process's own cgroup and every parent
    (a parent's limit binds too); cgroup v1 memory.limit_in_bytes - memory.usage_in_bytes.
Every path is a LimitSources field, so tests can point them at fake files.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tfcli.analysis.generate.mode import GenerationMode
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import kv_cache_bytes, total_parameters
from tfcli.spec.model import Spec

UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a page-rounded 2^63 - 1; anything this big


@dataclass(frozen=True)
class MemoryLimit:
    bytes: int
    source: str  # which limit binds, e.g. "cgroup memory.max" or "RLIMIT_AS"


@dataclass(frozen=True)
class LimitSources:
    """Where the limits are read; tests replace the paths and the rlimit reader."""

    meminfo: str = "/proc/meminfo"
    status: str = "/proc/self/status"
    cgroup: str = "/proc/self/cgroup"
    cgroup_root: str = "/sys/fs/cgroup"
    getrlimit: Callable[[int], tuple[int, int]] = resource.getrlimit


@dataclass(frozen=True)
class MemoryEstimate:
    """A command's peak memory, by part, in bytes."""

    what: str  # e.g. "run of gpt2 (float32)"
    parts: tuple[tuple[str, int], ...]  # ("weights", 497_759_232), ("logits", ...), ...
    reduce: str = ""  # the options that make it smaller, e.g. "--batch, --seq-len or --layers"

    @property
    def total(self) -> int:
        return sum(n for _, n in self.parts)


def gb(n: int | float) -> str:
    """Bytes in GiB (2^30, the unit `tfcli params` prints memory in, so the guard's figure and
    params' agree) with enough digits to tell small figures apart: 256.9 GiB, 3.65 GiB,
    0.000222 GiB; past an exbibyte, 2.65e+18 GiB (a float's digits beyond the 16th are noise)."""
    value = n / 2**30
    if value >= 1e6:
        return f"{value:.3g} GiB"
    return f"{value:,.1f} GiB" if value >= 10 else f"{value:.3g} GiB"


# --- reading the limits ------------------------------------------------------------------------


def _read(path: str | Path, limit: int = 1 << 16) -> str | None:
    """A small text file (at most `limit` bytes), or None when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("ascii", "replace")
    except OSError:
        return None


def _field_kb(text: str | None, name: str) -> int | None:
    """`Name:   123 kB` lines of /proc/meminfo and /proc/self/status, in bytes."""
    for line in (text or "").splitlines():
        key, _, rest = line.partition(":")
        if key == name and rest.split() and rest.split()[0].isdigit():
            return int(rest.split()[0]) * 1024
    return None


def _number(text: str | None) -> int | None:
    """A cgroup counter file: an integer, or None for "max", missing or garbage."""
    value = (text or "").strip()
    return int(value) if value.isdigit() and len(value) < 25 else None


def _available(src: LimitSources) -> MemoryLimit:
    free = _field_kb(_read(src.meminfo), "MemAvailable")
    if free is not None:
        return MemoryLimit(free, "MemAvailable")
    return MemoryLimit(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"),
                       "free physical memory")


def _rlimits(src: LimitSources) -> Iterator[MemoryLimit]:
    status = _read(src.status)
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports kB
    for name, kind, field_name in (("RLIMIT_AS", resource.RLIMIT_AS, "VmSize"),
                                   ("RLIMIT_DATA", resource.RLIMIT_DATA, "VmData")):
        soft, _ = src.getrlimit(kind)
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        used = _field_kb(status, field_name)
        yield MemoryLimit(max(0, soft - (peak_rss if used is None else used)), f"{name} soft limit")


def _cgroup_dirs(src: LimitSources, controller: str) -> Iterator[tuple[Path, str]]:
    """The process's cgroup folder and its parents, under the v2 or the v1 `memory` root."""
    root = Path(src.cgroup_root) if controller == "" else Path(src.cgroup_root) / controller
    own = None
    for line in (_read(src.cgroup) or "").splitlines():
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if (controller == "" and controllers == "") or controller in controllers.split(","):
            own = path.strip().lstrip("/")
    seen = set()
    here = root / own if own else root
    while True:
        if here not in seen and here.is_dir():
            seen.add(here)
            yield here, ("cgroup memory.max" if controller == "" else "cgroup memory.limit_in_bytes")
        if here == root or root not in here.parents:
            break
        here = here.parent
    if root not in seen and root.is_dir():
        yield root, "cgroup memory.max" if controller == "" else "cgroup memory.limit_in_bytes"


def _cgroups(src: LimitSources) -> Iterator[MemoryLimit]:
    for controller, limit_file, usage_file in (("", "memory.max", "memory.current"),
                                               ("memory", "memory.limit_in_bytes",
                                                "memory.usage_in_bytes")):
        for folder, source in _cgroup_dirs(src, controller):
            limit = _number(_read(folder / limit_file))
            if limit is None or limit >= UNLIMITED:
                continue
            used = _number(_read(folder / usage_file)) or 0
            yield MemoryLimit(max(0, limit - used), source)


def memory_limit(sources: LimitSources | None = None) -> MemoryLimit:
    """The most this process may still allocate, and which limit says so."""
    src = sources or LimitSources()
    candidates = [_available(src), *_rlimits(src), *_cgroups(src)]
    return min(candidates, key=lambda c: c.bytes)


# --- the check ---------------------------------------------------------------------------------


def describe(estimate: MemoryEstimate) -> str:
    """'12.8 GiB (logits 12.3 GiB, weights 0.464 GiB, ...)': the parts that matter, largest first."""
    parts = sorted((p for p in estimate.parts if p[1] > 0), key=lambda p: -p[1])
    shown = ", ".join(f"{name} {gb(n)}" for name, n in parts[:4])
    return f"{gb(estimate.total)} ({shown})" if shown else gb(estimate.total)


def check_fits(estimate: MemoryEstimate, limit: MemoryLimit | None = None) -> int:
    """The estimate's total; BadInputError, one line, when it exceeds the limit."""
    limit = memory_limit() if limit is None else limit
    if estimate.total > limit.bytes:
        reduce = f"; reduce {estimate.reduce}" if estimate.reduce else ""
        raise BadInputError(f"{estimate.what} needs about {describe(estimate)}, over the "
                            f"{gb(limit.bytes)} this process may use ({limit.source}){reduce}")
    return estimate.total


# --- what a forward pass, a run and a generation hold at their peak ----------------------------

QUERY_BLOCK_BYTES = 1 << 22  # the engine's attention computes ~4 MB of scores per query block
MIN_QUERY_BLOCK = 16
LOSS_COPIES = 3  # cross_entropy: float64 logits, shifted, and exp(shifted) alive together...
LOSS_CHUNK_ELEMENTS = 1 << 22  # ...for one chunk of rows at a time (tfcli.analysis.run.forward)
RUN_OPTIONS = "--batch, --seq-len or --layers"
GENERATE_OPTIONS = "--max-new-tokens, the prompt or --layers"


@dataclass(frozen=True)
class Workload:
    """How a command will use a model: the sizes its peak memory depends on."""

    batch: int = 1
    seq_len: int = 1  # tokens per sequence (encoder-decoder: the source)
    decoder_len: int = 0  # encoder-decoder: decoder tokens
    loss: bool = False  # run: a float64 cross-entropy over the logits (encoders: a 2nd forward)
    new_tokens: int = 0  # generate: tokens generated (the KV cache, logits kept per step)
    mode: GenerationMode = GenerationMode.cache  # generate: check and compare run both

    @property
    def runs(self) -> int:
        return 2 if self.mode.runs_both else 1


def _workers() -> int:
    from tfcli.engine.parallel import WORKERS  # query blocks run on this many threads at once

    return WORKERS


def forward_activation_bytes(spec: Spec, batch: int, length: int, keys: int,
                             itemsize: int) -> int:
    """Live activations of one block on (batch, length) queries over `keys` keys: the residual
    stream and its norm, Q/K/V and the merged heads, the FFN hidden (x3: up, gate, product), the
    score blocks in flight, and a T5 relative bias (H, T, S)."""
    s, tokens = spec, batch * length
    ffn_width = max(s.d_ff, s.expert_width * s.experts_per_token + s.shared_width) \
        if s.n_experts else s.d_ff
    per_token = (4 * s.d_model + (2 * s.n_heads + 2 * s.kv_heads) * s.head_dim + 3 * ffn_width)
    block = min(length, max(MIN_QUERY_BLOCK, QUERY_BLOCK_BYTES // (s.n_heads * keys * itemsize)))
    scores = 2 * batch * s.n_heads * block * keys * min(_workers(), -(-length // block))
    bias = s.n_heads * length * keys if s.positions == "relative" else 0
    return itemsize * (tokens * per_token + scores + bias)


def _engine_peak(spec: Spec, batch: int, length: int, itemsize: int) -> int | None:
    """The engine's largest live set outside the logits (tfcli.analysis.memory.activations, checked
    against tracemalloc within 10%), or None for the variants it does not model: the logits
    are their own part here, so the logits phase counts without them."""
    from tfcli.analysis.memory.activations import Workload as Forward, inference_peak

    try:
        peak = inference_peak(spec, Forward(batch, length, itemsize, _workers()), "engine")
    except BadInputError:
        return None
    logits = batch * length * spec.vocab_size * itemsize if spec.lm_head else 0
    return max(b - (logits if name == "logits" else 0) for name, b in peak.phases)


def _activations(spec: Spec, batch: int, src: int, tgt: int, itemsize: int) -> int:
    if spec.family != "encoder-decoder":
        measured = _engine_peak(spec, batch, src, itemsize)
        return measured if measured is not None else \
            forward_activation_bytes(spec, batch, src, src, itemsize)
    encoder_out = batch * src * spec.d_model * itemsize  # kept while the decoder runs
    return encoder_out + max(forward_activation_bytes(spec, batch, src, src, itemsize),
                             forward_activation_bytes(spec, batch, tgt, max(tgt, src), itemsize))


def run_estimate(spec: Spec, dtype: np.dtype | type | str, work: Workload) -> MemoryEstimate:
    """`tfcli run`: weights, one forward's activations, the logits, and the loss's copies."""
    itemsize = np.dtype(dtype).itemsize
    src = work.seq_len
    tgt = work.decoder_len if spec.family == "encoder-decoder" else src
    logits_per = work.batch * tgt * spec.vocab_size if spec.lm_head else 0  # (B, T, V)
    encoder_mlm = work.loss and spec.family == "encoder"  # a second forward on masked input
    parts = (
        ("weights", total_parameters(spec) * itemsize),
        ("activations", _activations(spec, work.batch, src, tgt, itemsize)),
        ("logits", logits_per * itemsize * (2 if encoder_mlm else 1)),
        ("loss", min(logits_per, LOSS_CHUNK_ELEMENTS + spec.vocab_size) * 8 * LOSS_COPIES
         if work.loss else 0),
    )
    return MemoryEstimate(f"run of {spec.name} ({np.dtype(dtype).name}, batch {work.batch}, "
                          f"{tgt} tokens)", parts, RUN_OPTIONS)


def generate_estimate(spec: Spec, dtype: np.dtype | type | str, work: Workload) -> MemoryEstimate:
    """`tfcli generate`: weights, the KV cache, the widest forward (the prompt, or the whole
    context when uncached), and the (V,) logits kept for every new token of every run."""
    itemsize = np.dtype(dtype).itemsize
    enc_dec = spec.family == "encoder-decoder"
    prompt = 1 if enc_dec else work.seq_len
    context = prompt + work.new_tokens
    widest = context if work.mode.runs_uncached else prompt  # uncached: the whole prefix each step
    cache = 0 if not work.mode.runs_cached else kv_cache_bytes(
        spec, context, work.batch, np.dtype(dtype).name, work.seq_len if enc_dec else 0)
    parts = (
        ("weights", total_parameters(spec) * itemsize),
        ("KV cache", cache),
        ("activations", _activations(spec, work.batch, work.seq_len if enc_dec else widest,
                                     widest, itemsize)),
        ("logits", work.runs * work.new_tokens * work.batch * spec.vocab_size * itemsize),
    )
    return MemoryEstimate(f"generating {work.new_tokens} tokens with {spec.name} "
                          f"({np.dtype(dtype).name})", parts, GENERATE_OPTIONS)


def weights_estimate(spec: Spec, dtype: np.dtype | type | str) -> MemoryEstimate:
    itemsize = np.dtype(dtype).itemsize
    return MemoryEstimate(f"{spec.name} in {np.dtype(dtype).name}",
                          (("weights", total_parameters(spec) * itemsize),), "--layers")
