"""tfcli memory against CUDA's own allocator (issue 17, acceptance 5): a 1B-class model built from
its config with random weights (no download), on one GPU.

Measured with torch.cuda.max_memory_allocated (the caching allocator's high-water mark of
allocated bytes; reserved-but-free blocks are not in it), each against the plan's figure:
  1. inference: the peak above the weights of one no_grad forward (use_cache=False), eager and
     sdpa, at each --batch x --seq-len, against `activations` of build_memory_plan;
  2. training activations: the bytes saved_tensors_hooks sees in one forward, eager / sdpa /
     gradient checkpointing, against saved_activations (the same count as the CPU tests);
  3. one float32 AdamW step: the step's peak, and the optimizer state after it, against the
     plan's total and its `optimizer state`.
Ratios are printed (estimate / measured); --json writes them to a file as well.

    python benchmarks/memory_gpu.py                       # Llama-3.2-1B shape, bf16 inference
    python benchmarks/memory_gpu.py --seq-len 512,2048 --batch 1,4 --json $OUT/memory_gpu.json
    python benchmarks/memory_gpu.py --dry-run             # no GPU: the estimates alone

Nothing here runs in CI (it needs a GPU); the CPU checks of the same figures are in
tests/parity/memory_families.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import transformers as tf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tfcli.analysis.memory.activations import Workload  # noqa: E402
from tfcli.analysis.memory.plan import MemoryOptions, build_memory_plan  # noqa: E402
from tfcli.analysis.memory.saved import saved_activations  # noqa: E402
from tfcli.checkpoints import spec_from_config_dir  # noqa: E402
from tfcli.spec.model import Spec  # noqa: E402

# Llama 3.2 1B's shape (its config.json), random weights: 1,235,814,400 parameters (tied head)
LLAMA_1B = dict(hidden_size=2048, intermediate_size=8192, num_attention_heads=32,
                num_key_value_heads=8, num_hidden_layers=16, vocab_size=128256,
                max_position_embeddings=8192, rope_theta=500000.0, tie_word_embeddings=True)


def build(layers: int | None) -> tuple[tf.LlamaConfig, Spec]:
    """The config (cut to `layers`) and the spec tfcli reads from its config.json."""
    config = tf.LlamaConfig(**(LLAMA_1B | ({"num_hidden_layers": layers} if layers else {})))
    with tempfile.TemporaryDirectory() as folder:
        config.save_pretrained(folder)
        spec = spec_from_config_dir(folder)
    return config, spec


def materialise(config: tf.LlamaConfig, dtype: torch.dtype) -> tf.PreTrainedModel:
    """The model initialised on the GPU itself (its RoPE buffers included), in `dtype`."""
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = tf.LlamaForCausalLM(config)
    return model.to(dtype)


def peak_above(run: Callable[[], Any]) -> int:
    """max_memory_allocated during run() above what was allocated before it."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = run()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out
    return peak


def saved_bytes(model: tf.PreTrainedModel, ids: torch.Tensor) -> int:
    known = {p.untyped_storage().data_ptr() for p in model.parameters()}
    known.add(ids.untyped_storage().data_ptr())
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        key = t.untyped_storage().data_ptr()
        if key not in known:
            seen.setdefault(key, t.untyped_storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(input_ids=ids, labels=ids, use_cache=False).loss
    del out
    return sum(seen.values())


def row(what: str, estimate: int, measured: int | None) -> dict[str, Any]:
    ratio = estimate / measured if measured else None
    shown = "-" if measured is None else f"{measured / 2**20:10.1f}"
    print(f"{what:<44} est {estimate / 2**20:10.1f} MiB  measured {shown} MiB  "
          f"ratio {'-' if ratio is None else f'{ratio:.3f}'}")
    return {"what": what, "estimate_bytes": estimate, "measured_bytes": measured, "ratio": ratio}


def inference_rows(model: Any, spec: Spec, sizes: list[tuple[int, int]], live: bool) -> list[dict]:
    rows = []
    for attention in ("eager", "sdpa"):
        if live:
            model.set_attn_implementation(attention)
        for batch, seq_len in sizes:
            plan = build_memory_plan(spec, MemoryOptions(batch=batch, seq_len=seq_len,
                                                         dtype="bfloat16", attention=attention))
            measured = None
            if live:
                ids = torch.randint(0, spec.vocab_size, (batch, seq_len), device="cuda")
                with torch.no_grad():
                    measured = peak_above(lambda: model(input_ids=ids, use_cache=False).logits)
            rows.append(row(f"inference {attention} b{batch} s{seq_len}",
                            plan.part("activations"), measured))
    return rows


def saved_rows(model: Any, spec: Spec, sizes: list[tuple[int, int]], live: bool) -> list[dict]:
    rows = []
    for attention, recompute in (("eager", "none"), ("sdpa", "none"), ("sdpa", "full")):
        if live:
            model.set_attn_implementation(attention)
            model.train()
            if recompute == "full":
                model.activation_checkpointing_enable(
                    activation_checkpointing_kwargs={"use_reentrant": False})
        for batch, seq_len in sizes:
            estimate = saved_activations(spec, Workload(batch, seq_len, 2), attention,
                                         recompute).total
            measured = None
            if live:
                ids = torch.randint(0, spec.vocab_size, (batch, seq_len), device="cuda")
                measured = saved_bytes(model, ids)
            rows.append(row(f"saved {attention} recompute {recompute} b{batch} s{seq_len}",
                            estimate, measured))
        if live and recompute == "full":
            model.activation_checkpointing_disable()
    return rows


def training_rows(spec: Spec, layers: int | None, batch: int, seq_len: int,
                  live: bool) -> list[dict]:
    """One float32 AdamW step: the plan's total (weights, gradients, Adam, activations, logits)
    against the step's peak from an empty GPU."""
    plan = build_memory_plan(spec, MemoryOptions(batch=batch, seq_len=seq_len, dtype="float32",
                                                 train=True, attention="sdpa"))
    measured = state = None
    if live:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        model = materialise(build(layers)[0], torch.float32)  # float32: the weights are the master
        model.set_attn_implementation("sdpa")
        model.train()
        params = list(model.parameters())
        opt = torch.optim.AdamW(params, lr=1e-5)
        ids = torch.randint(0, spec.vocab_size, (batch, seq_len), device="cuda")
        model(input_ids=ids, labels=ids, use_cache=False).loss.backward()
        opt.step()
        torch.cuda.synchronize()
        measured = torch.cuda.max_memory_allocated()
        state = sum(v.nbytes for s in opt.state.values() for v in s.values()
                    if isinstance(v, torch.Tensor))
    return [row(f"train step float32 total b{batch} s{seq_len}", plan.total, measured),
            row("  AdamW state after the step", plan.part("optimizer state"), state)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", default="1,4")
    parser.add_argument("--seq-len", default="512,2048")
    parser.add_argument("--layers", type=int, default=None, help="cut the model to K layers")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    parser.add_argument("--dry-run", action="store_true", help="estimates only (no GPU)")
    args = parser.parse_args()
    live = not args.dry_run
    if live and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run with --dry-run for the estimates alone")
    sizes = [(b, t) for b in map(int, args.batch.split(","))
             for t in map(int, args.seq_len.split(","))]
    config, spec = build(args.layers)
    model = materialise(config, torch.bfloat16) if live else None
    print(f"Llama-3.2-1B shape, random weights: {spec.n_layers} layers, d_model {spec.d_model}; "
          f"{torch.cuda.get_device_name() if live else 'dry run'}")
    rows = inference_rows(model, spec, sizes, live) + saved_rows(model, spec, sizes[:2], live)
    del model
    rows += training_rows(spec, args.layers, sizes[0][0], sizes[0][1], live)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
