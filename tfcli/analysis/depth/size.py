"""How big a depth sweep is, before it runs: peak memory and work (FLOPs + weight draws).

The sweep (tfcli.analysis.depth.stack) carries, for V variants, S = 1 + 2k streams of
(B, T, d) each through every layer, all variants batched into one body call: N = V*S*B
sequences of T positions. Alive at the peak: two layers' weights (the one running and the
next, drawn on a worker thread) plus a float32 draw buffer, the streams about five times over
(state, body inputs, their concatenation, the body output, the wrapped sum), one block's
activations over N sequences, T5's relative bias (H, T, T) and the (B, T, T) cosine Gram.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfcli.analysis.depth.options import DepthSweepOptions
from tfcli.analysis.allocation import MemoryEstimate, forward_activation_bytes
from tfcli.spec.counts import total_parameters
from tfcli.spec.model import Spec


MAX_DEPTH = 10_000  # layers per sweep: a lesson sweeps to 64; Python's per-layer cost bounds it
MAX_SWEEP_WORK = 2e13  # FLOPs (+ 20 per weight drawn): ~30 min at 10 GFLOP/s on a busy laptop
DRAW_COST = 20  # one normal draw, counted in FLOPs
STREAM_COPIES = 5
SWEEP_OPTIONS = ("reduce --depths, --d-model, --d-ff, --seq-len, --batch, --directions or "
                 "--variants")
MEMORY_OPTIONS = "--d-model, --d-ff, --seq-len, --batch, --directions or --variants"


@dataclass(frozen=True)
class SweepSize:
    memory: MemoryEstimate
    work: float  # FLOPs + DRAW_COST per weight drawn, over the whole sweep


def _layer_params(spec: Spec | None, sublayer: str, d_model: int) -> int:
    """Weights of one stacked layer (for the whole block: an upper bound on T5's, which has
    no cross-attention here)."""
    if spec is None or sublayer == "linear":
        return d_model * d_model
    block = total_parameters(spec.with_layers(2)) - total_parameters(spec.with_layers(1))
    return block


def _layer_flops(spec: Spec | None, sublayer: str, d_model: int, params: int, tokens: int,
                 seq_len: int) -> int:
    """One layer over `tokens` positions: 2 per weight per token, plus attention's QK^T and
    PV over T keys (for every head dimension)."""
    if spec is None or sublayer in ("linear", "ffn"):
        return 2 * params * tokens
    width = spec.n_heads * spec.head_dim
    return 2 * params * tokens + 4 * tokens * seq_len * width


def sweep_size(spec: Spec | None, d_model: int, o: DepthSweepOptions) -> SweepSize:
    """Peak memory (by part) and total work of `run_depth_sweep(spec, o)`."""
    itemsize = np.dtype(o.dtype).itemsize
    n_seqs = len(o.variants) * (1 + 2 * o.n_directions) * o.batch  # N
    tokens = n_seqs * o.seq_len
    deepest = 1 if not o.depths else max(o.depths)
    params = _layer_params(spec, o.sublayer, d_model)
    drawn = params if o.share_weights else params * deepest
    work = deepest * _layer_flops(spec, o.sublayer, d_model, params, tokens, o.seq_len)
    activations = 0 if spec is None or o.sublayer == "linear" else \
        forward_activation_bytes(spec, n_seqs, o.seq_len, o.seq_len, itemsize)
    heads = spec.n_heads if spec is not None else 0
    # T5's bias table (relative_buckets, H) is drawn in float64 and scaled: two copies
    buckets = spec.relative_buckets if spec is not None and spec.positions == "relative" else 0
    parts = (
        ("weights", (2 * itemsize + 4) * params + 16 * buckets * heads),
        ("streams", STREAM_COPIES * tokens * d_model * itemsize),
        ("activations", activations),
        ("bias and Gram", 8 * o.batch * o.seq_len**2 + heads * o.seq_len**2 * itemsize),
        ("inputs", 8 * (1 + o.n_directions) * o.batch * o.seq_len * d_model),  # float64 draws
    )
    name = spec.name if spec is not None else "the linear stack"
    what = (f"depth-sweep of {name} (d_model {d_model:,}, {n_seqs:,} sequences of "
            f"{o.seq_len:,}, {o.dtype})")
    return SweepSize(MemoryEstimate(what, parts, MEMORY_OPTIONS),
                     float(work + DRAW_COST * drawn))
