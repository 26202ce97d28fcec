"""Attention against a straightforward per-head loop and a dense softmax; RoPE, sinusoidal and
T5 buckets against their defining formulas."""

from __future__ import annotations

import math
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from tests.engine.engine_specs import make_spec
from tests.tolerance import assert_close
from tfcli.engine import attention as attention_module
from tfcli.engine.attention import ScoreMask, attend, attention, cross_attention
from tfcli.engine.inputs import StackInput
from tfcli.engine.ops import softmax
from tfcli.engine.positions import relative_buckets, sinusoidal
from tfcli.engine.init import init_weights


def _rotate(vec: np.ndarray, pos: int, theta: float) -> np.ndarray:
    """RoPE by hand, HF LLaMA pairing: dimension i turns with i + d/2 by pos * theta^(-2i/d)."""
    half = vec.size // 2
    out = vec.copy()
    for i in range(half):
        angle = pos * theta ** (-2 * i / vec.size)
        a, b = vec[i], vec[i + half]
        out[i], out[i + half] = a * math.cos(angle) - b * math.sin(angle), a * math.sin(angle) + b * math.cos(angle)
    return out


def _loop_attention(spec, w, x, positions, causal, key_mask, context=None):
    """One head, one query at a time; K/V head h // group serves query head h."""
    batch, length, _ = x.shape
    src = x if context is None else context
    n_keys, dh, group = src.shape[1], spec.head_dim, spec.n_heads // spec.kv_heads
    q_all = x @ w.wq + (w.bq if w.bq is not None else 0)
    k_all = src @ w.wk + (w.bk if w.bk is not None else 0)
    v_all = src @ w.wv + (w.bv if w.bv is not None else 0)
    heads = np.zeros((batch, length, spec.n_heads * dh))
    for b in range(batch):
        for h in range(spec.n_heads):
            kv = h // group
            for i in range(length):
                q = q_all[b, i, h * dh:(h + 1) * dh]
                if spec.positions == "rope" and context is None:
                    q = _rotate(q, positions[b, i], spec.rope_theta)
                scores = np.full(n_keys, -np.inf)
                for j in range(n_keys):
                    if (causal and j > i) or (key_mask is not None and not key_mask[b, j]):
                        continue
                    k = k_all[b, j, kv * dh:(kv + 1) * dh]
                    if spec.positions == "rope" and context is None:
                        k = _rotate(k, positions[b, j], spec.rope_theta)
                    scores[j] = spec.scale * q @ k
                if np.isinf(scores).all():
                    continue  # fully masked: output zero
                p = np.exp(scores - scores.max())
                p /= p.sum()
                heads[b, i, h * dh:(h + 1) * dh] = p @ v_all[b, :, kv * dh:(kv + 1) * dh]
    return heads @ w.wo + (w.bo if w.bo is not None else 0)


@pytest.mark.parametrize("variant, changes", [
    ("gpt", {}), ("llama_gqa", {}), ("llama_gqa", {"n_kv_heads": 1}), ("mqa_sinusoidal", {}),
    ("gpt", {"d_head": 6, "n_kv_heads": 2}),
])
@pytest.mark.parametrize("causal", [True, False])
def test_attention_matches_a_per_head_loop(variant, changes, causal):
    spec = make_spec(variant, **changes)
    w = init_weights(spec, seed=3, dtype=np.float64).decoder.blocks[0].attn
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 7, spec.d_model))
    positions = np.array([np.arange(7) + 3, np.arange(7)])
    key_mask = np.ones((2, 7), bool)
    key_mask[1, 5:] = False
    key_mask[0, :2] = False  # with causal, queries 0-1 of sequence 0 see nothing at all
    got = attention(spec, w, x, StackInput(causal, positions, positions, key_mask=key_mask))
    expected = _loop_attention(spec, w, x, positions, causal, key_mask)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    assert not np.isnan(got).any()


def test_cross_attention_matches_a_per_head_loop():
    spec = make_spec("t5", n_kv_heads=2)
    w = init_weights(spec, seed=3, dtype=np.float64).decoder.blocks[0].cross_attn
    rng = np.random.default_rng(1)
    x, context = rng.normal(size=(2, 4, spec.d_model)), rng.normal(size=(2, 6, spec.d_model))
    key_mask = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]], bool)
    side = StackInput.over(4, False, encoder_out=context, encoder_mask=key_mask)
    got = cross_attention(spec, w, x, side)
    expected = _loop_attention(spec, w, x, None, False, key_mask, context=context)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_sinusoidal_matches_the_paper():
    table = sinusoidal(np.arange(50)[None], 16, np.dtype(np.float64))[0]
    for pos in (0, 1, 17, 49):
        for i in range(8):
            assert table[pos, 2 * i] == pytest.approx(math.sin(pos / 10000 ** (2 * i / 16)), abs=1e-12)
            assert table[pos, 2 * i + 1] == pytest.approx(math.cos(pos / 10000 ** (2 * i / 16)), abs=1e-12)


# Reference buckets from transformers' T5Attention._relative_position_bucket (32 buckets,
# max distance 128) for relative positions key - query below.
RELATIVE = np.array([-300, -128, -127, -64, -40, -20, -16, -9, -8, -7, -1, 0, 1, 7, 8, 9, 16, 20, 40, 64, 127, 128, 300])
BIDIRECTIONAL = [15, 15, 15, 14, 12, 10, 10, 8, 8, 7, 1, 0, 17, 23, 24, 24, 26, 26, 28, 30, 31, 31, 31]
UNIDIRECTIONAL = [31, 31, 31, 26, 23, 17, 16, 9, 8, 7, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]


def test_t5_relative_buckets_match_transformers():
    bi = relative_buckets(RELATIVE, bidirectional=True, n_buckets=32, max_distance=128)
    uni = relative_buckets(RELATIVE, bidirectional=False, n_buckets=32, max_distance=128)
    assert bi.tolist() == BIDIRECTIONAL
    assert uni.tolist() == UNIDIRECTIONAL


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 9), st.integers(0, 5), st.sampled_from([1, 2, 4]), st.booleans(), st.data())
def test_blocked_attend_equals_one_dense_softmax(n_queries, offset, n_kv, causal, data):
    """Many tiny query blocks (causal trimming, sliding-window trimming, masks, bias per block)
    == one dense square masked by hand."""
    rng = np.random.default_rng(n_queries * 100 + offset)
    n_keys, n_heads, dh = offset + n_queries, 4, 3
    q = rng.normal(size=(2, n_heads, n_queries, dh))
    k, v = rng.normal(size=(2, n_kv, n_keys, dh)), rng.normal(size=(2, n_kv, n_keys, dh))
    key_mask = data.draw(arrays(bool, (2, n_keys)))
    window = data.draw(st.one_of(st.none(), st.integers(1, 8))) if causal else None
    bias = rng.normal(size=(1, n_heads, n_queries, n_keys))
    scores = np.einsum("bhtd,bhsd->bhts", q, np.repeat(k, n_heads // n_kv, axis=1)) * 0.5 + bias
    query_at, key_at = offset + np.arange(n_queries)[:, None], np.arange(n_keys)[None, :]
    allowed = key_mask[:, None, None, :] & ((not causal) | (key_at <= query_at))
    if window is not None:
        allowed &= key_at > query_at - window  # transformers' sliding_window_overlay
    scores = np.where(allowed, scores, -np.inf)
    expected = np.einsum("bhts,bhsd->bthd", softmax(scores), np.repeat(v, n_heads // n_kv, axis=1))
    with patch.object(attention_module, "QUERY_BLOCK_BYTES", 8), \
            patch.object(attention_module, "MIN_QUERY_BLOCK", data.draw(st.integers(1, 3))):
        got = attend(q, k, v, 0.5, ScoreMask(offset if causal else None, window, key_mask, bias))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def _dense_windowed(q, k, v, offset, window, key_mask):
    """The reference: one dense square, transformers' window overlay on a causal mask."""
    group = q.shape[1] // k.shape[1]
    scores = np.einsum("bhtd,bhsd->bhts", q, np.repeat(k, group, axis=1)) * 0.5
    query_at = offset + np.arange(q.shape[2])[:, None]
    key_at = np.arange(k.shape[2])[None, :]
    allowed = key_mask[:, None, None, :] & (key_at <= query_at) & (key_at > query_at - window)
    return np.einsum("bhts,bhsd->bthd", softmax(np.where(allowed, scores, -np.inf)),
                     np.repeat(v, group, axis=1))


@pytest.mark.parametrize("window", [1, 2, 3, 5, 8, 40])
@pytest.mark.parametrize("min_block", [1, 2, 3, 16])
def test_sliding_window_across_query_blocks(window, min_block):
    """A deterministic sweep (the property test above draws at random): every block boundary
    against every window edge, with GQA, a prefix already cached and a padding mask."""
    rng = np.random.default_rng(window * 100 + min_block)
    for n_queries, offset in [(1, 0), (1, 9), (5, 0), (9, 3), (17, 0), (20, 6)]:
        n_keys = offset + n_queries
        q = rng.normal(size=(2, 4, n_queries, 3))
        k, v = rng.normal(size=(2, 2, n_keys, 3)), rng.normal(size=(2, 2, n_keys, 3))
        key_mask = np.ones((2, n_keys), bool)
        key_mask[1, : n_keys // 3] = False  # left padding in the second sequence
        with patch.object(attention_module, "QUERY_BLOCK_BYTES", 8), \
                patch.object(attention_module, "MIN_QUERY_BLOCK", min_block):
            got = attend(q, k, v, 0.5, ScoreMask(offset, window, key_mask))
        np.testing.assert_allclose(got, _dense_windowed(q, k, v, offset, window, key_mask),
                                   rtol=1e-12, atol=1e-12, err_msg=f"{n_queries=} {offset=}")


def test_sliding_window_skips_keys_outside_it():
    """A query never multiplies keys outside its window: NaN keys there leave the output finite
    and equal to attending over the window alone."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(1, 2, 1, 4)) for _ in range(3))
    k = np.concatenate([np.full((1, 2, 6, 4), np.nan), rng.normal(size=(1, 2, 3, 4))], axis=2)
    v = np.concatenate([np.full((1, 2, 6, 4), np.nan), rng.normal(size=(1, 2, 3, 4))], axis=2)
    got = attend(q, k, v, 0.5, ScoreMask(causal_offset=8, window=3))  # query at 8 sees keys 6, 7, 8
    # Close, not equal: a slice of the padded keys is strided, the reference's keys are not, and
    # NumPy may take another matmul loop for them. A NaN key read would still fail it. Roundings:
    # 4-term scores, exp, a 3-term sum and a division, 3-term outputs; 16 covers them.
    assert_close(got, attend(q, k[:, :, 6:], v[:, :, 6:], 0.5), ops=16)
