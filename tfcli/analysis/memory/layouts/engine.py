"""tfcli's own NumPy engine (tfcli/engine) as the memory planner's layout `engine`: attention
in query blocks of ~4 MB of scores run on `workers` threads at once (no (B, H, T, S) array ever
exists), the FFN in rounds of rows split by hidden units across the workers, and DeBERTa's
disentangled attention as the engine runs it. Inference only: the engine has no backward.

Which arrays are alive between ops is not written here: the engine's own forward pass on
shapes records it (record.py), so a change to the engine moves the plan with it. What a run on
shapes cannot see is here: the working sets of the kernels that split their work by size and
across threads (and Cody's erf, whose temporaries depend on the values). Sizes are in elements
of the compute dtype unless a name says bytes.
"""

from __future__ import annotations

from tfcli.analysis.memory.base import Phase, SavedActivations, Workload, activation
from tfcli.analysis.memory.disentangled import INDEX, against_all, elements, score, terms
from tfcli.analysis.memory.record import Interval, Kernel, phases, record_live
from tfcli.analysis.memory.record import elements as record_elements
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

# tfcli/engine/attention.py and ffn.py sizes (the same constants: changed there, change here)
QUERY_BLOCK_BYTES = 1 << 22
MIN_QUERY_BLOCK = 16
HIDDEN_SLICE_BYTES = 1 << 22
MIN_SPLIT_ROWS = 16
MIN_ROWWISE_ROWS = 256

# Hidden-width arrays alive per worker while the engine's activation runs, its input included
# (tfcli/engine/ops.py): relu / gelu_tanh: input + one result; silu: input, -x and exp(-x).
# Exact gelu runs Cody's erf: x/sqrt2, |y|, the output, four interval masks, each interval's
# gathered copy and its rational function's temporaries: 4 + 8 x (share of |x|/sqrt2 in the
# middle interval), which depends on the values: measured 9.1 (bert-base at init) to 10.5 (a
# d_model 64 spec) on random-init hidden values (tests/analysis/memory/layouts/test_engine.py);
# 10 taken.
ENGINE_ACTIVATION_SLICES = {"relu": 2.0, "gelu_tanh": 2.0, "silu": 3.0, "gelu": 10.0}


def _engine_blocks(spec: Spec, work: Workload) -> float:
    """Score blocks in flight at once (attention.attend): each block of c queries holds its
    B x H x c x K scores, its scaled queries and its mixed values; a causal block sees only
    the K keys up to its last query. The pool runs `workers` consecutive blocks at once: the
    largest such window counts."""
    s, t = spec, work.seq_len
    per_block = max(MIN_QUERY_BLOCK, QUERY_BLOCK_BYTES // int(s.n_heads * t * work.itemsize))
    c = min(per_block, max(MIN_QUERY_BLOCK, -(-t // (work.workers * 2))), t)
    causal = s.family == "decoder"
    n_blocks = -(-t // c)
    window = min(work.workers, n_blocks)
    # blocks only grow towards the end (more keys) but the last may be short: the widest
    # window is among the last window + 1 blocks, so only those are sized
    first = max(0, n_blocks - window - 1)
    sizes = [min(c, t - q0) * ((min(t, q0 + c) if causal else t) + 2 * s.head_dim)
             for q0 in range(first * c, t, c)]
    widest = max(sum(sizes[i:i + window]) for i in range(len(sizes) - window + 1))
    return work.batch * s.n_heads * widest


def _norm_scratch(work: Workload, width: int) -> float:
    """A norm's temporaries beside its output: centred and squared rows (layer norm) or the
    square and the product (RMS norm), for every row block at once (parallel.rowwise)."""
    parallel = work.tokens >= MIN_ROWWISE_ROWS and work.workers > 1
    return (2 if parallel else 1) * work.tokens * width


def _engine_ffn(spec: Spec, work: Workload) -> float:
    """The FFN's transient arrays beside its (N, d) output (ffn.dense_ffn): per round of rows,
    the workers' (rows, d) partial sums and each worker's hidden slice through the activation."""
    slices = ENGINE_ACTIVATION_SLICES[activation(spec)] + (1 if spec.gated else 0)
    n, f, d = work.tokens, spec.d_ff, spec.d_model
    if n < MIN_SPLIT_ROWS or work.workers == 1:
        return n * f * slices
    width = -(-f // work.workers)
    cap = max(MIN_SPLIT_ROWS, int(HIDDEN_SLICE_BYTES // (width * work.itemsize)))
    rows = -(-n // -(-n // cap))
    workers = -(-f // width)
    return workers * rows * d + workers * rows * width * slices


def _kernel(spec: Spec, work: Workload) -> Kernel:
    """The elements each blocked kernel adds to what is alive when it starts (record.py: the
    record cannot see blocks, threads or value-dependent temporaries): attention's output and
    its score blocks in flight, the FFN's output and its rounds of hidden slices, a norm's output
    and its scratch; DeBERTa's position terms, each its gather index, its (B, H, T, R) product
    and the gathered copy (the first also the (B, H, T, T) bias it adds into). Other ops: None,
    the record's own live set."""
    index = elements(INDEX * work.seq_len ** 2, work)
    first_term = terms(spec)[0] if spec.disentangled_attention else None

    def extra(iv: Interval) -> float | None:
        if iv.op == "scores":
            b, h, t, _ = iv.output
            return b * t * h * spec.head_dim + _engine_blocks(spec, work)
        if iv.op == "ffn_up":
            return record_elements(iv.output[:-1]) * spec.d_model + _engine_ffn(spec, work)
        if iv.op == "norm":
            return record_elements(iv.output) + _norm_scratch(work, iv.output[-1])
        if iv.op in ("c2p", "p2c"):
            bias = score(spec, work) if iv.op == first_term else 0
            return bias + index + against_all(spec, work) + score(spec, work)
        return None

    return extra


# what of a spec the engine's live set does not model yet, named in its refusal
ENGINE_UNMODELLED: tuple[tuple[str, object], ...] = (
    ("latent-attention (MLA) live set", lambda s: s.latent_attention),
    ("mixture-of-experts live set", lambda s: s.n_experts),
    ("encoder-decoder live set", lambda s: s.family == "encoder-decoder"),
    ("live set with a relative position bias", lambda s: s.positions == "relative"),
)


def _check_modelled(spec: Spec) -> None:
    """BadInputError for the variants whose engine live set (tfcli's own) is not modelled."""
    for what, applies in ENGINE_UNMODELLED:
        if applies(spec):  # type: ignore[operator]
            raise BadInputError(f"{spec.name}: the engine's {what} is not modelled yet: use "
                                "--attention sdpa or eager (transformers')")


def live(spec: Spec, work: Workload, attention: str, fused: frozenset[str]) -> list[Phase]:
    """The engine's live set per phase (its own layout: `fused` names transformers' modules):
    the engine's forward on shapes records what is alive between ops (record.py), the blocked
    kernels add their working sets."""
    _check_modelled(spec)
    return phases(record_live(spec, work.batch, work.seq_len), _kernel(spec, work))


def saved(spec: Spec, work: Workload, attention: str, recompute: str, tp: int, dropout: bool,
          fused: frozenset[str]) -> SavedActivations:
    """The engine has no backward: nothing to save (check_options refuses --train with it)."""
    raise BadInputError("--train needs --attention eager or sdpa (the engine has no backward)")
