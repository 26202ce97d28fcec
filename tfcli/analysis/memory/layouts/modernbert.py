"""transformers' ModernBertModel as the memory planner's layout `modernbert`: what it holds and
saves, where it differs from the generic layers of live.py / saved_parts.py (measured on small random ModernBertModel instances:
tests/parity/memory_families.py; docs/memory.md has the figures).

transformers 5.24 runs ModernBERT padded (no unpadding) with eager or sdpa attention:
- the model keeps its embedding output to the end (the mask arguments' dict holds it);
- the local layers' mask: masking_utils builds it whenever seq_len reaches local_attention // 2
  (spec sliding_window - 1), from two int64 (T, S) tensors (q - k and its abs, 16 bytes a
  score at once, batch-independent) into a boolean (T, S) one; eager turns it into a float
  (B, 1, T, S) mask, sdpa keeps the boolean one and every local sdpa call makes (and, in
  training, saves) its float (B, 1, T, S) copy. Global layers get no mask (no padding);
- one RoPE cos / sin pair per layer kind, held (and saved) through the forward;
- Wqkv's output stays alive (and saved: v is a view of it) beside the rotated q and k; RoPE
  runs in float32: during k's rotation q's result, k x cos, rotate_half(k) and its product
  (and for 16-bit inputs k's float32 copy and the negated half): 16 (18) bytes a q/k element;
- eager takes the softmax in float32 (16-bit: it + 8 bytes a score at once), and the layer
  keeps the probabilities (its `_`) through the MLP; the attention's output (N, d) is held by
  the layer beside the MLP too; Wi's (N, 2F) output stays alive (its halves are views);
- sdpa's output is laid out (B, T, H, dh) already: the output projection saves no copy;
- block 0 has no attention norm: it reads the embedding norm's output.

Sizes are in elements of the compute dtype unless a name says bytes.
"""

from __future__ import annotations

from tfcli.analysis.memory import window as window_memory
from tfcli.analysis.memory.base import (FLOAT32, Part, Phase, SavedActivations, Workload,
                                        fused_qkv_extra, rounded)
from tfcli.analysis.memory.saved_parts import generic_saved
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

MASK_BUILD_BYTES = 16  # q - k and |q - k|, int64 each, per (T, S) entry


def check_modernbert_shaped(spec: Spec) -> None:
    """ModernBertModel builds the local mask whether or not a layer is local; without local
    layers the spec keeps no window to size it by."""
    if spec.local_layers == 0:
        raise BadInputError(f"{spec.name}: activation memory of a RoPE encoder without local "
                            "layers is not modelled (ModernBertModel still builds the local "
                            "mask, whose window such a spec does not keep)")


def masked(spec: Spec, work: Workload) -> bool:
    """The local mask is materialised: seq_len reaches transformers' half window."""
    return spec.sliding_window is not None and work.seq_len >= spec.sliding_window - 1


def _kinds(spec: Spec) -> list[tuple[str, bool]]:
    """(layer kind, whether it runs at an index >= 1, after a layer and with its own attention
    norm) for each kind present; the pattern repeats, so its first len + 1 layers show all."""
    pattern = spec.layer_pattern or ["local" if spec.sliding_window else "global"]
    first = [pattern[i % len(pattern)] for i in range(min(spec.n_layers, len(pattern) + 1))]
    return [(kind, kind in first[1:]) for kind in dict.fromkeys(first)]


def _rope_pairs(spec: Spec) -> int:
    return 2 if 0 < spec.local_layers < spec.n_layers else 1


def _held(spec: Spec, work: Workload, eager: bool) -> float:
    """The embedding output, the RoPE pairs and the local mask (eager float, sdpa boolean)."""
    b, t = work.batch, work.seq_len
    mask = (b * t * t if eager else t * t / work.itemsize) if masked(spec, work) else 0
    return work.tokens * spec.d_model + _rope_pairs(spec) * 2 * t * spec.head_dim + mask


def _layer_phases(spec: Spec, work: Workload, eager: bool, kind: str,
                  later: bool) -> list[Phase]:
    s, n, d, b, t, it = spec, work.tokens, spec.d_model, work.batch, work.seq_len, work.itemsize
    held = _held(s, work, eager)
    x_in = n * d if later else 0  # the layer loop's input (block 0's is the embedding)
    xh = 2 * x_in  # and the attention norm's output (block 0: none)
    heads = n * s.n_heads * s.head_dim
    qkv = n * (s.n_heads + 2 * s.kv_heads) * s.head_dim
    rotated = 2 * heads
    probs = b * s.n_heads * t * t if eager else 0
    local_copy = b * t * t if kind == "local" and masked(s, work) else 0
    if eager:  # scaled (masked) scores and the softmax; 16-bit: float32 copy and result
        core = probs * (2 if it >= FLOAT32 else 1 + 2 * FLOAT32 / it)
    else:  # sdpa's float mask copy, its output and float32 logsumexp
        core = local_copy + heads + FLOAT32 * b * s.n_heads * t / it
    rope = heads * (16 if it >= FLOAT32 else 18) / it
    return [
        (f"{kind} RoPE", held + xh + qkv + rope),
        (f"{kind} attention scores", held + xh + qkv + rotated + core),
        (f"{kind} attention output", held + xh + qkv + rotated + probs + 2 * heads),
        # the attention's output, the residual sum and the MLP norm's output; Wi's (N, 2F),
        # act(input) and the product
        (f"{kind} FFN", held + x_in + 3 * n * d + probs + 4 * n * s.d_ff),
    ]


def hf_phases(spec: Spec, work: Workload, eager: bool) -> list[Phase]:
    """Live elements per phase of ModernBertModel's forward (no_grad)."""
    check_modernbert_shaped(spec)
    t = work.seq_len
    phases: list[Phase] = []
    if masked(spec, work):  # the embedding output beside the mask's int64 distances
        phases.append(("local mask", work.tokens * spec.d_model + MASK_BUILD_BYTES * t * t
                       / work.itemsize))
    for kind, later in _kinds(spec):
        phases += _layer_phases(spec, work, eager, kind, later)
    if spec.lm_head:  # ModernBertForMaskedLM: the masks and embedding freed, the model's output
        # and the head's normed output beside the (B, T, V) logits
        phases.append(("logits", 2 * work.tokens * spec.d_model + work.tokens * spec.vocab_size))
    return phases


def _wqkv_kept(spec: Spec, work: Workload, attention: str) -> float:
    """Bytes of a block's Wqkv output saved beyond q, k, v: sdpa's v is a view of it, and so
    is eager's batched-matmul v at batch 1 (no copy needed there)."""
    if attention == "sdpa" or work.batch == 1 and spec.kv_heads == spec.n_heads:
        return work.itemsize * fused_qkv_extra(spec, work.tokens, frozenset({"qkv"}))
    return 0


def _mask_copy(spec: Spec, work: Workload, attention: str) -> float:
    """A local sdpa call's float (B, 1, T, S) mask copy, saved for backward."""
    if attention != "sdpa" or not masked(spec, work):
        return 0
    return work.itemsize * work.batch * work.seq_len ** 2


def saved_parts(spec: Spec, work: Workload, attention: str, recompute: str,
                tp: int = 1) -> list[Part]:
    """Bytes ModernBertModel saves beyond the generic blocks (composed with a fused gate|up and
    block 0 without an attention norm): the whole Wqkv outputs, the local sdpa calls' float
    mask copies, the second RoPE pair; ModernBertForMaskedLM's head transform."""
    check_modernbert_shaped(spec)
    parts: list[Part] = []
    if recompute != "full":  # (checkpointed blocks keep their inputs only)
        if _wqkv_kept(spec, work, attention):
            parts.append(("Wqkv outputs",
                          spec.n_layers * _wqkv_kept(spec, work, attention) / tp))
        if _mask_copy(spec, work, attention):
            parts.append(("local sdpa masks",
                          spec.local_layers * _mask_copy(spec, work, attention) / tp))
        if _rope_pairs(spec) == 2:
            parts.append(("local RoPE tables",
                          2 * work.itemsize * work.seq_len * spec.rotary_width))
    if spec.head == "masked_lm":  # the head's dense -> activation -> norm before the decoder:
        # the activation's input, the norm's input and float32 statistics, the decoder's input
        n = work.tokens
        parts.append(("masked-LM head", 3 * work.itemsize * n * spec.d_model + 2 * FLOAT32 * n))
    return parts


def block_extra(spec: Spec, work: Workload, attention: str, tp: int = 1) -> float:
    """One recomputed block's bytes beyond the generic block's (a local one's, the larger)."""
    return (_wqkv_kept(spec, work, attention) + _mask_copy(spec, work, attention)) / tp


def live(spec: Spec, work: Workload, attention: str, fused: frozenset[str]) -> list[Phase]:
    """ModernBertModel's phases (its own fixed layout: `fused` does not apply)."""
    return hf_phases(spec, work, attention == "eager")


def saved(spec: Spec, work: Workload, attention: str, recompute: str, tp: int, dropout: bool,
          fused: frozenset[str]) -> SavedActivations:
    """The generic blocks with Wi a fused gate|up, and what saved_parts and block_extra add."""
    attention = window_memory.softcapped_as_eager(spec, attention)
    parts, block = generic_saved(spec, work, attention, recompute, tp, dropout,
                                 frozenset({"gate_up"}))
    parts += saved_parts(spec, work, attention, recompute, tp)
    return rounded(parts, block + block_extra(spec, work, attention, tp))
