"""Activation memory of DeepSeek-V2/V3 blocks as transformers runs them: multi-head latent
attention (MLA, tfcli/engine/latent_attention.py) and the DeepSeek MoE layer (routed experts
first, then ungated shared experts; a softmax or sigmoid, optionally group-limited router).

Notation: N tokens, H heads, dq = qk_nope_head_dim + qk_rope_head_dim (d_head), dn the nope
part, dr the RoPE part, dv = v_head_dim, r = kv_lora_rank, rq = q_lora_rank, E experts, k
routed per token, S = N x k routed slots, G groups, g = topk_groups, `it` the compute dtype's
bytes. Inference figures are in elements of the compute dtype (live.py's unit),
saved figures in bytes (saved_parts.py's).

torch's CPU sdpa runs its flash kernel only when q, k and v have one head width: MLA's dq and
dv differ in every released DeepSeek (192 and 128), so sdpa falls back to the math path,
which materialises the scores and probabilities as eager does (measured). CUDA's
memory-efficient kernel takes dq != dv without materialising them: not measured here.
"""

from __future__ import annotations

from tfcli.analysis.memory.base import Workload
from tfcli.spec.model import Spec

FLOAT32 = 4
INT64 = 8


def sdpa_materialises(spec: Spec) -> bool:
    """torch's CPU sdpa falls back to its math path (scores and probabilities materialised)
    when the query/key and value heads differ in width, as MLA's usually do."""
    return spec.head_dim != spec.value_dim


def deepseek_moe(spec: Spec) -> bool:
    """A DeepSeek MoE layer: ungated shared experts run after the routed ones, the router
    scores in float32 (sigmoid or softmax, group-limited or not)."""
    return bool(spec.n_experts) and (
        (spec.n_shared_experts > 0 and not spec.shared_expert_gate)
        or spec.router_scoring == "sigmoid" or spec.group_limited)


# --- inference (elements) -------------------------------------------------------------------


def _mla_projections(spec: Spec, tokens: int) -> float:
    """What DeepseekV3Attention.forward holds once its projections ran, to its return: the
    query projection (N, H dq), the compressed kv_a output (N, r + dr) (k_rot's view keeps it),
    the normed latent (N, r), the rotated q and k RoPE parts (N, H dr) and (N, dr), the
    concatenated query (N, H dq), kv_b's output (N, H (dn + dv); v is a view of it) and the
    keys (N, H dq) it copies k_nope and k_rot into."""
    s, n, h = spec, tokens, spec.n_heads
    r, dr = s.kv_lora_rank or 0, s.qk_rope_head_dim or 0
    dn = s.qk_nope_head_dim or 0
    return n * (3 * h * s.head_dim + (r + dr) + r + h * dr + dr + h * (dn + s.value_dim))


def latent_attention_live(spec: Spec, work: Workload, eager: bool) -> tuple[float, float]:
    """MLA's (attention scores, attention output) phases' elements beyond what the layer and
    model hold (embeddings, mask, residual, normed input): its projections, then eager's or
    sdpa's core (the math path when the head widths differ, else the flash kernel)."""
    held = _mla_projections(spec, work.tokens)
    if eager:
        scores, output = _eager_core(spec, work)
    elif sdpa_materialises(spec):
        scores, output = _math_core(spec, work)
    else:  # flash: its (N, H dv) output and float32 logsumexp, then the transposed copy
        heads_v = work.tokens * spec.n_heads * spec.value_dim
        lse = FLOAT32 * work.batch * spec.n_heads * work.seq_len / work.itemsize
        scores, output = heads_v + lse, 2 * heads_v + lse + work.tokens * spec.d_model
    return held + scores, held + output


def _eager_core(spec: Spec, work: Workload) -> tuple[float, float]:
    """Scores: the matmul's and the scaled scores at once (16 bits: softmax(dtype=float32)'s
    float32 copy and result beside them). Output: the probabilities, the v copy the batched
    matmul makes (a view at batch 1), its output, the transposed copy, the output projection's
    (N, d)."""
    s, n, b, t = spec, work.tokens, work.batch, work.seq_len
    probs = b * s.n_heads * t * t
    heads_v = n * s.n_heads * s.value_dim
    core = 2 * probs if work.itemsize >= FLOAT32 else probs * (1 + 2 * FLOAT32 / work.itemsize)
    return core, probs + (heads_v if b > 1 else 0) + 2 * heads_v + n * s.d_model


def _math_core(spec: Spec, work: Workload) -> tuple[float, float]:
    """sdpa's math path, all in float32 (16 bits: float32 copies of q, k and v first). Scores:
    the scaled q (the scaled k freed by then), its own (T, S) causal mask and both score
    tensors. Output: as eager's, in float32 up to the cast-back output."""
    s, n, b, t = spec, work.tokens, work.batch, work.seq_len
    up = FLOAT32 / work.itemsize
    probs = b * s.n_heads * t * t
    heads_q, heads_v = n * s.n_heads * s.head_dim, n * s.n_heads * s.value_dim
    copies = (2 * heads_q + heads_v) * up if work.itemsize < FLOAT32 else 0
    v_copy = heads_v if b > 1 else 0
    return (copies + up * (heads_q + t * t + 2 * probs),
            copies + up * (probs + v_copy + heads_v) + heads_v + n * s.d_model)


def _experts_live(spec: Spec, work: Workload) -> float:
    """transformers' grouped experts on DeepSeek's router: per slot the gathered input beside
    the gate/up product, activation and gated product, or after the down projection beside
    its output, the weighted output and its unsorted copy, both float32 (the router's
    weights stay float32: measured in bfloat16); the router's top-k and sorts as
    live.moe_live counts them."""
    s, n, it = spec, work.tokens, work.itemsize
    slots = n * s.experts_per_token
    routing = n * (FLOAT32 * s.n_experts + 44 * s.experts_per_token) / it
    tail = 2 * s.d_model + 2 * s.d_model * FLOAT32 / it
    return slots * max(s.d_model + 4 * s.expert_width, tail) + routing


def deepseek_moe_phases(spec: Spec, work: Workload, base: float,
                        mlp_tensors: float) -> list[tuple[str, float]]:
    """DeepseekV3MoE: the routed experts on the normed input, then the shared experts, whose
    MLP (`mlp_tensors` hidden-width tensors) runs beside the routed output (N, d). `base`:
    what the layer holds around its MLP."""
    n = work.tokens
    return [("MoE experts", base + _experts_live(spec, work)),
            ("shared experts", base + n * spec.d_model + n * spec.shared_width * mlp_tensors)]


# --- training (bytes) -----------------------------------------------------------------------


def _rms_saved(work: Workload, width: int, view_width: int | None = None) -> float:
    """transformers' RMSNorm over (N, width): its float32 input (in float32 training the very
    storage it was sliced from, `view_width` wide), rsqrt, the normed values; and the next
    projection's input (the weighted output)."""
    n, it = work.tokens, work.itemsize
    source = view_width if it >= FLOAT32 and view_width else width
    return FLOAT32 * n * source + FLOAT32 * n + 2 * it * n * width


def latent_attention_saved(spec: Spec, work: Workload,
                           attention: str) -> tuple[float, float, float]:
    """MLA's (projections and core, probabilities, output-projection input) saved bytes. The
    block's normed input (read by q / q_a and kv_a) is counted by the caller. q_lora_rank: the
    q_a norm and q_b's input; the latent's norm (its input a view of kv_a's output) and kv_b's
    input; eager and the sdpa math path save q and k as the matmuls read them, v as the batched
    matmul copies it (batch 1: a view of kv_b's whole output) and the probabilities (16-bit
    eager: also their float32 original); the flash path q, k, v (a view), its output and the
    logsumexp."""
    s, n, it, b, t = spec, work.tokens, work.itemsize, work.batch, work.seq_len
    r, dr, dn = s.kv_lora_rank or 0, s.qk_rope_head_dim or 0, s.qk_nope_head_dim or 0
    h, dq, dv = s.n_heads, s.head_dim, s.value_dim
    projections = _rms_saved(work, r, r + dr)
    if s.q_lora_rank:
        projections += _rms_saved(work, s.q_lora_rank)
    kv_b_out = it * n * h * (dn + dv)
    if attention == "sdpa" and not sdpa_materialises(s):
        core = it * n * h * (2 * dq + dv) + kv_b_out + FLOAT32 * b * h * t
        return projections + core, 0.0, it * n * h * dv
    if attention == "sdpa":  # the math path: in 16 bits on float32 copies of q, k and v
        v = kv_b_out if b == 1 and it >= FLOAT32 else FLOAT32 * n * h * dv
        core = FLOAT32 * 2 * n * h * dq + v
        return projections + core, FLOAT32 * b * h * t * t, it * n * h * dv
    v = kv_b_out if b == 1 else it * n * h * dv
    upcast = it < FLOAT32  # softmax(dtype=float32), then cast back: both saved
    probs = b * h * t * t * ((FLOAT32 + it) if upcast else it)
    return projections + 2 * it * n * h * dq + v, probs, it * n * h * dv


def deepseek_moe_saved(spec: Spec, work: Workload, shared_mlp: float) -> float:
    """DeepseekV3MoE's saved bytes: per routed slot its gathered input, gate/up product,
    activation, gated product and output, plus three int64 sort indices and its float32
    weight; the router's float32 scores (softmax or sigmoid output), top-k indices (int64),
    V3's renormalised weights and their sum, a group-limited router's group indices and
    (N, E) boolean mask; under 16-bit training its float32 copies of the input and of the
    router weight; the ungated shared experts' MLP (`shared_mlp`); 4E bytes of int32 offsets."""
    s, n, it, k, e = spec, work.tokens, work.itemsize, spec.experts_per_token, spec.n_experts
    slots = n * k
    routed = it * slots * (2 * s.d_model + 4 * s.expert_width) + (3 * INT64 + FLOAT32) * slots
    router = n * (FLOAT32 * e + INT64 * k) + FLOAT32 * e
    v3 = s.router_scoring == "sigmoid"  # DeepseekV3TopkRouter: always scores its groups
    if v3 and s.norm_topk_prob:  # the weights / (their sum + 1e-20)
        router += n * FLOAT32 * (k + 1)
    if v3 or s.group_limited:  # group scores' indices (V3: each group's best two), the
        # chosen groups' and the (N, E) mask
        per_group = 2 * INT64 if v3 else INT64
        router += n * (per_group * s.expert_groups + INT64 * (s.topk_groups or 1) + e)
    if it < FLOAT32:  # hidden_states.type(float32) and weight.type(float32) for the logits
        router += FLOAT32 * (n + e) * s.d_model
    return routed + router + shared_mlp
