"""`tfcli perf`: a roofline estimate of prefill, decode and training time on one accelerator.

Every figure is arithmetic on the trace's rows (FLOPs, shapes, owned parameters) and the
accelerator's peak FLOP/s and bandwidth (tfcli.analysis.gpus.catalog); docs/perf.md states each formula
and what it leaves out. One point per call: `build_perf_estimate(spec, options)` for one batch
and one sequence length (sweeps call it once per point).

- prefill: compute-bound time = FLOPs / (peak x MFU), and the per-op roofline: each trace row
  alone at max(FLOPs / peak, bytes / bandwidth) plus the accelerator's fixed cost per op
  (measured for cpu, 0 in the catalog), summed (eager: no fusion, no overlap); the estimate is
  the slower of the two; time to first token = that estimate.
- decode (decoder-only specs): one step of `batch` new tokens over `seq_len` cached ones reads
  every weight a token uses (gathered embedding rows excepted) and the whole KV cache;
  step time = max(bytes / bandwidth, step FLOPs / peak) + ops x the fixed cost per op.
- training: FLOPs per token = forward x 3 (backward twice the forward), x 4 with full
  recomputation; beside it 6N; step time and GPU-hours at the MFU.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from tfcli.analysis.trace.conventions import PAIR_OPS, FlopConvention, apply_convention, recount
from tfcli.analysis.gpus.catalog import Accelerator, find_gpu
from tfcli.analysis.perf.result import Decode, OpTime, PerfEstimate, Prefill, Training
from tfcli.analysis.trace.build import MAX_SIZE, build_trace
from tfcli.analysis.trace.rows import TraceRow
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import components, inactive_expert_parameters, kv_cache_bytes, \
    kv_cache_window_bytes, total_parameters
from tfcli.spec.blueprint import dense_ffn_components
from tfcli.spec.model import Spec

PERF_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float8": 1, "float32": 4}
# --expert-dtype: the routed experts' matrices as stored, bytes a weight; MXFP4 (OCP
# Microscaling; gpt-oss's checkpoints): a 4-bit E2M1 value plus an 8-bit scale per 32 weights
EXPERT_DTYPE_BYTES = PERF_DTYPE_BYTES | {"mxfp4": (4 + 8 / 32) / 8}
DEFAULT_DTYPES = ("bfloat16", "float16", "float32")  # the first the accelerator has
DEFAULT_MFU = 0.5  # a stated assumption: well-tuned dense training reaches 0.4-0.6
# below this a step's seconds outgrow a float (5e-324: inf, then 0 tokens/s and a division by
# zero) long before they mean anything
MIN_MFU = 1e-6
DEFAULT_SEQ_LEN = 1024  # or max_seq_len when shorter
RECOMPUTE = {"none": 3, "full": 4}  # training FLOPs / forward FLOPs
GATHERED_OPS = frozenset({"token_embedding", "position_embedding", "token_type_embedding"})
SCORE_OPS = PAIR_OPS | {"softmax", "softcap"}  # rows over the (queries, keys) score matrix
TOP_OPS = 10  # the slowest prefill ops listed
ATTENTION_KINDS = ("eager", "flash")
_ATTENTION = re.compile(r"\.(cross_)?attn$")  # a self- or cross-attention sublayer's rows


@dataclass(frozen=True)
class PerfOptions:
    """One point of `tfcli perf`."""

    gpu: str
    batch: int = 1
    seq_len: int | None = None  # prompt length, decode context, training sequence length
    dtype: str | None = None  # compute and weight dtype; None: the first of DEFAULT_DTYPES
    kv_dtype: str | None = None  # None: dtype (float8: bfloat16)
    expert_dtype: str | None = None  # the routed experts' matrices; None: dtype
    mfu: float = DEFAULT_MFU
    train: bool = False
    recompute: str = "none"
    attention: str = "eager"  # the prefill roofline's: eager (scores in memory) or flash
    tokens: float | None = None  # training tokens D (--train-tokens), for GPU-hours
    gpus: int = 1
    convention: FlopConvention = field(default_factory=FlopConvention)


# --- options ------------------------------------------------------------------------------------


def check_options(options: PerfOptions) -> None:
    """BadInputError naming the option for an MFU outside (0, 1] and other impossible values."""
    if options.expert_dtype is not None and options.expert_dtype not in EXPERT_DTYPE_BYTES:
        raise BadInputError(f"--expert-dtype must be one of {', '.join(EXPERT_DTYPE_BYTES)}, "
                            f"got {options.expert_dtype!r}")
    if not (0 < options.mfu <= 1):  # also refuses NaN
        raise BadInputError(f"--mfu must be in (0, 1] (a fraction of the peak), got {options.mfu!r}")
    if options.mfu < MIN_MFU:
        raise BadInputError(f"--mfu must be at least {MIN_MFU:g} (a millionth of the peak), got "
                            f"{options.mfu!r}")
    if options.attention not in ATTENTION_KINDS:
        raise BadInputError(f"--attention must be one of {', '.join(ATTENTION_KINDS)}, got "
                            f"'{options.attention[:20]}'")
    if options.recompute not in RECOMPUTE:
        raise BadInputError(f"--recompute must be one of {', '.join(RECOMPUTE)}, got "
                            f"'{options.recompute[:20]}'")
    if not (1 <= options.gpus <= MAX_SIZE):
        raise BadInputError(f"--gpus must be between 1 and 2^40, got {options.gpus}")
    if options.tokens is not None and not (0 < options.tokens < 1e30):
        raise BadInputError(f"--train-tokens must be a positive count below 1e30, got {options.tokens!r}")
    for name, dtype in (("--dtype", options.dtype), ("--kv-dtype", options.kv_dtype)):
        if dtype is not None and dtype not in PERF_DTYPE_BYTES:
            raise BadInputError(f"{name} must be one of {', '.join(PERF_DTYPE_BYTES)}, got "
                                f"'{dtype[:20]}'")


def _dtype(gpu: Accelerator, asked: str | None) -> str:
    if asked is not None:
        try:
            gpu.peak_flops(asked)
        except BadInputError as exc:  # the chip has no such figure: name the option
            raise BadInputError(f"--dtype {asked}: {exc.message}") from None
        return asked
    return next(d for d in DEFAULT_DTYPES if d in gpu.dtypes())


def _kv_dtype(dtype: str, asked: str | None) -> str:
    return asked or ("bfloat16" if dtype == "float8" else dtype)


def _activation_dtype(dtype: str) -> str:
    """The trace's activation dtype: float8 matmuls read and write bfloat16 activations."""
    return "float32" if dtype == "float32" else "bfloat16" if dtype == "float8" else dtype


# --- prefill ------------------------------------------------------------------------------------


def _elements(row: TraceRow, attention: str) -> int:
    """Activation elements an op reads and writes: its inputs and its output; under flash
    attention the score matrix never reaches memory (QK^T reads q and k, PV reads v and writes
    the output, softmax moves nothing)."""
    if attention == "flash" and row.op in SCORE_OPS and _ATTENTION.search(row.path):
        if row.op == "scores":
            return sum(math.prod(s) for s in row.inputs)
        return math.prod(row.inputs[1]) + math.prod(row.output) if row.op == "weighted_sum" else 0
    return math.prod(row.output) + sum(math.prod(s) for s in row.inputs)


def _expert_matrix_share(spec: Spec) -> float:
    """The share of one routed expert's parameters in its matrices (the rest: biases)."""
    parts = dense_ffn_components(spec, spec.expert_width)
    return sum(c.per_instance for c in parts if c.role == "matrix") / sum(c.per_instance
                                                                          for c in parts)


def _weight_bytes(spec: Spec, row: TraceRow, weight_bytes: float,
                  expert_bytes: float | None) -> float:
    """Bytes a weight of `row` takes: the experts' matrices at `expert_bytes` when given (their
    biases stay at `weight_bytes`), every other weight at `weight_bytes`."""
    if row.op != "experts" or expert_bytes is None:
        return weight_bytes
    share = _expert_matrix_share(spec)
    return share * expert_bytes + (1 - share) * weight_bytes


def _row_bytes(spec: Spec, row: TraceRow, weight_bytes: float, act_bytes: float,
               attention: str = "eager", expert_bytes: float | None = None) -> int:
    """Bytes one op moves: the weights it reads, its inputs and its output. Embedding ops
    gather rows (as many as their output), not the table; a tied head reads the table."""
    elements = _elements(row, attention)
    weight_bytes = _weight_bytes(spec, row, weight_bytes, expert_bytes)
    weights = row.params
    if row.op in GATHERED_OPS:
        weights = 0
        elements += math.prod(row.output)  # the rows gathered
    elif row.op == "logits" and row.params == 0:  # tied: the embedding table is the head
        weights = spec.vocab_size * spec.logits_width
    return math.ceil(weights * weight_bytes + elements * row.repeat * act_bytes)


def _op_time(row: TraceRow, n_bytes: int, gpu: Accelerator, peak: float) -> OpTime:
    """The row on the roofline, plus the accelerator's fixed cost per op for each of the
    `repeat` ops it stands for (0 for catalog entries; the cpu entry's is measured)."""
    compute, memory = row.flops / peak, n_bytes / gpu.bandwidth
    return OpTime(row.path, row.op, row.flops, n_bytes,
                  max(compute, memory) + row.repeat * gpu.op_seconds,
                  "compute" if compute >= memory else "memory")


def _op_count(rows: Sequence[TraceRow]) -> int:
    """Ops a pass runs: a row standing for `repeat` identical blocks counts `repeat` times."""
    return sum(r.repeat for r in rows)


def prefill(spec: Spec, options: PerfOptions, gpu: Accelerator, dtype: str, seq: int) -> Prefill:
    """Prefill of `batch` prompts of `seq` tokens: compute-bound at the MFU, and the roofline."""
    act = _activation_dtype(dtype)
    lengths = {"src_len": seq, "tgt_len": seq} if spec.family == "encoder-decoder" else {}
    report = build_trace(spec, batch=options.batch, seq_len=seq, dtype=act, **lengths)
    report = apply_convention(report, spec, options.convention)
    peak = gpu.peak_flops(dtype)
    w, a = PERF_DTYPE_BYTES[dtype], PERF_DTYPE_BYTES[act]
    e = _expert_bytes(options)
    times = [_op_time(r, _row_bytes(spec, r, w, a, options.attention, e), gpu, peak)
             for r in report.rows]
    return Prefill(
        tokens=report.tokens, flops=report.total_flops, bytes=sum(t.bytes for t in times),
        compute_seconds=report.total_flops / (peak * options.mfu),
        roofline_seconds=sum(t.seconds for t in times),
        memory_bound_ops=sum(t.bound == "memory" for t in times), ops=len(times),
        slowest=tuple(sorted(times, key=lambda t: -t.seconds)[:TOP_OPS]),
        attention=options.attention,
        op_overhead_seconds=_op_count(report.rows) * gpu.op_seconds,
    )


# --- decode -------------------------------------------------------------------------------------


def _table_params(spec: Spec) -> tuple[int, bool]:
    """Parameters in gathered embedding tables, and whether the head is the token table."""
    comps = components(spec)
    tied = any(c.tied for c in comps)
    gathered = sum(c.count for c in comps if not c.tied and c.path.split(".")[0] in GATHERED_OPS)
    return gathered, tied


def _expert_bytes(options: PerfOptions) -> float | None:
    return None if options.expert_dtype is None else EXPERT_DTYPE_BYTES[options.expert_dtype]


def routed_matrix_params(spec: Spec, tokens: int = 1) -> int:
    """The routed experts' matrix parameters `tokens` tokens multiply by: min(n_experts,
    tokens x experts_per_token) experts per MoE block (uniform routing, as matmul_params)."""
    if not spec.n_experts:
        return 0
    per_expert = sum(c.per_instance for c in dense_ffn_components(spec, spec.expert_width)
                     if c.role == "matrix")
    layers = sum(spec.moe_layer_count(n) for n in (spec.encoder_layers, spec.decoder_layers))
    return min(spec.n_experts, tokens * spec.experts_per_token) * per_expert * layers


def matmul_params(spec: Spec, tokens: int = 1) -> int:
    """Parameters `tokens` tokens multiply by: all but the gathered embedding tables (a tied
    head's table counts once) and the routed experts none of them uses, at most
    min(n_experts, tokens x experts_per_token) experts per MoE block (uniform routing)."""
    gathered, tied = _table_params(spec)
    token_table = spec.vocab_size * spec.embedding_width
    n = total_parameters(spec) - gathered + (token_table if tied else 0)
    inactive = inactive_expert_parameters(spec)
    if inactive:
        k, experts = spec.experts_per_token, spec.n_experts
        used = min(experts, tokens * k)
        n -= round(inactive * (experts - used) / (experts - k))
    return n


def _decode_weight_bytes(spec: Spec, options: PerfOptions, dtype: str) -> float:
    """The weights one decode step of `batch` tokens reads: the routed experts' matrices at
    --expert-dtype when given, everything else at `dtype`."""
    every = matmul_params(spec, options.batch)
    expert_bytes = _expert_bytes(options)
    if expert_bytes is None:
        return every * PERF_DTYPE_BYTES[dtype]
    experts = routed_matrix_params(spec, options.batch)
    return (every - experts) * PERF_DTYPE_BYTES[dtype] + experts * expert_bytes


def _decode_row(row: TraceRow, context: int) -> TraceRow:
    """A seq_len-1 trace row over `context` keys: score rows widened from 1 key to `context`
    (the scores (B, H, 1, 1) -> (B, H, 1, context): the output of scores, softmax and softcap,
    the first input of softmax, softcap and weighted_sum)."""
    if row.op not in SCORE_OPS or not row.path.endswith(".attn"):
        return row
    inputs = list(row.inputs)
    if row.op != "scores":
        inputs[0] = (*inputs[0][:-1], context)
    output = row.output if row.op == "weighted_sum" else (*row.output[:-1], context)
    return replace(row, flops=row.flops * context, inputs=tuple(inputs), output=output)


def _kv_bytes(spec: Spec, context: int, batch: int, kv_dtype: str) -> int:
    """The cache one step reads: `context` tokens (a sliding-window layer: its window), from
    the float32 figure (4 bytes a value) scaled to `kv_dtype` (float8 included)."""
    values = (kv_cache_window_bytes(spec, context, batch, "float32")
              or kv_cache_bytes(spec, context, batch, "float32")) // 4
    return math.ceil(values * PERF_DTYPE_BYTES[kv_dtype])


def decode(spec: Spec, options: PerfOptions, gpu: Accelerator, dtype: str, kv_dtype: str,
           context: int) -> Decode:
    """One decode step: `batch` new tokens, each attending to `context` cached ones."""
    report = build_trace(spec, batch=options.batch, seq_len=1, dtype=_activation_dtype(dtype))
    flops = sum(recount(spec, _decode_row(r, context), options.convention) for r in report.rows)
    weights = math.ceil(_decode_weight_bytes(spec, options, dtype))
    kv = _kv_bytes(spec, context, options.batch, kv_dtype)
    return Decode(options.batch, context, weights, kv, flops,
                  (weights + kv) / gpu.bandwidth, flops / gpu.peak_flops(dtype),
                  _op_count(report.rows) * gpu.op_seconds)


# --- training -----------------------------------------------------------------------------------


def training(spec: Spec, options: PerfOptions, gpu: Accelerator, dtype: str,
             forward: Prefill) -> Training:
    """Training at the MFU: FLOPs per token from the exact forward, data parallel over gpus."""
    per_token = forward.flops / forward.tokens
    multiplier = RECOMPUTE[options.recompute]
    seconds = multiplier * forward.flops / (gpu.peak_flops(dtype) * options.mfu)
    return Training(per_token, multiplier, matmul_params(spec), forward.tokens * options.gpus,
                    seconds, options.tokens, options.gpus)


# --- entry point --------------------------------------------------------------------------------


def default_seq_len(spec: Spec) -> int:
    return min(spec.max_seq_len, DEFAULT_SEQ_LEN)


def build_perf_estimate(spec: Spec, options: PerfOptions) -> PerfEstimate:
    """The estimate at one point (options.batch, options.seq_len) on options.gpu."""
    check_options(options)
    if options.expert_dtype is not None and not spec.n_experts:
        raise BadInputError(f"--expert-dtype: {spec.name} has no experts (n_experts 0)")
    gpu = find_gpu(options.gpu, width=spec.d_model)  # cpu: its bandwidth at this width
    dtype = _dtype(gpu, options.dtype)
    kv_dtype = _kv_dtype(dtype, options.kv_dtype)
    seq = options.seq_len or default_seq_len(spec)
    first = prefill(spec, options, gpu, dtype, seq)
    steps = decode(spec, options, gpu, dtype, kv_dtype, seq) if spec.family == "decoder" else None
    train = training(spec, options, gpu, dtype, first) if options.train else None
    return PerfEstimate(spec.name, gpu, dtype, kv_dtype, options.batch, seq, options.mfu,
                        options.convention, first, steps, train, _notes(spec, gpu, steps))


def _notes(spec: Spec, gpu: Accelerator, steps: Decode | None) -> tuple[str, ...]:
    notes = []
    if gpu.source == "measured":
        notes.append(f"cpu: {gpu.note}")
    if steps is None:
        notes.append(f"no decode estimate: {spec.name} is of family {spec.family} (decode "
                     "covers decoder-only specs)")
    if spec.family == "encoder-decoder":
        notes.append("encoder-decoder: a token passes one stack, so 6N (N: both stacks) is "
                     "about twice the exact count per source + target token")
    if spec.latent_attention:
        notes.append("MLA: decode counts the kv_b expansion of the new token's latent only")
    if spec.shared_layers:
        notes.append("shared_layers: the prefill roofline reads the shared block's weights "
                     "once, and 6N counts them once though every layer runs them")
    return tuple(notes)
