"""`tfcli gpus` and `tfcli perf`: the accelerator catalog and the roofline estimate.
Plain functions on the shared option types, registered in tfcli/cli/app.py with `command`."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

import typer

from tfcli.api import model as api
from tfcli.cli.options import FormatOpt, LayersOpt, SpecArg
from tfcli.cli.sweep import SweepPlotOpt, emit_sweep
from tfcli.render.output import OutputFormat, emit


def gpus_cmd(
    measure_cpu: Annotated[bool, typer.Option("--measure-cpu", help="Also measure this machine's CPU (float32 GEMM peak, memory bandwidth; about 3 s): the `cpu` entry of --gpu.")] = False,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """The accelerators --gpu takes: memory, dense peak TFLOP/s per dtype, memory bandwidth, and
    the spec sheet each figure comes from.

    Example: tfcli gpus --format csv
    """
    from tfcli.render.gpus import render_gpus

    gpus = api.gpus(measure_cpu=measure_cpu)
    emit(gpus, fmt, lambda: render_gpus(gpus))


class PerfDtype(str, Enum):
    """`tfcli perf --dtype / --kv-dtype`: what the matmuls (and the cache) run in."""

    bfloat16 = "bfloat16"
    float16 = "float16"
    float8 = "float8"
    float32 = "float32"


class ExpertDtype(str, Enum):
    """`tfcli perf --expert-dtype`: the routed experts' matrices as stored."""

    mxfp4 = "mxfp4"
    bfloat16 = "bfloat16"
    float16 = "float16"
    float8 = "float8"
    float32 = "float32"


class Attention(str, Enum):
    eager = "eager"
    flash = "flash"


class Recompute(str, Enum):
    none = "none"
    full = "full"


# FLOP conventions, shared by `tfcli trace` and `tfcli perf` (the defaults count as trace does).
MacsOpt = Annotated[bool, typer.Option("--macs", help="Count a multiply-add as 1 (MACs) in matmul rows, not 2.")]
CausalHalfOpt = Annotated[bool, typer.Option("--causal-half", help="Halve causal self-attention's QK^T and PV (the masked half is skipped).")]
WindowOpt = Annotated[bool, typer.Option("--window", help="Count only the keys inside a sliding window (local layers).")]
MatmulsOnlyOpt = Annotated[bool, typer.Option("--matmuls-only", help="Count matmul rows only (no norms, softmax, adds, activations).")]


def flop_convention(macs: bool, causal_half: bool, window: bool, matmuls_only: bool) -> Any:
    """The FlopConvention the four options ask for."""
    from tfcli.analysis.trace.conventions import FlopConvention

    return FlopConvention(macs=macs, causal_half=causal_half, window=window,
                          matmuls_only=matmuls_only)


def perf_cmd(
    spec: SpecArg,
    gpu: Annotated[str, typer.Option("--gpu", help="Accelerator (`tfcli gpus`), or cpu: this machine, measured.", show_default=False)],
    batch: Annotated[str, typer.Option("--batch", metavar="N[,N...]", help="Sequences per batch (per GPU when training); a comma list (1,8,32) sweeps.")] = "1",
    seq_len: Annotated[str | None, typer.Option("--seq-len", metavar="N[,N...]", help="Prompt length and decode context; training sequence length (default min(max_seq_len, 1024)); a comma list (1024,8192) sweeps.")] = None,
    dtype: Annotated[PerfDtype | None, typer.Option("--dtype", help="Matmul and weight dtype (default: bfloat16, else float16, else float32, as the accelerator has).")] = None,
    kv_dtype: Annotated[PerfDtype | None, typer.Option("--kv-dtype", help="KV-cache dtype (default: --dtype; bfloat16 for float8).")] = None,
    expert_dtype: Annotated[ExpertDtype | None, typer.Option("--expert-dtype", help="The routed experts' matrices as stored (mxfp4: gpt-oss's checkpoints, 4.25 bits a weight); default --dtype.")] = None,
    mfu: Annotated[float, typer.Option("--mfu", help="Model FLOP/s utilisation, in (0, 1]: the share of peak a compute-bound step reaches.")] = 0.5,
    train: Annotated[bool, typer.Option("--train", help="Also estimate training: FLOPs per token, step time, tokens/s.")] = False,
    recompute: Annotated[Recompute, typer.Option("--recompute", help="Training: none (x3 forward) or full recomputation (x4).")] = Recompute.none,
    tokens: Annotated[float | None, typer.Option("--train-tokens", help="Training tokens D (e.g. 2e12): GPU-hours and wall-clock.")] = None,
    gpus: Annotated[int, typer.Option("--gpus", min=1, help="Training: data-parallel GPUs (--batch each).")] = 1,
    attention: Annotated[Attention, typer.Option("--attention", help="Prefill roofline: eager (the score matrix written and read) or flash (kept on chip).")] = Attention.eager,
    macs: MacsOpt = False,
    causal_half: CausalHalfOpt = False,
    window: WindowOpt = False,
    matmuls_only: MatmulsOnlyOpt = False,
    layers: LayersOpt = None,
    plot: SweepPlotOpt = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Roofline estimate on one accelerator: prefill time (compute-bound at --mfu, and per-op
    roofline), time to first token, decode tokens/s (weights + KV cache read per step), and
    with --train FLOPs per token (exact vs 6N), step time and GPU-hours. Comma lists in --batch
    and --seq-len sweep: one row per point, a chart, --plot FILE.png.

    Example: tfcli perf llama-2-7b --gpu a100 --seq-len 4096 --train --train-tokens 2e12 --gpus 8
    """
    from tfcli.analysis.sweep import SweepResult
    from tfcli.render.perf import render_perf

    result = api.load(spec, layers=layers).perf(
        gpu, batch=batch, seq_len=seq_len, dtype=None if dtype is None else dtype.value,
        kv_dtype=None if kv_dtype is None else kv_dtype.value,
        expert_dtype=None if expert_dtype is None else expert_dtype.value, mfu=mfu, train=train,
        recompute=recompute.value, train_tokens=tokens, gpus=gpus, attention=attention.value,
        convention=flop_convention(macs, causal_half, window, matmuls_only), plot=plot)
    if isinstance(result, SweepResult):
        emit_sweep(result, fmt, None)  # the chart's PNG, if asked for, is written
        return
    emit(result, fmt, lambda: render_perf(result))
