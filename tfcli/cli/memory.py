"""`tfcli memory`: will it fit — the memory plan for inference or training, a GPU verdict and
--fit. A plain function on the shared option types, registered in tfcli/cli/app.py with `command`."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from tfcli.analysis.sweep import SweepResult
from tfcli.api import model as api
from tfcli.cli.options import FormatOpt, LayersOpt, SpecArg
from tfcli.cli.sweep import SweepPlotOpt
from tfcli.core.dtypes import KvDtype, MemoryDtype
from tfcli.render.output import OutputFormat, emit


class Attention(str, Enum):
    """How attention is computed: fused (sdpa, flash), eager (scores materialised), or engine."""

    sdpa = "sdpa"
    eager = "eager"
    engine = "engine"


class Optimizer(str, Enum):
    adamw = "adamw"
    adam = "adam"
    sgd = "sgd"
    adam8bit = "adam8bit"


class Recompute(str, Enum):
    none = "none"
    selective = "selective"
    full = "full"


def memory_cmd(
    spec: SpecArg,
    batch: Annotated[str, typer.Option("--batch", metavar="N[,N...]", help="Sequences per forward (training: per GPU); a comma list (1,8,32) sweeps.")] = "1",
    seq_len: Annotated[str | None, typer.Option("--seq-len", metavar="N[,N...]", help="Tokens per sequence (default min(max_seq_len, 1024)); a comma list (1024,8192) sweeps.")] = None,
    dtype: Annotated[MemoryDtype | None, typer.Option("--dtype", help="Weights (and compute) dtype (default bfloat16; float32 with --attention engine, which computes in float32); int8 / int4 quantise the blocks' linear weights, computing in bfloat16.")] = None,
    kv_dtype: Annotated[KvDtype | None, typer.Option("--kv-dtype", help="KV-cache dtype (default: the compute dtype).")] = None,
    attention: Annotated[Attention, typer.Option("--attention", help="sdpa (fused / flash), eager (scores materialised) or engine (tfcli's own NumPy engine).")] = Attention.sdpa,
    group_size: Annotated[int, typer.Option(min=1, help="int8 / int4: weights per float16 scale.")] = 128,
    train: Annotated[bool, typer.Option("--train", help="Training: gradients, optimizer state, master weights, saved activations.")] = False,
    optimizer: Annotated[Optimizer, typer.Option("--optimizer", help="Training optimizer.")] = Optimizer.adamw,
    recompute: Annotated[Recompute, typer.Option("--recompute", help="Activation recomputation: none, selective (attention core) or full (gradient checkpointing).")] = Recompute.none,
    dropout: Annotated[bool, typer.Option("--dropout", help="Training: the model's dropouts are on (GPT-2, BERT configs): their saved noise counts.")] = False,
    gpus: Annotated[int, typer.Option("--gpus", min=1, help="Training GPUs (data parallel x --tp).")] = 1,
    zero: Annotated[int, typer.Option("--zero", min=0, max=3, help="ZeRO stage over the data-parallel GPUs: 1 optimizer, 2 + gradients, 3 + weights.")] = 0,
    tp: Annotated[int, typer.Option("--tp", min=1, help="Tensor-parallel GPUs (divides --gpus).")] = 1,
    lora_rank: Annotated[int | None, typer.Option("--lora-rank", min=1, help="LoRA: frozen base, trainable rank-r adapters.")] = None,
    lora_targets: Annotated[str | None, typer.Option("--lora-targets", help="LoRA: the block linears adapted, of q,k,v,o,gate,up,down (default q,v).")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="Accelerator (`tfcli gpus`): does it fit, with a reserve for the CUDA context and fragmentation.")] = None,
    fit: Annotated[bool, typer.Option("--fit", help="With --gpu: the largest batch and the longest seq_len that fit.")] = False,
    fused: Annotated[str | None, typer.Option("--fused", metavar="LIST", help="Projections the checkpoint's transformers modules fuse into one linear, whose output stays alive through q/k/v views: qkv, gate_up, both (qkv,gate_up), falcon_qkv (Falcon's query_key_value and its own attention module), gelu_kernel (a plain MLP's tanh GELU as one torch kernel, transformers' gelu_pytorch_tanh) or none; Phi-3 fuses both, GPT-NeoX qkv, Falcon falcon_qkv, StarCoder2 gelu_kernel (bundled phi-3-mini, pythia-1.4b, falcon-7b, starcoder2-3b). Default: from a model directory's config.json, else none.")] = None,
    layers: LayersOpt = None,
    plot: SweepPlotOpt = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Will it fit: weights, KV cache and peak activations for inference; with --train also
    gradients, optimizer state, master weights and the activations kept for backward (ZeRO,
    tensor parallel, LoRA). --gpu gives a verdict, --fit the largest batch and context. Comma
    lists in --batch and --seq-len sweep: one row per point, a chart, --plot FILE.png.

    Example: tfcli memory llama-2-7b --seq-len 4096 --train --recompute full --gpu a100-80gb
    """
    from tfcli.cli.sweep import emit_sweep
    from tfcli.render.memory import render_memory

    result = api.load(spec, layers=layers).memory(
        batch=batch, seq_len=seq_len, dtype=None if dtype is None else dtype.value,
        kv_dtype=None if kv_dtype is None else kv_dtype.value, attention=attention.value,
        group_size=group_size, train=train, optimizer=optimizer.value, recompute=recompute.value,
        dropout=dropout, gpus=gpus, zero=zero, tp=tp, lora_rank=lora_rank,
        lora_targets=lora_targets, gpu=gpu, fit=fit, fused=fused, plot=plot)
    if isinstance(result, SweepResult):
        emit_sweep(result, fmt, None)  # the chart's PNG, if asked for, is written
        return
    emit(result, fmt, lambda: render_memory(result))
