"""Multi-head latent attention (DeepSeek-V2, Liu et al. 2024, section 2.1; V3): keys and values
of every head are expanded from one small compressed latent per token, so that the latent (and
one RoPE key shared by the heads) is all a KV cache keeps.

With r = kv_lora_rank, dr = qk_rope_head_dim, dn = qk_nope_head_dim, dv = v_head_dim:
  c, k_rope = split(x W_kv_a)            latent (B, T, r), shared RoPE key (B, T, dr)
  c = RMSNorm(c)                         what the cache stores, with RoPE(k_rope)
  k_nope, v = split(c W_kv_b) per head   (B, H, S, dn), (B, H, S, dv)
  q = x W_q, or RMSNorm(x W_q_a) W_q_b   (B, H, T, dn + dr), its last dr dims rotated
  scores = q . [k_nope, RoPE(k_rope)]    the RoPE key broadcast over the heads
The expansion is recomputed from the cached latent every step, as transformers does (the
"absorbed" form that multiplies W_kv_b into the query instead is equal up to rounding).
"""

from __future__ import annotations

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.attention import ScoreMask, attend, split_heads
from tfcli.engine.cache import LayerCache
from tfcli.engine.inputs import NO_PROBE, Probe, StackInput
from tfcli.engine.ops import apply_norm
from tfcli.engine.parallel import linear
from tfcli.engine.positions import apply_rope, rope_tables
from tfcli.engine.shaped import empty
from tfcli.engine.weights import LatentAttentionWeights, NormWeights
from tfcli.spec.model import Spec


def _latent_norm(spec: Spec, w: NormWeights | None, x: Array) -> Array:
    return apply_norm(spec.norm, w, x, spec.latent_norm_eps, spec.norm_unit_offset)


def _queries(spec: Spec, w: LatentAttentionWeights, x: Array, probe: Probe) -> Array:
    """q (B, H, T, dn + dr): one projection, or through the normed low-rank bottleneck."""
    heads = (*x.shape[:2], spec.n_heads, spec.head_dim)  # (B, T, H, dn + dr)
    if w.wq is not None:
        q = linear(x, w.wq)  # (B, T, d) -> (B, T, H*(dn+dr))
        probe("q_proj", heads, (x,), (w.wq,))
    else:
        low = linear(x, w.wq_a, w.bq_a)  # type: ignore[arg-type]  # (B, T, d) -> (B, T, q_lora)
        probe("q_a_proj", low.shape, (x,), (w.wq_a, w.bq_a))
        normed = _latent_norm(spec, w.q_a_norm, low)
        probe("q_a_norm", normed.shape, (low,), (w.q_a_norm,))
        q = linear(normed, w.wq_b)  # type: ignore[arg-type]  # (B, T, q_lora) -> (B, T, H*(dn+dr))
        probe("q_b_proj", heads, (normed,), (w.wq_b,))
    return split_heads(q, spec.n_heads)  # (B, T, H*(dn+dr)) -> (B, H, T, dn+dr)


def _rotate(spec: Spec, inputs: StackInput, x: Array) -> Array:
    """RoPE on the last qk_rope_head_dim dims of x (B, H|1, T, dr)."""
    interleaved = spec.rope_pairing == "interleaved"
    cos, sin = rope_tables(inputs.positions, spec.rotary_width, spec.rope_theta, x.dtype,
                           spec.rope_scaling, interleaved)  # (B, 1, T, dr) each
    return apply_rope(x, cos, sin, interleaved)


def _expand(spec: Spec, w: LatentAttentionWeights, latent: Array,
            k_rope: Array) -> tuple[Array, Array]:
    """Keys (B, H, S, dn + dr) and values (B, H, S, dv) of every head from the cached latent
    (B, 1, S, r) and the shared rotated key (B, 1, S, dr)."""
    dn = spec.qk_nope_head_dim or 0
    kv = split_heads(linear(latent[:, 0], w.wkv_b), spec.n_heads)  # (B, S, r) -> (B, H, S, dn+dv)
    keys = empty((*kv.shape[:3], spec.head_dim), kv.dtype, kv)  # (B, H, S, dn + dr)
    keys[..., :dn] = kv[..., :dn]
    keys[..., dn:] = k_rope  # (B, 1, S, dr) broadcast over the heads
    return keys, kv[..., dn:]  # values: (B, H, S, dv), a view


def latent_attention(spec: Spec, w: LatentAttentionWeights, x: Array, inputs: StackInput,
                     cache: LayerCache | None = None, probe: Probe = NO_PROBE) -> Array:
    """MLA self-attention: x (B, T, d) -> (B, T, d). With a cache, this step's latent and RoPE
    key are written at slot inputs.start (the cache holds (B, 1, S, r) and (B, 1, S, dr))."""
    r, dn = spec.kv_lora_rank or 0, spec.qk_nope_head_dim or 0
    q = _queries(spec, w, x, probe)  # (B, H, T, dn + dr)
    compressed = linear(x, w.wkv_a, w.bkv_a)  # (B, T, d) -> (B, T, r + dr)
    probe("kv_a_proj", compressed.shape, (x,), (w.wkv_a, w.bkv_a))
    latent = _latent_norm(spec, w.kv_a_norm, compressed[..., :r])[:, None]  # (B, 1, T, r)
    probe("kv_a_norm", (*x.shape[:2], r), ((*x.shape[:2], r),), (w.kv_a_norm,))
    k_rope = _rotate(spec, inputs, compressed[:, None, :, r:])  # (B, 1, T, dr)
    q[..., dn:] = _rotate(spec, inputs, q[..., dn:])  # q is a view of a fresh product
    offset = 0
    if cache is not None:
        offset = inputs.start
        latent, k_rope = cache.update(offset, latent, k_rope)  # (B, 1, S, r), (B, 1, S, dr)
    keys, values = _expand(spec, w, latent, k_rope)  # (B, H, S, dn+dr), (B, H, S, dv)
    probe("kv_b_proj", (*keys.shape[:3], dn + spec.value_dim), (latent[:, 0],), (w.wkv_b,))
    key_mask = None if inputs.key_mask is None else np.asarray(inputs.key_mask, dtype=bool)
    mask = ScoreMask(offset if inputs.causal else None, spec.sliding_window, key_mask,
                     None, spec.attn_logit_softcap)
    out = attend(q, keys, values, spec.scale, mask, probe)  # (B, T, H, dv)
    out = linear(out.reshape(*out.shape[:2], -1), w.wo, w.bo)  # (B, T, H*dv) -> (B, T, d)
    probe("out_proj", out.shape, ((*values.shape[:2], q.shape[2], values.shape[3]),),
          (w.wo, w.bo))  # the heads' values (B, H, T, dv), merged
    return out
