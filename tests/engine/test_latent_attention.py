"""Multi-head latent attention against a float64 reference written out here, head by head: the
keys and values expanded from the latent, RoPE as DeepSeek-V2 writes it (complex multiplication
of (2i, 2i+1) pairs), the YaRN-corrected scale; and against MLA's "absorbed" form, which never
expands K/V (scores q_nope W_uk . c + q_rope . k_rope; output (p . c) W_uv W_o), an independent
second derivation. Then the latent KV cache: what it holds and that cached decoding equals the
uncached pass.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine.engine_specs import make_spec
from tests.tolerance import assert_close
from tfcli.engine.cache import KVCache
from tfcli.engine.generate import decode_step, left_pad, prefill
from tfcli.engine.inputs import StackInput
from tfcli.engine.init import init_weights
from tfcli.engine.latent_attention import latent_attention
from tfcli.engine.model import ModelInput, forward
from tfcli.engine.positions import rope_tables
from tfcli.spec.counts import kv_cache_bytes

T = 7


def _rms(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _rope_complex(x: np.ndarray, spec, positions: np.ndarray) -> np.ndarray:
    """x (..., T, dr) rotated as DeepSeek-V2's apply_rotary_emb: pairs (2i, 2i+1) as complex
    numbers times e^(i p f_i), with the spec's (scaled) frequencies and attention factor."""
    cos, sin = rope_tables(positions[None], spec.rotary_width, spec.rope_theta, np.float64,
                           spec.rope_scaling, interleaved=True)  # (1, 1, T, dr): a0 a0 a1 a1
    rotor = (cos[0, 0, :, 0::2] + 1j * sin[0, 0, :, 0::2])  # (T, dr/2), times the factor
    z = x[..., 0::2] + 1j * x[..., 1::2]
    z = z * rotor
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def _parts(spec, w, x):
    """Queries (H, T, qk) with RoPE applied, latent (T, r), rotated shared key (T, dr)."""
    H, dn, r = spec.n_heads, spec.qk_nope_head_dim, spec.kv_lora_rank
    positions = np.arange(T)
    if w.wq is not None:
        q = x @ w.wq
    else:
        q = _rms(x @ w.wq_a, w.q_a_norm.scale, spec.latent_norm_eps) @ w.wq_b
    q = q.reshape(T, H, -1).transpose(1, 0, 2).copy()  # (H, T, qk)
    q[..., dn:] = _rope_complex(q[..., dn:], spec, positions)
    compressed = x @ w.wkv_a + (0 if w.bkv_a is None else w.bkv_a)
    latent = _rms(compressed[:, :r], w.kv_a_norm.scale, spec.latent_norm_eps)
    return q, latent, _rope_complex(compressed[:, r:], spec, positions)


def _softmax_causal(scores: np.ndarray) -> np.ndarray:
    scores = np.where(np.tril(np.ones((T, T), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True)


def _expanded(spec, w, x):
    H, dn, dv = spec.n_heads, spec.qk_nope_head_dim, spec.v_head_dim
    q, latent, k_rope = _parts(spec, w, x)
    out = np.zeros((T, H * dv))
    for h in range(H):
        kv = latent @ w.wkv_b[:, h * (dn + dv):(h + 1) * (dn + dv)]  # (T, dn + dv)
        keys = np.concatenate([kv[:, :dn], k_rope], axis=-1)  # (T, qk)
        p = _softmax_causal(spec.scale * q[h] @ keys.T)
        out[:, h * dv:(h + 1) * dv] = p @ kv[:, dn:]
    return out @ w.wo


def _absorbed(spec, w, x):
    H, dn, dv, r = spec.n_heads, spec.qk_nope_head_dim, spec.v_head_dim, spec.kv_lora_rank
    q, latent, k_rope = _parts(spec, w, x)
    w_b = w.wkv_b.reshape(r, H, dn + dv)
    out = np.zeros((T, H * dv))
    for h in range(H):
        q_latent = q[h, :, :dn] @ w_b[:, h, :dn].T  # (T, r): the key up-projection absorbed
        scores = q_latent @ latent.T + q[h, :, dn:] @ k_rope.T
        p = _softmax_causal(spec.scale * scores)
        out[:, h * dv:(h + 1) * dv] = (p @ latent) @ w_b[:, h, dn:]  # the value's, after
    return out @ w.wo


@pytest.mark.parametrize("variant", ["deepseek_v3", "deepseek_v2"])
@pytest.mark.parametrize("reference", [_expanded, _absorbed])
def test_latent_attention_is_the_formula(variant: str, reference) -> None:
    spec = make_spec(variant)
    w = init_weights(spec, seed=4, dtype=np.float64).decoder.blocks[0].attn
    x = np.random.default_rng(5).standard_normal((1, T, spec.d_model))
    got = latent_attention(spec, w, x, StackInput.over(T, causal=True))
    # sums of d_model, r and T terms, a softmax: a few hundred roundings at most
    assert_close(got[0], reference(spec, w, x[0]), ops=4 * (spec.d_model + spec.kv_lora_rank + T))


@pytest.mark.parametrize("variant", ["deepseek_v3", "deepseek_v2"])
def test_the_cache_holds_the_latent_and_the_rope_key(variant: str) -> None:
    spec = make_spec(variant)
    cache = KVCache(spec, batch=2, max_len=11)
    r, dr = spec.kv_lora_rank, spec.qk_rope_head_dim
    assert [a.shape for a in (cache.k[0], cache.v[0])] == [(2, 1, 11, r), (2, 1, 11, dr)]
    assert cache.nbytes == kv_cache_bytes(spec, 11, batch=2) == 2 * 11 * (r + dr) * 4 * spec.n_layers


def test_cached_decoding_equals_the_whole_pass() -> None:
    """A left-padded prompt batch prefilled into the latent cache, then one token per step:
    each step's logits equal the uncached forward pass of the whole sequence at that slot."""
    spec = make_spec("deepseek_v3")
    weights = init_weights(spec, seed=6)
    rng = np.random.default_rng(7)
    rows = [rng.integers(1, spec.vocab_size, size=n) for n in (5, 3)]
    new = rng.integers(1, spec.vocab_size, size=(2, 4))  # teacher-forced next tokens
    prompt, batch = left_pad(rows, max_len=9)  # (2, 5), slots 0..8
    cache = KVCache(spec, batch=2, max_len=9)
    steps = [prefill(spec, weights, prompt, cache, batch)]  # (2, V) at slot 4
    for t in range(4):
        steps.append(decode_step(spec, weights, new[:, t], 5 + t, cache, batch))
    sequence = np.concatenate([prompt, new], axis=1)  # (2, 9)
    whole = forward(spec, weights, ModelInput(sequence, batch.key_mask.astype(int),
                                              positions=batch.positions)).logits
    for step, slot in zip(steps, range(4, 9)):
        # float32 through 3 blocks: sums of up to d_model terms per product, a few products
        assert_close(step, whole[:, slot], ops=4000, dtype=np.float32)
