"""tfcli's own NumPy engine (tfcli/engine) as the memory planner's layout `engine`: attention
in query blocks of ~4 MB of scores run on `workers` threads at once (no (B, H, T, S) array ever
exists), the FFN in rounds of rows split by hidden units across the workers, and DeBERTa's
disentangled attention as the engine runs it. Inference only: the engine has no backward.

Which buffers are freed when is written next to each phase (docs/memory.md has the whole list).
Sizes are in elements of the compute dtype unless a name says bytes.
"""

from __future__ import annotations

from tfcli.analysis.memory.base import (Phase, SavedActivations, Workload, activation, head_phases,
                                        qkv_elements)
from tfcli.analysis.memory.disentangled import (INDEX, against_all, elements, relative_positions,
                                                rows, score, terms)
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
# tfcli's log_bucket (NumPy) with its (T, T) int64 offsets: 40 bytes per entry at its widest
# (tracemalloc; the float64 product of the float32 logs and the int64 sign among them)
ENGINE_BUCKET_BYTES = 40


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


def _rope_copies(spec: Spec, tokens: int) -> float:
    """RoPE's new q and k (the fused Q/K/V output stays alive through v's view) and its tables."""
    if spec.positions != "rope":
        return 0
    return tokens * (spec.n_heads + spec.kv_heads) * spec.head_dim + 2 * tokens * spec.rotary_width


def _plain_phases(spec: Spec, work: Workload) -> list[Phase]:
    """Live elements per phase of the engine's forward (tfcli/engine/model.py): the embedding
    output stays referenced by forward() throughout, a block's input by forward_hidden's loop,
    a sublayer's normed input by _sublayer until it returns."""
    s, n, d = spec, work.tokens, spec.d_model
    embed = n * d
    x_in = n * d if s.n_layers > 1 else 0  # block 0's input is the embedding itself
    pre = s.norm != "none" and s.norm_placement != "post"
    h = n * d if pre else 0  # pre-norm: the normed input beside the residual
    qkv = qkv_elements(s, n) + _rope_copies(s, n)
    attn_out = n * s.n_heads * s.head_dim
    phases = [
        ("attention norm", embed + x_in + h + _norm_scratch(work, d)),
        ("attention scores", embed + x_in + h + qkv + attn_out + _engine_blocks(s, work)),
        ("attention output", embed + x_in + h + qkv + attn_out + n * d),
        ("FFN norm", embed + x_in + 2 * n * d + _norm_scratch(work, d)),
        ("FFN", embed + x_in + n * d + h + n * d + _engine_ffn(s, work)),
        ("final norm", embed + 2 * n * d + _norm_scratch(work, d)),
    ]
    if s.post_sublayer_norms:  # x + P(F(..)): F's output, its norm and the norm's scratch
        phases.append(("sublayer output norm", embed + x_in + 2 * n * d + h + 2 * n * d
                       + _norm_scratch(work, d)))
    return phases + head_phases(s, work, embed + n * d)


def _disentangled_phases(spec: Spec, work: Workload) -> list[Phase]:
    """The engine's phases (_plain_phases) with DeBERTa's arrays: the stack's normed table
    held by forward_hidden; the (B, H, T, T) bias position_scores returns, held by
    disentangled_attention through attend and the output projection; and per block the
    relative positions (built per call), then each term's phase: the offsets, the projected
    table, the bias, the clipped index, the (B, H, T, R) product and its gathered copy (the
    terms run one after the other: one term's arrays at a time)."""
    n, d, t = work.tokens, spec.d_model, work.seq_len
    table = rows(spec) * d
    bias = score(spec, work)
    phases = [(name, e + table + (bias if name in ("attention scores", "attention output")
                                  else 0))
              for name, e in _plain_phases(spec, work)]
    base = n * d + (n * d if spec.n_layers > 1 else 0) + table + 3 * n * d  # embed, x, qkv
    offsets = elements(INDEX * t * t, work)
    projected = len(terms(spec)) * table
    index = elements(INDEX * t * t, work)
    return phases + [
        ("relative positions",
         base + elements(relative_positions(spec, work, ENGINE_BUCKET_BYTES), work)),
        ("position scores",
         base + offsets + projected + bias + index + against_all(spec, work) + bias),
    ]


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
    """The engine's live set per phase (its own layout: `fused` names transformers' modules)."""
    _check_modelled(spec)
    if spec.disentangled_attention:
        return _disentangled_phases(spec, work)
    return _plain_phases(spec, work)


def saved(spec: Spec, work: Workload, attention: str, recompute: str, tp: int, dropout: bool,
          fused: frozenset[str]) -> SavedActivations:
    """The engine has no backward: nothing to save (check_options refuses --train with it)."""
    raise BadInputError("--train needs --attention eager or sdpa (the engine has no backward)")
