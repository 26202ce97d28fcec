"""Falcon's own modules as the memory planner's layout `falcon`: transformers' FalconForCausalLM
(FalconModel, FalconAttention), which share nothing with the Llama-style layers live.hf_phases
walks.

What differs, as measured op by op (tests/parity/memory_families.py):
- the model always materialises the causal mask (create_causal_mask(allow_is_causal_skip=False)):
  eager a float (B, 1, T, S) mask, sdpa a boolean (1, 1, T, S) one expanded over the batch,
  held through the whole forward; sdpa turns it into a float (B, 1, T, S) mask in every call
  (alive through the kernel, saved for backward);
- query_key_value's output stays referenced (`fused_qkv`) until the attention returns;
- the split: new_decoder_architecture (Falcon-40B / 180B, Falcon 2) copies each group's key
  and value out, then flattens q, k and v into copies with EVERY query head (k and v repeated:
  the attention always sees H key/value heads); the old multi-query layout (Falcon-7B) copies
  its one key and value head out (an index) and leaves q a view; the old per-head layout
  (multi_query off) leaves all three views;
- sdpa with fewer key/value heads than query heads (multi-query) cannot use the fused kernel:
  torch runs its math path, which materialises the scores (masked copy beside them) and saves
  what eager attention saves, in float32 for 16-bit inputs (float32 copies of q, k and v);
- eager attention computes the softmax in the compute dtype (no float32 upcast), and the layer
  loop's `outputs` keeps the previous layer's probabilities alive through the next layer.

The spec describes the maths, not the module layout, so the caller says (`falcon_qkv` in
MemoryOptions.fused, activations.FUSED_MODULES["falcon"]): the registry's explicit key. The old layout is told from the spec:
parallel blocks with one norm (or sequential ones) and 1 or H key/value heads; a Falcon 2-style
new_decoder_architecture checkpoint with one norm and 1 or H key/value heads is taken as old.
Sizes are in elements of the compute dtype unless a name says bytes.
"""

from __future__ import annotations

from tfcli.analysis.memory.base import (FALCON_QKV, FLOAT32, HF_ACTIVATION_TENSORS, INT64, Phase,
                                        SavedActivations, Workload, rounded)
from tfcli.analysis.memory.saved_parts import generic_saved
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

BOOL = 1


def check_falcon_shaped(spec: Spec) -> None:
    """BadInputError unless the spec can be Falcon's: an ungated, dense, RoPE decoder."""
    if spec.family != "decoder" or spec.gated or spec.n_experts or spec.positions != "rope":
        raise BadInputError(f"--fused {FALCON_QKV}: {spec.name} is not Falcon-shaped (a decoder "
                            "with RoPE and an ungated, dense MLP)")


def new_architecture(spec: Spec) -> bool:
    """new_decoder_architecture's grouped query_key_value (k and v repeated to every head)."""
    return spec.parallel_residual == "two_norms" or spec.kv_heads not in (1, spec.n_heads)


def attention_kv_heads(spec: Spec) -> int:
    """Key/value heads the attention computes with: the new layout repeats them to H."""
    return spec.n_heads if new_architecture(spec) else spec.kv_heads


def math_sdpa(spec: Spec) -> bool:
    """sdpa on fewer key/value heads than query heads falls back to torch's math path."""
    return attention_kv_heads(spec) < spec.n_heads


def _split_copies(spec: Spec, tokens: int) -> tuple[float, float]:
    """(copies alive through RoPE, v's own storage after it) that _split_heads makes."""
    heads, dh = spec.n_heads, spec.head_dim
    if new_architecture(spec):  # q, k, v flattened out of the (n_kv, g + 2) groups
        return 3 * tokens * heads * dh, tokens * heads * dh
    if spec.kv_heads == 1:  # multi-query: fused[..., [-2], :] and [-1]: index copies
        return 2 * tokens * dh, tokens * dh
    return 0, 0  # (H, 3, dh): views of the fused output


def _held(spec: Spec, work: Workload, eager: bool) -> float:
    """Through the whole forward: inputs_embeds, the int64 position ids, RoPE's cos and sin,
    the causal mask (eager float (B, 1, T, S); sdpa boolean (1, 1, T, S))."""
    t, it = work.seq_len, work.itemsize
    mask = work.batch * t * t if eager else t * t * BOOL / it
    return work.tokens * spec.d_model + INT64 * t / it + 2 * t * spec.rotary_width + mask


def _attention_phases(spec: Spec, work: Workload, eager: bool, base: float
                      ) -> list[Phase]:
    """The attention's phases beside `base` (held, the block input, its norms, the previous
    layer's probabilities). P = B x H x T x S scores."""
    s, n, t = spec, work.tokens, work.seq_len
    q = n * s.n_heads * s.head_dim
    k = n * attention_kv_heads(s) * s.head_dim
    fused = n * (s.n_heads + 2 * s.kv_heads) * s.head_dim
    copies, v = _split_copies(s, n)
    # RoPE: q*cos, rotate_half(q) and its *sin at once; then q's result beside k's three
    rope = base + fused + copies + max(3 * q, q + 3 * k)
    after = base + fused + q + k + v  # the fused output, RoPE's q and k, v
    probs = work.batch * s.n_heads * t * t
    mask = work.batch * t * t  # sdpa's float copy of the boolean mask
    if eager:  # q and repeated-k copies for the matmul, then scores, masked scores, softmax
        return [("attention RoPE", rope), ("attention scores", after + 2 * q + probs),
                ("attention softmax", after + 3 * probs),
                ("attention output", after + probs + 2 * q)]
    if math_sdpa(s):  # scaled q, k and their matmul copies; then scores beside masked scores
        # torch's math path takes 16-bit q, k, v in float32 copies (unless
        # allow_fp16_bf16_reduction_math_sdp), and so its scores: float32 elements counted in
        # the compute dtype's
        up = FLOAT32 / work.itemsize if work.itemsize < FLOAT32 else 1.0
        inside = after + mask + (up * (q + 2 * k) if up > 1 else 0)
        return [("attention RoPE", rope),
                ("attention scores", inside + up * (3 * q + k + probs)),
                ("attention softmax", inside + up * (q + 2 * probs)),
                ("attention output", inside + up * (3 * q + probs))]
    lse = work.batch * s.n_heads * t * FLOAT32 / work.itemsize
    return [("attention RoPE", rope), ("attention sdpa", after + mask + q + lse),
            ("attention output", after + q + n * s.d_model)]


def falcon_phases(spec: Spec, work: Workload, eager: bool) -> list[Phase]:
    """Live elements per phase of FalconForCausalLM's forward (no_grad, use_cache=False): the
    layer loop holds the block input and (eager) the previous layer's probabilities, the
    block its norms' outputs (two_norms: ln_attn and ln_mlp both, before the attention)."""
    s, n, d, t = spec, work.tokens, spec.d_model, work.seq_len
    held = _held(s, work, eager)
    probs = work.batch * s.n_heads * t * t if eager else 0
    x_in = n * d if s.n_layers > 1 else 0  # block 0's input is inputs_embeds itself
    norms = n * d * (2 if s.parallel_residual == "two_norms" else 1)
    prev = probs if s.n_layers > 1 else 0
    base = held + x_in + norms + prev
    # the MLP: attention's output beside its returned probabilities; sequential blocks also
    # hold the attention residual sum and post_attention_layernorm's output
    sequential = 2 * n * d if s.parallel_residual == "off" else 0
    mlp = n * s.d_ff * HF_ACTIVATION_TENSORS[s.activation]
    phases = _attention_phases(s, work, eager, base) + [
        ("FFN", base + n * d + probs + sequential + mlp),
        ("final norm", held + 2 * n * d + probs),  # the loop's `outputs` keeps the last block's
    ]
    if s.lm_head:  # FalconModel has returned: ln_f's output and the logits
        phases.append(("logits", n * d + n * s.vocab_size))
    return phases


def falcon_attention_saved(spec: Spec, work: Workload, attention: str) -> tuple[float, float]:
    """(q/k/v and mask saved, probabilities saved) of one Falcon attention, bytes. Eager and
    the math sdpa path save q, K and V as the batched matmuls see them (multi-query at batch
    1: K and V broadcast by a zero stride, not copied) and the probabilities; the fused sdpa
    kernel q, k and v with every head, the logsumexp, and its float copy of the mask (the
    output it returns is the very storage the dense projection saves). The old per-head
    layout leaves v a view of the fused output, so what is saved for it is the whole fused
    output (sdpa; eager at batch 1, where the matmul needs no copy of it)."""
    s, n, it, t = spec, work.tokens, work.itemsize, work.seq_len
    q = n * s.n_heads * s.head_dim
    v_view = not new_architecture(s) and s.kv_heads == s.n_heads
    fused_v = it * 2 * q if v_view else 0  # (H, 3, dh): the fused output less v itself
    if attention == "eager" or math_sdpa(s):
        kv_heads = attention_kv_heads(s) if work.batch == 1 else s.n_heads
        acc = it if attention == "eager" else max(it, FLOAT32)  # math sdpa: float32 in 16 bits
        probs = acc * work.batch * s.n_heads * t * t
        return (acc * (q + 2 * n * kv_heads * s.head_dim) + (fused_v if work.batch == 1 else 0),
                probs)
    mask = it * work.batch * t * t
    return it * 3 * q + FLOAT32 * work.batch * s.n_heads * t + mask + fused_v, 0


def live(spec: Spec, work: Workload, attention: str, fused: frozenset[str]) -> list[Phase]:
    check_falcon_shaped(spec)
    return falcon_phases(spec, work, attention == "eager")


def saved(spec: Spec, work: Workload, attention: str, recompute: str, tp: int, dropout: bool,
          fused: frozenset[str]) -> SavedActivations:
    """The generic blocks around Falcon's attention (falcon_attention_saved)."""
    check_falcon_shaped(spec)
    return rounded(*generic_saved(spec, work, attention, recompute, tp, dropout, fused,
                                  falcon_attention_saved))
