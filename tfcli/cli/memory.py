"""`tfcli memory`: will it fit — the memory plan for inference or training, a GPU verdict and
--fit. A plain function on the shared option types, registered in tfcli/cli/app.py with `command`."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from tfcli.cli.options import FormatOpt, LayersOpt, SpecArg, load_spec_arg
from tfcli.cli.sweep import SweepPlotOpt, check_plot, emit_sweep
from tfcli.cli.sweep import axes as sweep_axes
from tfcli.core.dtypes import KvDtype, MemoryDtype
from tfcli.render.output import OutputFormat, emit


def _choice(name: str, values: tuple[str, ...]) -> type[Enum]:
    return Enum(name, [(v, v) for v in values], type=str)  # type: ignore[return-value]


Attention = _choice("Attention", ("sdpa", "eager", "engine"))
Optimizer = _choice("Optimizer", ("adamw", "adam", "sgd", "adam8bit"))
Recompute = _choice("MemoryRecompute", ("none", "selective", "full"))


def _names(text: str) -> tuple[str, ...]:
    """A comma list as names, empty entries kept (for the caller's check to refuse)."""
    return tuple(t.strip() for t in text.split(","))


def _lora_targets(text: str | None) -> tuple[str, ...]:
    """--lora-targets as names, empty ones kept for the plan to refuse (without --lora-rank it
    is refused before, by cli_modes)."""
    from tfcli.analysis.memory.plan import MemoryOptions

    return MemoryOptions.lora_targets if text is None else _names(text)


def memory_cmd(
    spec: SpecArg,
    batch: Annotated[str, typer.Option("--batch", metavar="N[,N...]", help="Sequences per forward (training: per GPU); a comma list (1,8,32) sweeps.")] = "1",
    seq_len: Annotated[str | None, typer.Option("--seq-len", metavar="N[,N...]", help="Tokens per sequence (default min(max_seq_len, 1024)); a comma list (1024,8192) sweeps.")] = None,
    dtype: Annotated[MemoryDtype | None, typer.Option("--dtype", help="Weights (and compute) dtype (default bfloat16; float32 with --attention engine, which computes in float32); int8 / int4 quantise the blocks' linear weights, computing in bfloat16.")] = None,  # type: ignore[valid-type]
    kv_dtype: Annotated[KvDtype | None, typer.Option("--kv-dtype", help="KV-cache dtype (default: the compute dtype).")] = None,
    attention: Annotated[Attention, typer.Option("--attention", help="sdpa (fused / flash), eager (scores materialised) or engine (tfcli's own NumPy engine).")] = Attention.sdpa,  # type: ignore[attr-defined]
    group_size: Annotated[int, typer.Option(min=1, help="int8 / int4: weights per float16 scale.")] = 128,
    train: Annotated[bool, typer.Option("--train", help="Training: gradients, optimizer state, master weights, saved activations.")] = False,
    optimizer: Annotated[Optimizer, typer.Option("--optimizer", help="Training optimizer.")] = Optimizer.adamw,  # type: ignore[attr-defined]
    recompute: Annotated[Recompute, typer.Option("--recompute", help="Activation recomputation: none, selective (attention core) or full (gradient checkpointing).")] = Recompute.none,  # type: ignore[attr-defined]
    dropout: Annotated[bool, typer.Option("--dropout", help="Training: the model's dropouts are on (GPT-2, BERT configs): their saved noise counts.")] = False,
    gpus: Annotated[int, typer.Option("--gpus", min=1, help="Training GPUs (data parallel x --tp).")] = 1,
    zero: Annotated[int, typer.Option("--zero", min=0, max=3, help="ZeRO stage over the data-parallel GPUs: 1 optimizer, 2 + gradients, 3 + weights.")] = 0,
    tp: Annotated[int, typer.Option("--tp", min=1, help="Tensor-parallel GPUs (divides --gpus).")] = 1,
    lora_rank: Annotated[int | None, typer.Option("--lora-rank", min=1, help="LoRA: frozen base, trainable rank-r adapters.")] = None,
    lora_targets: Annotated[str | None, typer.Option("--lora-targets", help="LoRA: the block linears adapted, of q,k,v,o,gate,up,down (default q,v).")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="Accelerator (`tfcli gpus`): does it fit, with a reserve for the CUDA context and fragmentation.")] = None,
    fit: Annotated[bool, typer.Option("--fit", help="With --gpu: the largest batch and the longest seq_len that fit.")] = False,
    fused: Annotated[str | None, typer.Option("--fused", metavar="LIST", help="Projections the checkpoint's transformers modules fuse into one linear, whose output stays alive through q/k/v views: qkv, gate_up, both (qkv,gate_up), falcon_qkv (Falcon's query_key_value and its own attention module) or none; Phi-3 fuses both, GPT-NeoX qkv, Falcon falcon_qkv (bundled phi-3-mini, pythia-1.4b, falcon-7b). Default: from a model directory's config.json, else none.")] = None,
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
    from tfcli.analysis.gpus.catalog import find_gpu
    from tfcli.analysis.memory.fit import build_memory_report
    from tfcli.analysis.memory.plan import MemoryOptions
    from tfcli.core.errors import BadInputError
    from tfcli.render.memory import render_memory

    model_spec = load_spec_arg(spec, layers)
    points = sweep_axes(batch, seq_len, MemoryOptions().resolved_seq_len(model_spec))
    if fit and points.is_sweep:
        raise BadInputError("--fit searches the batch and seq_len itself: give --batch and "
                            "--seq-len one value each")
    check_plot(plot, points.is_sweep)
    options = MemoryOptions(
        batch=points.batches[0], seq_len=None if seq_len is None else points.seq_lens[0],
        dtype=_dtype(dtype, attention.value), attention=attention.value,
        kv_dtype=kv_dtype.value if kv_dtype is not None else None, group_size=group_size,
        train=train, optimizer=optimizer.value, recompute=recompute.value, gpus=gpus, zero=zero,
        tp=tp, lora_rank=lora_rank, lora_targets=_lora_targets(lora_targets),
        dropout=dropout,
        workers=_engine_workers() if attention.value == "engine" else 1,
        fused=_fused(fused, spec),
        stored_bytes=None if train or layers else _stored_bytes(spec, model_spec))
    accelerator = find_gpu(gpu, rates=False) if gpu is not None else None  # its memory only
    if points.is_sweep:
        from tfcli.analysis.sweep import memory_sweep

        emit_sweep(memory_sweep(model_spec, options, points, accelerator), fmt, plot)
        return
    report = build_memory_report(model_spec, options, accelerator, fit)
    emit(report, fmt, lambda: render_memory(report))


def _dtype(dtype: MemoryDtype | None, attention: str) -> str:  # type: ignore[valid-type]
    """The dtype asked for, else bfloat16 (what models are run in on GPUs), or float32 for
    tfcli's own engine, which computes in float32."""
    if dtype is not None:
        return str(dtype.value)
    return "float32" if attention == "engine" else "bfloat16"


def _stored_bytes(spec_arg: str, model_spec: object) -> int | None:
    """A GGUF or quantised checkpoint's weight bytes as stored (their own dtypes, packing and
    scales), which inference loads as they are; None for anything else."""
    from tfcli.analysis.stored import stored_for

    stored = stored_for(spec_arg, model_spec)  # type: ignore[arg-type]
    if stored is None or not (stored.format == "gguf" or stored.quantized) or not stored.n_bytes:
        return None
    return stored.n_bytes


def _fused(text: str | None, spec_arg: str) -> tuple[str, ...]:
    """--fused as given ('none': nothing fused), else what the model directory's modules fuse."""
    from tfcli.analysis.memory.activations import FUSIONS, check_fused, checkpoint_fusions
    from tfcli.core.errors import check_names_listed_once

    if text is None:
        return tuple(sorted(checkpoint_fusions(spec_arg)))
    if text.strip() == "none":
        return ()
    fused = _names(text)
    check_names_listed_once("--fused", fused, (*FUSIONS, "none"))
    check_fused(frozenset(fused))
    return fused


def _engine_workers() -> int:
    from tfcli.engine.parallel import WORKERS  # the engine's thread pool runs this many blocks

    return WORKERS
