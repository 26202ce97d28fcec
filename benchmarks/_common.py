"""Shared by benchmarks/forward.py and benchmarks/generate.py: the same random GPT-2 small on
both sides, interleaved timing, machine facts (threads, BLAS, load), GEMM peak and memory
bandwidth, and plain-text / JSON output.

The machines here are shared and noisy: both sides are always timed in the same run, in
alternating order, and the scripts report ratios.
"""

from __future__ import annotations

import argparse

import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
from transformers.utils import logging as hf_logging

from tfcli.checkpoints import load_checkpoint
from tfcli.engine.blas import blas_threads
from tfcli.engine.layout import fused_projection
from tfcli.engine.parallel import MIN_ROW_BLOCK, WORKERS, linear, parallel_for, split
from tfcli.engine.weights import AttentionWeights, FFNWeights, Weights
from tfcli.spec.model import Spec

SEED = 0
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


# --- the model pair --------------------------------------------------------------------------


def gpt2_pair(attn_implementation: str) -> tuple[GPT2LMHeadModel, Spec, Weights]:
    """GPT2LMHeadModel(GPT2Config()) from torch.manual_seed(0), in eval mode, and the same
    weights loaded into tfcli (float32) from its save_pretrained directory."""
    return _saved_pair(lambda: GPT2LMHeadModel(GPT2Config(attn_implementation=attn_implementation)))


# A Llama-style model of GPT-2 small's size (124M parameters): GQA 12 query heads over 4 K/V
# heads, SwiGLU (d_ff 2048), RMSNorm, RoPE, untied head, 32000-token vocabulary.
LLAMA_SMALL = {"hidden_size": 768, "intermediate_size": 2048, "num_hidden_layers": 12,
               "num_attention_heads": 12, "num_key_value_heads": 4, "vocab_size": 32000,
               "max_position_embeddings": 2048, "tie_word_embeddings": False}


def llama_pair(attn_implementation: str) -> tuple[LlamaForCausalLM, Spec, Weights]:
    """LlamaForCausalLM(LlamaConfig(**LLAMA_SMALL)) from torch.manual_seed(0) and the same
    weights in tfcli, as gpt2_pair."""
    config = LlamaConfig(**LLAMA_SMALL, attn_implementation=attn_implementation)
    return _saved_pair(lambda: LlamaForCausalLM(config))


def model_pair(name: str, attn_implementation: str) -> tuple[Any, Spec, Weights]:
    """The benchmark's model by name: gpt2 (GPT-2 small) or llama (LLAMA_SMALL)."""
    return {"gpt2": gpt2_pair, "llama": llama_pair}[name](attn_implementation)


MODEL_TITLES = {"gpt2": "GPT-2 small (random, seed 0)",
                "llama": "Llama-style 124M (random, seed 0; GQA 12/4, SwiGLU 2048, 12 layers)"}


def _saved_pair(build: Callable[[], Any]) -> tuple[Any, Spec, Weights]:
    """The transformers model build() makes after torch.manual_seed(SEED), in eval mode, and
    its save_pretrained weights loaded into tfcli (float32)."""
    hf_logging.disable_progress_bar()
    torch.manual_seed(SEED)
    model = build().eval()
    with tempfile.TemporaryDirectory() as directory:
        model.save_pretrained(directory)
        spec, weights = load_checkpoint(directory, np.float32)
    return model, spec, weights


def random_tokens(vocab_size: int, length: int) -> np.ndarray:
    """(1, length) int64 token ids from default_rng(SEED)."""
    return np.random.default_rng(SEED).integers(0, vocab_size, size=(1, length), dtype=np.int64)


# --- timing ----------------------------------------------------------------------------------


def seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleave(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, list[Any]]:
    """Call every fn once per round, reversing the order each round (A B, B A, ...), so slow
    spells on a shared machine hit both sides alike. Returns each fn's results, in order."""
    results: dict[str, list[Any]] = {name: [] for name in fns}
    names = list(fns)
    for round_ in range(repeats):
        for name in (names if round_ % 2 == 0 else names[::-1]):
            results[name].append(fns[name]())
    return results


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


# --- the forward pass's own GEMMs -------------------------------------------------------------


def _projections(owner: object, names: tuple[str, ...], biases: tuple[str, ...]) -> list[np.ndarray]:
    """The weight(s) the engine multiplies by for these projections: one fused array when they
    are column views of one (engine.layout), else each on its own, as parallel.linear_split."""
    fused = fused_projection(owner, names, biases)
    return [fused[0]] if fused is not None else [getattr(owner, name) for name in names]


def forward_gemms(spec: Spec, weights: Weights, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (a, b) operands of every matrix product of a decoder's forward pass over n tokens,
    batch 1, in the engine's order (labelled_gemms without the labels)."""
    return [(a, b) for _, a, b in labelled_gemms(spec, weights, n)]


def labelled_gemms(spec: Spec, weights: Weights,
                   n: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(kind, a, b) for every matrix product of a decoder's forward pass over n tokens, batch
    1, in the engine's order: per block the Q/K/V projection(s) (qkv), attention's two batched
    products over the FULL n x n square (scores, mix: GQA's query groups folded into the query
    axis, as engine.attention.attend does; keys transposed as a view), the out projection
    (out), the FFN's up and gate (up) and down (down) projections; then the logits. The right
    operands of projections are the model's own arrays (the tied head the transposed view the
    engine reads); the left ones random, one array per shape."""
    rng, made = np.random.default_rng(SEED), {}

    def left(*shape: int) -> np.ndarray:
        if shape not in made:
            made[shape] = rng.standard_normal(shape, dtype=np.float32)
        return made[shape]

    kv, dh, group = spec.kv_heads, spec.d_head, spec.n_heads // spec.kv_heads
    pairs = []
    for block in weights.decoder.blocks:
        attn, mlp = block.attn, block.ffn
        assert isinstance(attn, AttentionWeights) and isinstance(mlp, FFNWeights)
        for w in _projections(attn, ("wq", "wk", "wv"), ("bq", "bk", "bv")):
            pairs.append(("qkv", left(n, w.shape[0]), w))  # (n, d) @ (d, m)
        keys_t = left(1, kv, n, dh).swapaxes(-1, -2)  # (1, Hkv, dh, n), a view
        pairs.append(("scores", left(1, kv, group * n, dh), keys_t))  # (1, Hkv, g*n, n)
        pairs.append(("mix", left(1, kv, group * n, n), left(1, kv, n, dh)))  # (1, Hkv, g*n, dh)
        pairs.append(("out", left(n, attn.wo.shape[0]), attn.wo))  # (n, H*dh) @ (H*dh, d)
        ups = (_projections(mlp, ("w_gate", "w_up"), ("b_gate", "b_up"))
               if mlp.w_gate is not None else [mlp.w_up])
        for w in ups:
            pairs.append(("up", left(n, w.shape[0]), w))  # (n, d) @ (d, d_ff [x2])
        pairs.append(("down", left(n, mlp.w_down.shape[0]), mlp.w_down))  # (n, d_ff) @ (d_ff, d)
    head = weights.lm_head if weights.lm_head is not None else weights.token_embedding.T
    pairs.append(("logits", left(n, head.shape[0]), head))  # (n, d) @ (d, V)
    return pairs


def run_gemms(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
    """The products back to back through np.matmul, OpenBLAS on one thread per core (NumPy's
    own way of using the cores; every product allocates its result, as the engine's do)."""
    with blas_threads(WORKERS):
        for a, b in pairs:
            np.matmul(a, b)


def run_gemms_pooled(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
    """The same products spread over the cores the engine's way: OpenBLAS on one thread, each
    projection split by columns (engine.parallel.linear), each batched product by blocks of
    query rows (as attention's query blocks). Where other processes keep a core busy,
    OpenBLAS's own threads stall waiting for each other and this is the faster reference."""
    with blas_threads(1):
        for a, b in pairs:
            if a.ndim == 2:
                linear(a, b)
                continue
            out = np.empty((*a.shape[:-1], b.shape[-1]), dtype=np.result_type(a, b))
            rows = a.shape[-2]

            def block(r0: int, r1: int, a: np.ndarray = a, b: np.ndarray = b,
                      out: np.ndarray = out) -> None:
                np.matmul(a[..., r0:r1, :], b, out=out[..., r0:r1, :])

            parallel_for(rows, split(rows, MIN_ROW_BLOCK, blocks_per_worker=1), block)


def gemm_flops(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> float:
    """2 m k n summed over the products (batched ones times their batch)."""
    return float(sum(2 * np.prod(a.shape[:-1]) * a.shape[-1] * b.shape[-1] for a, b in pairs))


# --- machine facts ---------------------------------------------------------------------------


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def numpy_blas() -> str:
    """The BLAS numpy was built against: 'scipy-openblas 0.3.31 (... Haswell MAX_THREADS=64)'."""
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception:  # older numpy: no dict mode
        return "unknown"
    config = blas.get("openblas configuration", "")
    return f"{blas.get('name', '?')} {blas.get('version', '')} ({config})".strip()


def engine_revision() -> str:
    """The last commit that touched tfcli/, plus '+ uncommitted tfcli/ changes' when there are."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    try:
        commit = git("log", "-1", "--format=%h", "--", "../tfcli")
        dirty = git("status", "--porcelain", "--", "../tfcli")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return commit + (" + uncommitted tfcli/ changes" if dirty else "")


def machine_facts() -> dict[str, Any]:
    return {
        "tfcli_revision": engine_revision(),
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "numpy_blas": numpy_blas(),
        "load_average_1_5_15": load_average(),
        "thread_env": {k: os.environ[k] for k in THREAD_ENV if k in os.environ},
    }


def gemm_gflops(m: int, k: int, n: int, repeats: int) -> float:
    """Best-of-`repeats` NumPy float32 (m, k) @ (k, n), in GFLOP/s (2 m k n FLOPs)."""
    rng = np.random.default_rng(SEED)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    a @ b  # warm-up: threads started, pages touched
    best = min(seconds(lambda: a @ b) for _ in range(repeats))
    return 2 * m * k * n / best / 1e9


def memory_bandwidth(n_bytes: int, repeats: int) -> dict[str, float]:
    """Best-of-`repeats` bandwidths in GB/s over one float32 buffer of n_bytes (far past the
    caches), each a different way to stream it:
    copy = np.copyto into a second buffer, counted 2 * bytes (read + write), one thread;
    read_numpy_sum = np.sum, counted bytes, one thread;
    read_torch_sum = torch.sum, counted bytes, torch's threads;
    read_numpy_gemv = (1, K) @ (K, 4096) through numpy's BLAS, counted bytes, BLAS threads
    (the access pattern of a decode step: every weight read once)."""
    src = np.ones(n_bytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    matrix = src.reshape(-1, 4096)  # (K, 4096), a view
    row = np.ones((1, matrix.shape[0]), dtype=np.float32)  # (1, K)
    as_torch = torch.from_numpy(src)
    kernels = {
        "copy": (lambda: np.copyto(dst, src), 2 * src.nbytes),
        "read_numpy_sum": (lambda: src.sum(), src.nbytes),
        "read_torch_sum": (lambda: as_torch.sum(), src.nbytes),
        "read_numpy_gemv": (lambda: row @ matrix, src.nbytes),
    }
    best = {}
    for name, (kernel, moved) in kernels.items():
        kernel()  # warm-up: pages touched, threads started
        best[name] = moved / min(seconds(kernel) for _ in range(repeats)) / 1e9
    return best


def configure_torch(threads: int | None) -> None:
    """torch.set_num_threads(threads) when given; otherwise torch keeps its default."""
    if threads:
        torch.set_num_threads(threads)


# --- output ----------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain right-aligned text table; floats are shown with 2 decimals unless pre-formatted."""
    cells = [[f"{c:.2f}" if isinstance(c, float) else str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def add_common_options(parser: argparse.ArgumentParser, quick_help: str) -> None:
    """The options every side-by-side script shares."""
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--attn", choices=("sdpa", "eager"), default="sdpa",
                        help="transformers attention implementation (default sdpa)")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch.set_num_threads for transformers (default: torch's own)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")


def int_list(text: str) -> list[int]:
    """'128,512,1024' -> [128, 512, 1024]."""
    return [int(part) for part in text.split(",")]


def print_header(title: str, results: dict[str, Any]) -> None:
    """The setup lines every benchmark prints above its table."""
    facts = results["machine"]
    print(f"{title}; transformers attention: {results['attn_implementation']}; "
          f"{results['repeats']} interleaved repeats, median")
    print(f"torch threads {facts['torch_threads']}, CPUs {facts['cpus']}, numpy BLAS: "
          f"{facts['numpy_blas']}; thread variables {facts['thread_env'] or 'unset'}")
    print(f"tfcli {facts['tfcli_revision']}; load average (1/5/15 min) at start "
          f"{facts['load_average_1_5_15']}, at end {results['load_average_end']}")


def verdict(value: float, target: float, higher_is_better: bool) -> str:
    ok = value >= target if higher_is_better else value <= target
    return "meets" if ok else "MISSES"


def print_json(results: dict[str, Any]) -> None:
    print(json.dumps(results, indent=2, default=float))


def gpt2_results(benchmark: str, model: GPT2LMHeadModel, repeats: int,
                 facts: dict[str, Any]) -> dict[str, Any]:
    """The fields every GPT-2 benchmark's results start with."""
    return {
        "benchmark": benchmark, "model": "gpt2-small random (seed 0)",
        "attn_implementation": model.config._attn_implementation, "repeats": repeats,
        "machine": facts, "load_average_end": load_average(),
    }


def emit(results: dict[str, Any], as_json: bool, report: Callable[[dict[str, Any]], None]) -> None:
    """Print the results as JSON, or through the script's own table report."""
    if as_json:
        print_json(results)
    else:
        report(results)
