"""Full forward pass: tfcli (NumPy) vs its own GEMMs vs transformers (PyTorch CPU), batch 1.

Both sides run the SAME random weights (GPT2LMHeadModel(GPT2Config()) from torch.manual_seed(0),
saved with save_pretrained and loaded by tfcli.checkpoints.load_checkpoint) on the same token
ids and return full (1, N, 50257) logits. After one warm-up each, the repeats alternate between
the two sides; the ratio of the medians is the one judged, the ratio of the best times is shown
beside it (on a contended machine it is the steadier of the two).

Per N, the OVERHEAD RATIO first: tfcli's forward time / the time of the same GEMMs run back to
back through NumPy (_common.forward_gemms: every projection with the model's own weight arrays,
attention's two batched products over the full square, the logits), timed two ways as two more
sides of the same interleaved rounds: OpenBLAS on one thread per core, and OpenBLAS on one
thread with the products split across the engine's pool (on a loaded machine OpenBLAS's own
threads stall). The faster of the two is the reference (target <= 1.10 for GPT-2, <= 1.15 for the
Llama-style model, `--model llama`); 1 - 1/ratio is the share of the forward spent outside
those GEMMs. Then tfcli ms, torch ms, ratio tfcli/torch (target <= 0.9), max |logit difference|, and tfcli's
achieved GFLOP/s (analytic FLOPs from tfcli.analysis.trace.build.build_trace / median time) as a
share of the NumPy float32 GEMM peak (target >= 70%). The peak divided by is the large square
GEMM (2048^3, best of several, measured before and after the sizes); the (N, 768) @ (768, 3072)
GEMM of GPT-2's own FFN shape is shown beside it.

    python benchmarks/forward.py                     # N = 128, 512, 1024; 5 repeats
    python benchmarks/forward.py --quick             # N = 128, 512; 2 repeats
    python benchmarks/forward.py --attn eager --json
    python benchmarks/forward.py --model llama       # GQA + SwiGLU, 124M (_common.LLAMA_SMALL)
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import torch

from _common import (
    MODEL_TITLES, add_common_options, configure_torch, emit, forward_gemms, gemm_flops,
    gemm_gflops, gpt2_results, int_list, interleave, machine_facts, median, model_pair,
    print_header, random_tokens, run_gemms, run_gemms_pooled, seconds, table, verdict,
)
from tfcli.analysis.trace.build import build_trace
from tfcli.engine.model import forward

RATIO_TARGET = 0.9  # tfcli time / torch time, at most
OVERHEAD_TARGETS = {"gpt2": 1.10, "llama": 1.15}  # tfcli time / its GEMMs' time, at most
PEAK_SHARE_TARGET = 0.70  # achieved GFLOP/s / large-GEMM peak, at least
PEAK_SIZE = 2048


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=None, help="sequence lengths, comma-separated "
                        "(default 128,512,1024; --quick 128,512)")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per side per "
                        "size (default 5; --quick 2)")
    parser.add_argument("--model", choices=sorted(OVERHEAD_TARGETS), default="gpt2",
                        help="gpt2 (GPT-2 small, default) or llama (GQA, SwiGLU, 124M)")
    add_common_options(parser, quick_help="fewer sizes and repeats")
    args = parser.parse_args()
    args.sizes = int_list(args.sizes or ("128,512" if args.quick else "128,512,1024"))
    args.repeats = args.repeats or (2 if args.quick else 5)
    return args


def measure_size(model: Any, spec: Any, weights: Any, n: int, repeats: int) -> dict[str, Any]:
    tokens = random_tokens(spec.vocab_size, n)  # (1, N)
    ids = torch.from_numpy(tokens)

    def run_tfcli() -> np.ndarray:
        return forward(spec, weights, tokens).logits  # (1, N, V)

    def run_torch() -> torch.Tensor:
        with torch.inference_mode():
            return model(ids).logits  # (1, N, V)

    ours, theirs = run_tfcli(), run_torch()  # warm-up, and the parity check
    max_diff = float(np.abs(ours - theirs.numpy()).max())
    del ours, theirs
    pairs = forward_gemms(spec, weights, n)
    run_gemms(pairs), run_gemms_pooled(pairs)  # warm-up
    times = interleave({"tfcli": lambda: seconds(run_tfcli),
                        "gemms_blas": lambda: seconds(lambda: run_gemms(pairs)),
                        "gemms_pool": lambda: seconds(lambda: run_gemms_pooled(pairs)),
                        "torch": lambda: seconds(run_torch)}, repeats)
    tfcli_s, torch_s, blas_s, pool_s = (median(times[side]) for side in (
        "tfcli", "torch", "gemms_blas", "gemms_pool"))
    # the reference: the faster of the two ways (per round too), the stricter bound
    gemm_rounds = [min(a, b) for a, b in zip(times["gemms_blas"], times["gemms_pool"])]
    gemm_s = min(blas_s, pool_s)
    flops = build_trace(spec, seq_len=n).total_flops
    overheads = [t / g for t, g in zip(times["tfcli"], gemm_rounds)]  # per round
    return {
        "n": n, "tfcli_ms": tfcli_s * 1e3, "torch_ms": torch_s * 1e3, "ratio": tfcli_s / torch_s,
        "gemms_ms": gemm_s * 1e3, "gemms_blas_ms": blas_s * 1e3, "gemms_pool_ms": pool_s * 1e3,
        "overhead_ratio": tfcli_s / gemm_s, "overhead_ratio_range": [min(overheads), max(overheads)],
        "gemms_gflop": gemm_flops(pairs) / 1e9,
        "gemms_blas_times_ms": [t * 1e3 for t in times["gemms_blas"]],
        "gemms_pool_times_ms": [t * 1e3 for t in times["gemms_pool"]],
        "ratio_of_best": min(times["tfcli"]) / min(times["torch"]),
        "max_abs_logit_diff": max_diff, "gflop": flops / 1e9,
        "tfcli_gflops": flops / tfcli_s / 1e9, "torch_gflops": flops / torch_s / 1e9,
        "ffn_gemm_gflops": gemm_gflops(n, spec.d_model, spec.d_ff, repeats=5),
        "tfcli_times_ms": [t * 1e3 for t in times["tfcli"]],
        "torch_times_ms": [t * 1e3 for t in times["torch"]],
    }


def report(results: dict[str, Any]) -> None:
    peak, target = results["gemm_peak_gflops"], results["targets"]["overhead_max"]
    print_header(f"{MODEL_TITLES[results['model_name']]}, batch 1, float32, full logits", results)
    print(f"NumPy float32 GEMM peak ({PEAK_SIZE}^3, best of several): {peak:.1f} GFLOP/s  "
          f"<- '% peak' divides by this\n")
    rows = [[r["n"], f"{r['tfcli_ms']:.1f}", f"{r['gemms_blas_ms']:.1f}",
             f"{r['gemms_pool_ms']:.1f}", f"{r['gemms_gflop']:.1f}",
             f"{r['overhead_ratio']:.3f}", "{:.2f}-{:.2f}".format(*r["overhead_ratio_range"]),
             verdict(r["overhead_ratio"], target, higher_is_better=False),
             f"{1 - 1 / r['overhead_ratio']:.0%}"] for r in results["sizes"]]
    print(table(["N", "tfcli ms", "GEMMs ms: BLAS threads", "pool", "GEMM GFLOP",
                 "overhead ratio (vs the faster)",
                 "(per-round range)", f"<={target}", "outside GEMMs"], rows))
    print()
    rows = [[r["n"], f"{r['tfcli_ms']:.1f}", f"{r['torch_ms']:.1f}", f"{r['ratio']:.2f}",
             f"{r['ratio_of_best']:.2f}", verdict(r["ratio"], RATIO_TARGET, higher_is_better=False),
             f"{r['gflop']:.1f}", f"{r['tfcli_gflops']:.1f}", f"{r['tfcli_gflops'] / peak:.0%}",
             verdict(r["tfcli_gflops"] / peak, PEAK_SHARE_TARGET, higher_is_better=True),
             f"{r['torch_gflops']:.1f}", f"{r['ffn_gemm_gflops']:.1f}",
             f"{r['max_abs_logit_diff']:.1e}"] for r in results["sizes"]]
    print(table(["N", "tfcli ms", "torch ms", "tfcli/torch", "(best/best)", f"<={RATIO_TARGET}",
                 "GFLOP", "tfcli GFLOP/s", "% peak", f">={PEAK_SHARE_TARGET:.0%}", "torch GFLOP/s",
                 "(N,768)@(768,3072) GFLOP/s", "max |dlogit|"], rows))


def main() -> None:
    args = parse_args()
    configure_torch(args.torch_threads)
    facts = machine_facts()
    model, spec, weights = model_pair(args.model, args.attn)
    peak_before = gemm_gflops(PEAK_SIZE, PEAK_SIZE, PEAK_SIZE, repeats=10)
    sizes = [measure_size(model, spec, weights, n, args.repeats) for n in args.sizes]
    peak = max(peak_before, gemm_gflops(PEAK_SIZE, PEAK_SIZE, PEAK_SIZE, repeats=10))
    results = gpt2_results("forward", model, args.repeats, facts) | {
        "gemm_peak_gflops": peak, "gemm_peak_shape": [PEAK_SIZE] * 3, "sizes": sizes,
        "model_name": args.model, "model": MODEL_TITLES[args.model],
        "targets": {"ratio_max": RATIO_TARGET, "peak_share_min": PEAK_SHARE_TARGET,
                    "overhead_max": OVERHEAD_TARGETS[args.model]},
    }
    emit(results, args.json, report)


if __name__ == "__main__":
    main()
