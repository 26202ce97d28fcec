"""What transformers' sliding-window and soft-capped decoders (Mistral, Gemma 2, Gemma 3) hold
beyond the generic layers of live.py / saved_parts.py, measured on
MistralForCausalLM, Gemma2ForCausalLM and Gemma3ForCausalLM (tests/parity/
tests/parity/memory_families.py; docs/memory.md has the figures).

- A sliding window the sequence reaches (seq_len >= sliding_window: masking_utils then cannot
  leave causality to sdpa's is_causal) makes the model build a boolean (T, S) mask, expanded
  over the batch, held through the forward. Every sdpa call on it turns it into a float
  (B, 1, T, S) copy in the compute dtype (saved for backward), and transformers repeats K and
  V to every query head (sdpa's enable_gqa is only used without a mask), as eager does.
- Eager with both local and global layers: two float (B, 1, T, S) masks, held throughout.
- Gemma 3's second RoPE base: a second cos / sin pair, held (and saved) beside the first.
- Attention logit soft-capping (Gemma 2): c * tanh(s / c) on the scores saves tanh's (B, H, T, S)
  output beside the probabilities; transformers' Gemma 2 has no sdpa (_supports_sdpa = False:
  asked for it, from_pretrained keeps eager), so sdpa is planned as eager.
- Final logit soft-capping: tanh's (B, T, V) output saved; in inference logits / c is a new
  tensor beside the logits.
- Gemma's (1 + weight) RMSNorm computes in float32 to its end: its normed values are float32
  (not the compute dtype) and (1 + weight) is a float32 tensor of its own, saved.

Sizes are in elements of the compute dtype unless a name says bytes.
"""

from __future__ import annotations

from tfcli.analysis.memory.base import Workload
from tfcli.spec.model import Spec

FLOAT32 = 4


def softcapped_as_eager(spec: Spec, attention: str) -> str:
    """The attention transformers really runs: Gemma 2 (attention logit soft-capping) has no
    sdpa, so sdpa is eager."""
    return "eager" if attention == "sdpa" and spec.attn_logit_softcap is not None else attention


def masked_layers(spec: Spec, work: Workload) -> int:
    """Decoder layers whose sdpa gets a materialised sliding-window mask: the local layers,
    once the sequence reaches the window (masking_utils' _ignore_causal_mask_sdpa)."""
    if spec.family != "decoder" or spec.sliding_window is None:
        return 0
    return spec.local_layers if work.seq_len >= spec.sliding_window else 0


def _both_kinds(spec: Spec) -> bool:
    return spec.family == "decoder" and 0 < spec.local_layers < spec.decoder_layers


def _two_bases(spec: Spec) -> bool:
    """Gemma 3's local RoPE base (ModernBERT's, an encoder's, not measured here)."""
    return spec.family == "decoder" and spec.rope_local_theta is not None


def _repeat(spec: Spec, tokens: int) -> float:
    """K and V repeated to every query head, beyond the kv heads (GQA / MQA only)."""
    return 2 * tokens * (spec.n_heads - spec.kv_heads) * spec.head_dim


def held(spec: Spec, work: Workload, eager: bool) -> float:
    """Held through the whole forward beyond the generic layers' one eager mask and RoPE pair:
    eager's second float mask, sdpa's boolean (T, S) mask, the second RoPE pair."""
    b, t = work.batch, work.seq_len
    extra = 2 * t * spec.rotary_width if _two_bases(spec) else 0
    if eager:
        return extra + (b * t * t if _both_kinds(spec) else 0)
    return extra + (t * t / work.itemsize if masked_layers(spec, work) else 0)


def attention_extra(spec: Spec, work: Workload, eager: bool) -> float:
    """A masked sdpa layer's attention phase beyond the generic one: the float mask copy, the
    repeated K and V, the float32 logsumexp (seen at the kernel's return)."""
    if eager or not masked_layers(spec, work):
        return 0
    b, t = work.batch, work.seq_len
    # the repeated copies have every head: the kv-head k and v are still held beside them
    repeat = 2 * work.tokens * spec.n_heads * spec.head_dim if spec.kv_heads < spec.n_heads else 0
    return b * t * t + repeat + FLOAT32 * b * spec.n_heads * t / work.itemsize


def adjust_phases(spec: Spec, work: Workload, eager: bool,
                  phases: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The generic transformers phases with the masks, RoPE pairs and soft-capped logits
    (logits / c beside the logits; the model's masks and RoPE pairs are freed by then)."""
    if phases[-1][0] == "logits" and spec.final_logit_softcap is not None:
        phases = phases[:-1] + [("logits", phases[-1][1] + work.tokens * spec.vocab_size)]
    keep, more = held(spec, work, eager), attention_extra(spec, work, eager)
    return [(name, e + (0 if name == "logits" else keep)
             + (more if name == "attention scores" else 0)) for name, e in phases]


def _norm_extra(spec: Spec, work: Workload) -> float:
    """Bytes one Gemma (1 + weight) RMSNorm saves beyond transformers' generic RMSNorm: the
    normed values in float32, not the compute dtype, and the float32 (1 + weight)."""
    if not spec.norm_unit_offset or spec.norm != "rmsnorm":
        return 0
    return (FLOAT32 - work.itemsize) * work.tokens * spec.d_model + FLOAT32 * spec.d_model


def _qk_norm_extra(spec: Spec, work: Workload) -> float:
    """The same for Gemma 3's per-head q / k norms (one (1 + weight) of d_head each)."""
    if spec.qk_norm == "none" or not spec.norm_unit_offset:
        return 0
    width = (spec.n_heads + spec.kv_heads) * spec.head_dim
    q_width, k_width = spec.qk_norm_widths
    return (FLOAT32 - work.itemsize) * work.tokens * width + FLOAT32 * (q_width + k_width)


def masked_sdpa_saved(spec: Spec, work: Workload, tp: int = 1) -> float:
    """Bytes a masked sdpa layer saves beyond unmasked sdpa (full fine-tuning and LoRA alike):
    the float (B, 1, T, S) mask copy and K, V repeated to every head (1/tp of the heads)."""
    return work.itemsize * (work.batch * work.seq_len ** 2 + _repeat(spec, work.tokens) / tp)


def lora_masked_saved(spec: Spec, work: Workload, attention: str, block0_grad: bool) -> float:
    """LoRA: the masked sdpa layers' extra bytes, where the attention saves anything (block 0
    only with an adapter on q, k or v: its input needs no gradient)."""
    layers = masked_layers(spec, work)
    if attention != "sdpa" or not layers:
        return 0
    skip = not block0_grad and spec.layer_kinds[0] == "local"
    return (layers - skip) * masked_sdpa_saved(spec, work)


def layer_saved(spec: Spec, work: Workload, attention: str, selective: bool,
                masked: bool, tp: int = 1) -> float:
    """Bytes one block saves beyond saved_parts' generic block: Gemma's norms, the
    soft-capped scores' tanh (not under selective recomputation), and on a masked sdpa layer
    the float mask copy and K and V repeated to every head. Under tensor parallelism each GPU
    holds 1/tp of the heads (the scores, the repeats); the norms and the mask are replicated."""
    norms = 2 + (2 if spec.norm_placement == "sandwich" else 0)
    extra = norms * _norm_extra(spec, work) + _qk_norm_extra(spec, work)
    b, h, t, it = work.batch, spec.n_heads, work.seq_len, work.itemsize
    if spec.attn_logit_softcap is not None and attention == "eager" and not selective:
        extra += it * b * h * t * t / tp
    if masked and attention == "sdpa":
        extra += masked_sdpa_saved(spec, work, tp)
    return extra


def saved_parts(spec: Spec, work: Workload, attention: str, recompute: str,
                tp: int = 1) -> list[tuple[str, float]]:
    """saved_parts.generic_saved's parts for these decoders (none for any other spec), on each
    of `tp` tensor-parallel GPUs (the soft-capped logits vocabulary-parallel, as the loss)."""
    parts: list[tuple[str, float]] = []
    if recompute != "full":
        masked = masked_layers(spec, work)
        selective = recompute == "selective"
        blocks = (masked * layer_saved(spec, work, attention, selective, True, tp)
                  + (spec.n_layers - masked)
                  * layer_saved(spec, work, attention, selective, False, tp))
        if blocks:
            parts.append(("masks, soft-capping, Gemma norms", blocks))
        if _two_bases(spec):
            parts.append(("local RoPE tables", 2 * work.itemsize * work.seq_len * spec.rotary_width))
    if spec.final_norm and _norm_extra(spec, work):
        parts.append(("final norm (Gemma)", _norm_extra(spec, work)))
    if spec.lm_head and spec.final_logit_softcap is not None:
        parts.append(("final soft-capping", work.itemsize * work.tokens * spec.vocab_size / tp))
    return parts
