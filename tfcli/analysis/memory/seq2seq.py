"""Encoder-decoders' inference live set in transformers (BART, T5): the encoder stack's phases,
then the decoder's beside the encoder output, each decoder block's cross-attention, and T5's
relative position bias (held through every phase, its bucketing temporaries). Built on
live.py's transformers phases (docs/memory.md, "Encoder-decoders"); layouts/t5.py and
layouts/bart.py walk their stacks with it."""

from __future__ import annotations

from tfcli.analysis.memory.base import Phase, Workload, qkv_elements
from tfcli.analysis.memory.live import hf_phases, learned_held
from tfcli.spec.model import Spec


def stacks(spec: Spec) -> tuple[Spec, Spec]:
    """An encoder-decoder (BART) as its two stacks: an encoder without a head (its output is
    what the decoder's cross-attention reads) and a decoder with the head, each its own
    layer count; cross-attention is added by the callers."""
    base = {"n_encoder_layers": None, "n_decoder_layers": None}
    encoder = spec.model_copy(update=base | {"family": "encoder", "n_layers": spec.encoder_layers,
                                             "lm_head": False, "pooler": False})
    decoder = spec.model_copy(update=base | {"family": "decoder", "n_layers": spec.decoder_layers})
    return encoder, decoder


def relative_bias(spec: Spec, work: Workload, eager: bool, decoder: bool) -> tuple[float, float]:
    """T5's relative position bias as a stack holds it: (held through every phase, more in the
    attention phase). Each stack computes a (1, H, T, S) bias in its first block and passes it
    on (a decoder also the cross-attention's zero bias); sdpa gets it as a float mask, so its
    attention makes the masked copy (decoder: where(causal) and its contiguous copy beside the
    (T, S) boolean causal mask; encoder: a contiguous copy). The decoder's where() and
    boolean mask are freed before sdpa's (N, H x dh) output, which the phase already counts,
    exists: the larger of the two moments. Measured on T5ForConditionalGeneration."""
    if spec.positions != "relative":
        return 0, 0
    bias = spec.n_heads * work.seq_len * work.seq_len
    if not decoder:
        return bias, 0 if eager else bias
    out = work.tokens * spec.n_heads * spec.head_dim
    masking = 2 * bias + work.seq_len ** 2 / work.itemsize  # where, its copy, the causal mask
    return 2 * bias, 0 if eager else max(masking - out, bias)


def bucket_phase(spec: Spec, work: Workload, eager: bool, decoder: bool,
                  beside: float) -> list[Phase]:
    """T5's compute_bias in a stack's first block, beside the embedding, the normed input and
    q, k, v (and `beside`): _relative_position_bucket's int64 (T, S) temporaries, 6 and a
    boolean one at once bidirectional (encoder), 5 and one causal (decoder), or after it the
    relative positions and buckets beside the (T, S, H) embedded bias; plus two int64 aranges
    (measured on T5ForConditionalGeneration and T5EncoderModel: 49 and 41 bytes a score)."""
    if spec.positions != "relative":
        return []
    n, d, t = work.tokens, spec.d_model, work.seq_len
    per_score = max(5 * 8 + 1 if decoder else 6 * 8 + 1, 16 + spec.n_heads * work.itemsize)
    held = 2 * n * d + qkv_elements(spec, n) + beside + (work.batch * t * t if eager and decoder else 0)
    return [("relative bias buckets", held + (per_score * t * t + 16 * t) / work.itemsize)]


def seq2seq_phases(spec: Spec, work: Workload, eager: bool,
                    fused: frozenset[str]) -> list[Phase]:
    """An encoder-decoder (BART, T5): the encoder's phases, then the decoder's with the
    encoder's output (N, d) held beside them, and each decoder block's cross-attention: q over
    the targets, k and v over the sources (S = T: one --seq-len), the scores and softmax
    (eager) or sdpa's output, beside the self-attention's returned probabilities (eager)."""
    encoder, decoder = stacks(spec)
    n, d, t = work.tokens, spec.d_model, work.seq_len
    phases: list[Phase] = []
    for stack, name, beside in ((encoder, "encoder", 0), (decoder, "decoder", n * d)):
        held, attention = relative_bias(spec, work, eager, stack is decoder)
        held += learned_held(stack, work) if stack is decoder else 0  # BART's embed_positions
        phases += [(f"{name} {phase}",
                    e + beside + held + (attention if phase == "attention scores" else 0))
                   for phase, e in hf_phases(stack, work, eager, fused)]
        phases += [(f"{name} {phase}", e)
                   for phase, e in bucket_phase(spec, work, eager, stack is decoder, beside)]
    held = n * d + (work.batch * t * t if eager else 0)  # embeds, mask
    held += t * d if spec.positions == "learned" else 0
    held += relative_bias(spec, work, eager, True)[0]
    # pre-norm (T5): the normed input and one more (N, d) the block holds (measured)
    x_in = n * d if decoder.n_layers > 1 else 0
    x_in += 2 * n * d if spec.norm_placement != "post" else 0
    probs = work.batch * spec.n_heads * t * t if eager else 0
    core = 2 * probs if eager else n * spec.n_heads * spec.head_dim
    phases.append(("decoder cross-attention", held + n * d + x_in + probs + qkv_elements(spec, n) + core))
    return phases
