"""The `cpu` entry's three figures, measured on this machine (tfcli.analysis.gpus.catalog.cpu_entry).

- GEMM peak: float32 FLOP/s of one (2048, 2048) @ (2048, 2048) matmul through NumPy's BLAS.
- Bandwidth: bytes per second the vector-matrix products of a decode step read. Given a width
  (a spec's d_model, clamped to PROBE_WIDTHS), over a stack of transformer layers of that width
  laid out as tfcli's engine lays them (engine/layout.py: the fused Q/K/V (d, 3d) and the FFN's
  up (d, 4d) in C order, the output (d, d) and down (4d, d) projections stored transposed), one
  product per matrix as a decode step runs them: OpenBLAS reads a (768, 3072) matrix 10-25%
  slower than one 256 MiB (16384, 4096) matrix (benchmarks/README.md, perf_check), so the
  single wide product (width None) overstates what a small model's decode can stream.
- Cost per op: the engine's Python and NumPy dispatch per op, from a tiny model's decode step.

Each is a median (not the best: on a shared machine the best catches a moment no other job
ran, which a model's seconds-long forward pass or decode never sustains). NumPy and the engine
are imported inside the functions: `tfcli gpus` and `tfcli memory` never pay for them.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

GEMM_SIZE = 2048  # float32 (2048, 2048) @ (2048, 2048): 17.2 GFLOP, 16 MiB per operand
STREAM_BYTES = 256 * 2**20  # read by the bandwidth probe: far over any L3 cache
REPEATS = 5  # the GEMM's median of five, as other jobs share the machine
# the bandwidth's median of 15 (~0.15 s): this shared host's bandwidth drifts by 30% within a
# second, and five 8 ms reads caught one spell where a decode run lasts seconds
STREAM_REPEATS = 15
PROBE_WIDTHS = (256, 2048)  # layer widths the bandwidth probe clamps a d_model to
OVERHEAD_STEPS = 64  # decode steps of the tiny model measure_op_seconds times (~25 ms)


def _median_seconds(work: Callable[[], object], repeats: int = REPEATS) -> float:
    """The median of `repeats` timings of work() after one warm-up call."""
    work()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_gemm_flops(n: int = GEMM_SIZE) -> float:
    """FLOP/s of one float32 (n, n) @ (n, n) matmul (2 n^3 FLOPs)."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    return 2 * n**3 / _median_seconds(lambda: a @ b)


def probe_width(d_model: int | None) -> int | None:
    """The layer width the bandwidth probe uses for a spec of this d_model (None: none)."""
    if d_model is None:
        return None
    low, high = PROBE_WIDTHS
    return min(max(d_model, low), high)  # past 2048 the products stream as the wide one does


def bandwidth_pattern(width: int | None, n_bytes: int = STREAM_BYTES) -> str:
    """What measure_read_bandwidth(n_bytes, width) reads, in words (the cpu entry's note)."""
    if width is None:
        return f"float32 vector-matrix over {n_bytes >> 20} MiB"
    return (f"float32 decode products of width-{width} layers in tfcli's layout over "
            f"{n_bytes >> 20} MiB")


def _layer_stack(width: int, n_bytes: int) -> list[Any]:
    """Matrices of whole layers of `width` (at least one), about n_bytes in all, in the order
    and memory layout a decode step reads them."""
    import numpy as np

    d = width
    layer = [((d, 3 * d), "C"), ((d, d), "F"), ((d, 4 * d), "C"), ((4 * d, d), "F")]
    per_layer = 4 * sum(k * n for (k, n), _ in layer)
    return [np.ones(shape, dtype=np.float32, order=order)  # type: ignore[call-overload]
            for _ in range(max(1, n_bytes // per_layer)) for shape, order in layer]


def measure_read_bandwidth(n_bytes: int = STREAM_BYTES, width: int | None = None) -> float:
    """Bytes per second float32 vector-matrix products read (x and the outputs are
    negligible): over a stack of width-`width` layers (_layer_stack), or with width None one
    x (1, K) @ W (K, 4096) over n_bytes."""
    import numpy as np

    if width is None:
        cols = 4096
        matrices = [np.ones((n_bytes // (4 * cols), cols), dtype=np.float32)]  # [K, cols]
    else:
        matrices = _layer_stack(width, n_bytes)
    vectors = {m.shape[0]: np.ones((1, m.shape[0]), dtype=np.float32) for m in matrices}

    def read() -> None:
        for m in matrices:
            vectors[m.shape[0]] @ m  # (1, K) @ (K, n)

    return sum(m.nbytes for m in matrices) / _median_seconds(read, STREAM_REPEATS)


def measure_op_seconds(steps: int = OVERHEAD_STEPS) -> float:
    """Seconds tfcli's engine spends on one op beyond its FLOPs and bytes: the median cached
    decode step of a model so small (2 blocks of width 32, 64 tokens) that its products and
    elementwise work take almost nothing, divided by the ops of its step (the trace's rows).
    What is left is Python between the ops and NumPy's per-call dispatch, which a decode step
    of a real model pays once per op too (gpt2: 172 ops)."""
    import numpy as np

    from tfcli.analysis.trace.build import build_trace
    from tfcli.engine.generate import GenerationRequest, generate
    from tfcli.engine.init import init_weights
    from tfcli.spec.model import Spec

    spec = Spec(name="op-overhead", family="decoder", vocab_size=64, max_seq_len=steps + 16,
                d_model=32, n_heads=2, d_ff=64, n_layers=2, activation="gelu_tanh")
    weights = init_weights(spec, seed=0)
    request = GenerationRequest(prompts=[list(range(1, 9))], max_new_tokens=steps + 1)
    stamps = [time.perf_counter() for _ in generate(spec, weights, request)]
    step = float(np.median(np.diff(stamps)))  # the prefill's first token left out
    rows = build_trace(spec, batch=1, seq_len=1, dtype="float32").rows
    return step / sum(r.repeat for r in rows)
