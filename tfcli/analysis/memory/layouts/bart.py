"""transformers' BART modules (BartForConditionalGeneration: an encoder-decoder with learned
positions) as the memory planner's layout `bart`: two stacks of the generic layers, the
decoder's with its learned positions as GPT-2's modules keep them, and every decoder block's
cross-attention (docs/memory.md, "Encoder-decoders"; measured in
tests/parity/memory_families.py).
"""

from __future__ import annotations

from tfcli.analysis.memory.base import Phase, SavedActivations, Workload, rounded
from tfcli.analysis.memory.saved_parts import (attention_core, generic_saved,
                                               learned_position_parts, norm_saved)
from tfcli.analysis.memory.seq2seq import seq2seq_phases, stacks
from tfcli.spec.model import Spec


def live(spec: Spec, work: Workload, attention: str, fused: frozenset[str]) -> list[Phase]:
    return seq2seq_phases(spec, work, attention == "eager", fused)


def _cross_saved(spec: Spec, work: Workload, attention: str, selective: bool) -> float:
    """One decoder block's cross-attention (post-norm): its norm, the query projection's input,
    q over the T targets and k, v over the S sources (S = T here: one --seq-len), the
    probabilities (eager) and the output projection's input. The k/v projections' input, the
    encoder output, is saved once for every block: the encoder stack's head input."""
    heads, probs = attention_core(spec, work, attention)
    n, d, it = work.tokens, spec.d_model, work.itemsize
    return (norm_saved(spec, work) + it * n * d + heads + (0 if selective else probs)
            + it * n * spec.n_heads * spec.head_dim)


def _stack_saved(stack: Spec, work: Workload, attention: str, recompute: str, tp: int,
                 dropout: bool, fused: frozenset[str]) -> SavedActivations:
    """One stack as its own model; the decoder's learned positions as GPT-2's modules save them."""
    parts, block = generic_saved(stack, work, attention, recompute, tp, dropout, fused)
    if stack.family == "decoder":
        parts += learned_position_parts(stack, work, attention, recompute)
    return rounded(parts, block)


def saved(spec: Spec, work: Workload, attention: str, recompute: str, tp: int, dropout: bool,
          fused: frozenset[str]) -> SavedActivations:
    """Both stacks, plus every decoder block's cross-attention."""
    encoder, decoder = stacks(spec)
    enc = _stack_saved(encoder, work, attention, recompute, tp, dropout, fused)
    dec = _stack_saved(decoder, work, attention, recompute, tp, dropout, fused)
    cross = _cross_saved(spec, work, attention, recompute == "selective")
    kept = 0 if recompute == "full" else spec.decoder_layers * cross
    parts = (tuple((f"encoder {name}", b) for name, b in enc.parts)
             + tuple((f"decoder {name}", b) for name, b in dec.parts)
             + ((f"cross-attention (× {spec.decoder_layers})", int(round(kept))),))
    return SavedActivations(parts, max(enc.per_block, dec.per_block + int(round(cross))))
