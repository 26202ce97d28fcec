"""What transformers' partial-rotary (GPT-J, Phi, StableLM) and OLMo 2 modules hold beyond the
generic layers of live.py / saved_parts.py, by what the spec says of them.

Partial rotary (rotary_width < d_head, q/k/v unfused): the attention slices q and k into a
rotated part and a pass-through view, rotates the first and concatenates the two, so the q and
k projections stay alive through the pass-through views, beside the rotated parts (locals) and
the concatenated q and k, until the attention returns. Phi and StableLM concatenate in the
(B, H, T, dh) layout, so sdpa's output comes back laid out (B, H, T, dh) and the output
projection reads a transposed copy; GPT-J concatenates (B, T, H, dh) before transposing (its
interleaved pairs mark it): no copy.

StableLmDecoderLayer (sequential residual) keeps its normed input and the attention's output
referenced through the MLP. A sequential pre-LayerNorm decoder with a gated FFN is taken for
it: no other transformers module has that shape.

GPT-J (interleaved pairs) repeats sin and cos per rotation and takes eager q and k to float32.

OLMo 2 (q/k RMS norms over the whole projection: the only family with them): its RoPE runs in
float32 (float32 cos and sin, the products upcast) and casts back, and its RMSNorm multiplies
by the weight before casting back, so autograd saves the normed values in float32.
Sizes are in elements of the compute dtype, as in live.py.
"""

from __future__ import annotations

from tfcli.analysis.memory.base import Workload
from tfcli.spec.model import Spec

FLOAT32 = 4


def partial_rope(spec: Spec, fused: frozenset[str]) -> bool:
    """RoPE on part of each head through separate q / k projections (a fused one:
    base.fused_qkv_extra, layouts/falcon.py)."""
    return (spec.positions == "rope" and spec.rotary_width < spec.head_dim
            and not fused & {"qkv", "falcon_qkv"} and not spec.latent_attention)


def sdpa_output_copied(spec: Spec, fused: frozenset[str]) -> bool:
    """Phi / StableLM: q concatenated (B, H, T, dh), so sdpa's output is transposed into a copy."""
    return partial_rope(spec, fused) and spec.rope_pairing != "interleaved"


def gptj_attention(spec: Spec) -> bool:
    """Interleaved pairs outside latent attention: GPT-J's own attention module."""
    return (spec.positions == "rope" and spec.rope_pairing == "interleaved"
            and not spec.latent_attention)


def gptj_saved(spec: Spec, work: Workload, attention: str) -> float:
    """Bytes GPT-J's blocks save beyond the generic ones: each of a block's two rotations
    repeats its own sin and cos to (T, r) (the mul saves them: 4 tables a block, none shared
    by the model), and its eager attention takes q and k to float32 for the scores (the matmul
    saves the float32 copies)."""
    if not gptj_attention(spec):
        return 0
    it = work.itemsize
    upcast = 2 * (FLOAT32 - it) * work.tokens * spec.n_heads * spec.head_dim \
        if attention == "eager" else 0
    return 4 * it * work.seq_len * spec.rotary_width + upcast


def stablelm_layer(spec: Spec) -> bool:
    return (spec.family == "decoder" and spec.norm == "layernorm" and spec.gated
            and spec.parallel_residual == "off" and spec.norm_placement == "pre"
            and not spec.n_experts)


def olmo2_modules(spec: Spec) -> bool:
    return spec.qk_norm == "full"


def normed_itemsize(spec: Spec, itemsize: float) -> float:
    """Bytes of each normed value an RMS norm saves: OLMo 2's stay float32."""
    return FLOAT32 if olmo2_modules(spec) else itemsize


def partial_rope_kept(spec: Spec, tokens: int, fused: frozenset[str]) -> float:
    """The q and k projections (N, (H + Hkv) dh) and their rotated parts (N, (H + Hkv) r)."""
    if not partial_rope(spec, fused):
        return 0
    return tokens * (spec.n_heads + spec.kv_heads) * (spec.head_dim + spec.rotary_width)


def _olmo2_rope_phase(spec: Spec, work: Workload, eager: bool) -> tuple[str, float]:
    """OLMo 2's float32 RoPE beside the normed q, k and v, the block input and the embedding:
    q·cos, rotate_half(q)·sin and their sum (3 q-sized), then q's float32 result beside k's
    three."""
    s, n, t, up = spec, work.tokens, work.seq_len, FLOAT32 / work.itemsize
    held = n * s.d_model * (2 if s.n_layers > 1 else 1) + (work.batch * t * t if eager else 0)
    qkv = n * (s.n_heads + 2 * s.kv_heads) * s.head_dim
    rope = n * s.head_dim * max(3 * s.n_heads, s.n_heads + 3 * s.kv_heads) * up
    return "attention RoPE (float32)", held + 2 * t * s.rotary_width * up + qkv + rope


def adjust_phases(spec: Spec, work: Workload, eager: bool, fused: frozenset[str],
                  phases: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """live.hf_phases' phases with what these modules hold more."""
    n, d = work.tokens, spec.d_model
    attention = partial_rope_kept(spec, n, fused)
    # sdpa's (B, H, T, dh) output and its transposed copy at once
    copy = n * spec.n_heads * spec.head_dim if not eager and sdpa_output_copied(spec, fused) else 0
    ffn = 2 * n * d if stablelm_layer(spec) else 0
    # OLMo 2's cos and sin stay float32 (held counts them in the compute dtype)
    tables = 2 * work.seq_len * spec.rotary_width * (FLOAT32 / work.itemsize - 1) \
        if olmo2_modules(spec) else 0
    more = {"attention scores": attention + copy, "attention output": attention, "FFN": ffn}
    out = [(name, e + more.get(name, 0) + tables) for name, e in phases]
    if olmo2_modules(spec) and spec.positions == "rope":
        out.append(_olmo2_rope_phase(spec, work, eager))
    return out
