"""transformers' T5 modules (T5, mT5, UMT5; T5ForConditionalGeneration or T5EncoderModel: a
model with T5's relative position bias) as the memory planner's layout `t5`. Inference: an
encoder-decoder's two stacks walked by seq2seq.py, T5EncoderModel as the generic layers
(live.py) with the bias its stack holds. Training: what autograd saves, the bytes
saved_tensors_hooks sees, each storage once. Built from the same op-by-op facts as
saved_parts.py (whose norm, MLP and outside-the-blocks counts it reuses), plus what T5's
modules do differently, each measured (tests/parity/memory_families.py):

- compute_bias embeds an int64 (T, S) bucket table, which the embedding's backward keeps
  (8 bytes a score, once a stack: its first block computes the bias and passes it on; UMT5
  once a block); the (1, H, T, S) bias itself is only added to the scores: nothing saved;
- sdpa: the bias reaches it as a float mask that needs a gradient, so torch (CPU) runs the
  math path, which saves what eager does (copies of q, K^T and v, the probabilities) in
  float32 even in 16 bits; a decoder block also the (T, S) boolean causal mask its where()
  reads. The cross-attention's zero bias needs no gradient: flash runs and keeps it as its
  mask (it x H x T x S, shared by the blocks), unless dropout sends it to the math path too.
  On CUDA the memory-efficient kernel takes a mask that needs a gradient (not measured: no
  GPU); the math path's figures are then an upper bound;
- T5LayerNorm multiplies the input in the compute dtype by a float32 rsqrt: in 16 bits that
  input is saved beside its float32 copy;
- the gated FFN (v1.1, mT5) applies gelu_new, a Python formula: 5 hidden-width tensors;
- dropout (T5's configs: 0.1) also after the FFN's activation and after each stack's final
  norm; the decoder's input ids, shifted from the labels, are a new int64 tensor;
- the loss's log-softmax in the compute dtype (CrossEntropyLoss on the logits as they are);
- gradient checkpointing: the blocks after the first take the bias (a decoder's also the
  cross-attention's zero bias, then made to need a gradient) as arguments, which the
  checkpoints keep; an eager decoder's first block its (B, 1, T, S) float causal mask.
"""

from __future__ import annotations

from tfcli.analysis.memory import window as window_memory
from tfcli.analysis.memory.base import (FLOAT32, INT64, SAVED_BY_ACTIVATION, SAVED_BY_GATE, Part,
                                        Phase, SavedActivations, Workload)
from tfcli.analysis.memory.live import layer_phases
from tfcli.analysis.memory.saved_parts import (attention_core, mlp_saved, norm_saved,
                                               outside_blocks)
from tfcli.analysis.memory.seq2seq import (bucket_phase, relative_bias, seq2seq_phases, stacks)
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

BOOL = 1


def _norm_copy(work: Workload, d: int) -> float:
    """T5LayerNorm in 16 bits: the input it multiplies by rsqrt, saved beside its float32 copy
    (norm_saved's RMS norm counts the copy, rsqrt and the normed values)."""
    return work.itemsize * work.tokens * d if work.itemsize < FLOAT32 else 0


def _core(spec: Spec, work: Workload, width: float, selective: bool, dropout: bool) -> float:
    """An attention as eager runs it, in `width`-byte tensors: the batched matmuls' copies of
    q, K^T and v, the probabilities, and with dropout its noise and the dropped copy."""
    probs = 0 if selective else width * work.batch * spec.n_heads * work.seq_len ** 2
    return 3 * width * work.tokens * spec.n_heads * spec.head_dim + probs * (3 if dropout else 1)


def _self_attention(spec: Spec, work: Workload, attention: str, selective: bool,
                    dropout: bool) -> float:
    """Eager in the compute dtype; sdpa (the bias a mask that needs a gradient) its math path,
    in float32."""
    width = FLOAT32 if attention == "sdpa" else work.itemsize
    return _core(spec, work, width, selective, dropout)


def _cross_attention(spec: Spec, work: Workload, attention: str, selective: bool,
                     dropout: bool) -> float:
    """Eager as self-attention; sdpa (a zero bias without gradient) flash's q, k, v and
    logsumexp, or with dropout the math path again (torch CPU)."""
    if attention == "sdpa" and not dropout:
        return attention_core(spec, work, "sdpa")[0]
    return _self_attention(spec, work, attention, selective, dropout)


def _mlp(spec: Spec, work: Workload, dropout: bool) -> float:
    """The FFN's saved hidden-width tensors; a gated gelu_tanh (T5 v1.1's gated-gelu) runs
    gelu_new's formula, 5 of them, not F.gelu's 2. Dropout after the activation (or the
    gating product) saves its noise, and the output projection its dropped copy in place of
    the undropped input: the gating product is then saved by nothing, relu's output still
    by relu."""
    hidden = work.itemsize * work.tokens * spec.d_ff
    saved = mlp_saved(spec, work)
    if spec.gated and spec.activation == "geglu_tanh":
        saved += (SAVED_BY_ACTIVATION["gelu_tanh"] - SAVED_BY_GATE["gelu_tanh"]) * hidden
    return saved + ((1 if spec.gated else 2) * hidden if dropout else 0)


def _block(stack: Spec, work: Workload, attention: str, selective: bool, tp: int,
           dropout: bool, decoder: bool) -> float:
    """One T5 block: per sublayer its norm, the normed input its first linear reads and its
    dropout's noise; the self-attention, the output projection's input, the FFN; a decoder
    block also a cross-attention (its k / v input, the encoder output, is saved once
    outside) and under sdpa the (T, S) boolean causal mask where() reads."""
    n, d, it = work.tokens, stack.d_model, work.itemsize
    sublayers = 3 if decoder else 2
    o_input = it * n * stack.n_heads * stack.head_dim
    sharded = _self_attention(stack, work, attention, selective, dropout) + o_input
    sharded += _mlp(stack, work, dropout)
    if decoder:
        sharded += _cross_attention(stack, work, attention, selective, dropout) + o_input
    norm = norm_saved(stack, work) + _norm_copy(work, d)
    saved = sublayers * (norm + it * n * d + (it * n * d if dropout else 0))
    if decoder and attention == "sdpa":
        saved += BOOL * work.seq_len ** 2
    return saved + sharded / tp


def _bias_parts(stack: Spec, work: Workload, attention: str, recompute: str, tp: int,
                decoder: bool, dropout: bool) -> list[Part]:
    """The relative bias outside the blocks: its bucket tables (one a stack, or one a block
    with per-layer tables), or under checkpointing what the blocks take as arguments."""
    t, it = work.seq_len, work.itemsize
    bias = it * stack.n_heads * t * t / tp
    per_layer = stack.relative_bias_per_layer  # UMT5: every block makes its own biases
    if recompute != "full":
        tables = stack.n_layers if per_layer else 1
        parts = [("relative bias buckets", INT64 * t * t * tables)]
        if decoder and attention == "sdpa" and not dropout:  # flash keeps the zero bias
            parts.append(("cross-attention zero bias", bias * tables))
        return parts
    parts = []
    if stack.n_layers > 1 and not per_layer:  # blocks after the first take the bias
        parts.append(("relative bias", bias * (2 if decoder else 1)))
    if decoder and attention == "eager":
        parts.append(("eager mask", it * work.batch * t * t))
    return parts


def _stack(stack: Spec, work: Workload, attention: str, recompute: str, tp: int,
           dropout: bool, decoder: bool) -> tuple[list[Part], float]:
    """(parts, one block's full saved set) of one stack."""
    block = _block(stack, work, attention, recompute == "selective", tp, dropout, decoder)
    kept = work.itemsize * work.tokens * stack.d_model if recompute == "full" else block
    parts = [(f"blocks (× {stack.n_layers})", stack.n_layers * kept)]
    parts += _bias_parts(stack, work, attention, recompute, tp, decoder, dropout)
    # T5's CrossEntropyLoss takes the logits as they are: its log-softmax in the compute dtype
    parts += [(name, b * work.itemsize / FLOAT32 if name == "loss log-softmax" else b)
              for name, b in outside_blocks(stack, work, recompute, tp)]
    if stack.final_norm and work.itemsize < FLOAT32:
        parts.append(("final norm's input", _norm_copy(work, stack.d_model)))
    if decoder:  # shifted from the labels: a new int64 tensor the embedding's backward keeps
        parts.append(("decoder input ids", INT64 * work.tokens))
    if dropout:  # after the embedding and after the final norm
        parts.append(("embedding and final dropout",
                      2 * work.itemsize * work.tokens * stack.d_model))
    full = _block(stack, work, attention, False, tp, dropout, decoder)
    return parts, full


def saved(spec: Spec, work: Workload, attention: str, recompute: str, tp: int = 1,
          dropout: bool = False, fused: frozenset[str] = frozenset()) -> SavedActivations:
    """Bytes autograd saves for a relative-position spec: an encoder-decoder's two stacks (the
    encoder's output saved once, as its head input: the decoder's k/v projections read it), or
    one stack (T5EncoderModel: its output read by whatever loss follows)."""
    named: list[Part] = []
    blocks: list[float] = []
    if spec.family == "encoder-decoder":
        encoder, decoder = stacks(spec)
        for stack, name, is_decoder in ((encoder, "encoder", False), (decoder, "decoder", True)):
            parts, full = _stack(stack, work, attention, recompute, tp, dropout, is_decoder)
            named += [(f"{name} {part}", b) for part, b in parts]
            blocks.append(full)
    else:  # an encoder (check_modelled refuses a decoder-only model with this bias)
        named, full = _stack(spec, work, attention, recompute, tp, dropout, False)
        blocks.append(full)
    return SavedActivations(tuple((name, int(round(b))) for name, b in named),
                            int(round(max(blocks))))


def live(spec: Spec, work: Workload, attention: str, fused: frozenset[str]) -> list[Phase]:
    """An encoder-decoder's stacks (seq2seq.py), or T5EncoderModel: the generic layers with
    the bias its stack holds and compute_bias's buckets."""
    if spec.relative_bias_per_layer:
        # UMT5: every block makes and frees its own biases (T5's shared ones taken for them
        # measured 1.09-1.30 of UMT5ForConditionalGeneration's live set)
        raise BadInputError(f"{spec.name}: the inference live set with a relative bias table "
                            "per block (UMT5) is not modelled yet (its training activations are)")
    if spec.family == "encoder-decoder":
        return seq2seq_phases(spec, work, attention == "eager", fused)
    eager = window_memory.softcapped_as_eager(spec, attention) == "eager"
    held, more = relative_bias(spec, work, eager, decoder=False)
    return [(name, e + held + (more if name == "attention scores" else 0))
            for name, e in layer_phases(spec, work, attention, fused)] \
        + bucket_phase(spec, work, eager, False, 0)
