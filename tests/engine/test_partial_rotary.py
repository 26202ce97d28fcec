"""rotary_dim (partial rotary) and rope_pairing (rotate-half vs GPT-J's interleaved pairs)
against a float64 reference of the rotation written out pair by pair, against transformers' own
functions (GPT-NeoX apply_rotary_pos_emb with a partial table, GPT-J rotate_every_two /
apply_rotary_pos_emb, ROPE_INIT_FUNCTIONS with partial_rotary_factor), and through the engine:
attention, the KV cache and the trace."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.engine.engine_specs import make_spec
from tfcli.engine.attention import attention
from tfcli.engine.init import init_weights
from tfcli.engine.inputs import StackInput
from tfcli.engine.positions import apply_rope, rope_tables
from tfcli.spec.rope import RopeScaling

if TYPE_CHECKING:
    import transformers

F64 = np.dtype(np.float64)


def _reference(x: np.ndarray, positions: np.ndarray, rotary: int, theta: float,
               pairing: str) -> np.ndarray:
    """RoPE as a 2x2 rotation of each pair (a, b) by angle p * theta^(-2i/r), written out in
    float64: pair i is (i, i + r/2) for half, (2i, 2i + 1) for interleaved; dims >= r untouched.
    x (B, H, T, dh), positions (B, T)."""
    out = x.copy()
    for i in range(rotary // 2):
        a, b = (i, i + rotary // 2) if pairing == "half" else (2 * i, 2 * i + 1)
        angle = positions[:, None, :] * theta ** (-2 * i / rotary)  # (B, 1, T)
        cos, sin = np.cos(angle), np.sin(angle)
        out[..., a] = x[..., a] * cos - x[..., b] * sin
        out[..., b] = x[..., b] * cos + x[..., a] * sin
    return out


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize(("d_head", "rotary"), [(16, 16), (16, 4), (12, 8), (10, 2)])
def test_rotation_matches_the_float64_formula(pairing: str, d_head: int, rotary: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 7, d_head))
    positions = np.array([[0, 1, 2, 3, 4, 5, 6], [3, 4, 9, 10, 11, 40, 41]])
    interleaved = pairing == "interleaved"
    cos, sin = rope_tables(positions, rotary, 500.0, F64, interleaved=interleaved)
    assert cos.shape == (2, 1, 7, rotary)
    got = apply_rope(x, cos, sin, interleaved)
    np.testing.assert_allclose(got, _reference(x, positions, rotary, 500.0, pairing),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got[..., rotary:], x[..., rotary:])  # passed through exactly


def test_the_two_pairings_differ() -> None:
    x = np.random.default_rng(1).normal(size=(1, 1, 3, 8))
    positions = np.arange(3)[None]
    half = apply_rope(x, *rope_tables(positions, 8, 1e4, F64))
    interleaved = apply_rope(x, *rope_tables(positions, 8, 1e4, F64, interleaved=True), True)
    assert np.abs(half - interleaved).max() > 1e-2


def _neox_config(transformers: ModuleType, d_head: int, fraction: float, theta: float,
                 scaling: dict | None = None) -> transformers.GPTNeoXConfig:
    params = {"rope_type": "default", "rope_theta": theta, "partial_rotary_factor": fraction}
    params |= scaling or {}
    return transformers.GPTNeoXConfig(hidden_size=4 * d_head, num_attention_heads=4,
                                      max_position_embeddings=64, rope_parameters=params)


@pytest.mark.parametrize(("d_head", "fraction"), [(32, 0.25), (16, 0.5), (20, 0.4), (8, 1.0)])
def test_neox_partial_rotary_matches_transformers(torch: ModuleType, transformers: ModuleType,
                                                  d_head: int, fraction: float) -> None:
    """GPTNeoXRotaryEmbedding over int(d_head * rotary_pct) dims, applied by its
    apply_rotary_pos_emb (which rotates cos.shape[-1] dims and concatenates the rest)."""
    from transformers.models.gpt_neox import modeling_gpt_neox as neox

    rotary = int(d_head * fraction)
    config = _neox_config(transformers, d_head, fraction, 10000.0)
    rng = np.random.default_rng(2)
    q, k = rng.normal(size=(2, 4, 9, d_head)), rng.normal(size=(2, 4, 9, d_head))
    positions = np.array([list(range(9)), list(range(20, 29))])
    cos_t, sin_t = neox.GPTNeoXRotaryEmbedding(config)(torch.zeros(1, dtype=torch.float64),
                                                       torch.tensor(positions))
    assert cos_t.shape[-1] == rotary
    q_t, k_t = neox.apply_rotary_pos_emb(torch.tensor(q), torch.tensor(k), cos_t, sin_t)
    cos, sin = rope_tables(positions, rotary, 10000.0, F64)
    # transformers computes its angles in float32: agreement to float32's resolution
    np.testing.assert_allclose(apply_rope(q, cos, sin), q_t.numpy(), rtol=0, atol=5e-6)
    np.testing.assert_allclose(apply_rope(k, cos, sin), k_t.numpy(), rtol=0, atol=5e-6)


@pytest.mark.parametrize(("d_head", "rotary"), [(16, 8), (16, 16), (32, 4)])
def test_gptj_interleaved_rotary_matches_transformers(torch: ModuleType, d_head: int,
                                                     rotary: int) -> None:
    """GPT-J: create_sinusoidal_positions over rotary_dim (base 10000), then
    apply_rotary_pos_emb (repeat_interleave + rotate_every_two) on the first rotary_dim dims.
    GPT-J's tensors are (B, T, H, dh) at that point."""
    from transformers.models.gptj import modeling_gptj as gptj

    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 4, 11, d_head))  # ours: (B, H, T, dh)
    positions = np.array([list(range(11)), list(range(5, 16))])
    table = gptj.create_sinusoidal_positions(32, rotary).double()  # (32, rotary): sin | cos
    sin_t, cos_t = torch.split(table[torch.tensor(positions)], rotary // 2, dim=-1)
    x_t = torch.tensor(x).transpose(1, 2)  # (B, T, H, dh)
    rotated = gptj.apply_rotary_pos_emb(x_t[..., :rotary], sin_t, cos_t)
    expected = torch.cat([rotated, x_t[..., rotary:]], dim=-1).transpose(1, 2).numpy()
    cos, sin = rope_tables(positions, rotary, 10000.0, F64, interleaved=True)
    np.testing.assert_allclose(apply_rope(x, cos, sin, True), expected, rtol=0, atol=5e-6)


SCALINGS = {
    "yarn": {"type": "yarn", "factor": 4.0, "original_max_seq_len": 16},
    "linear": {"type": "linear", "factor": 2.0},
    "dynamic": {"type": "dynamic", "factor": 2.0, "original_max_seq_len": 64},
    "longrope": {"type": "longrope", "factor": 4.0, "original_max_seq_len": 16,
                 "short_factor": [1.0, 1.5, 2.0, 3.0], "long_factor": [1.0, 2.0, 4.0, 8.0]},
}
HF_KEYS = {"original_max_seq_len": "original_max_position_embeddings", "type": "rope_type"}


@pytest.mark.parametrize("seq_len", [10, 100])
@pytest.mark.parametrize("name", sorted(SCALINGS))
def test_scaled_tables_are_built_over_the_rotary_width(transformers: ModuleType, name: str,
                                                       seq_len: int) -> None:
    """rope_scaling composes with partial rotary as in transformers: every formula sees a head
    of width rotary_dim (d_head 32, partial_rotary_factor 0.25: 8 dims, 4 frequencies)."""
    import transformers.modeling_rope_utils as rope_utils

    scaling = SCALINGS[name]
    params = {HF_KEYS.get(k, k): v for k, v in scaling.items()}
    max_positions = params.pop("original_max_position_embeddings") if name == "dynamic" else 64
    config = _neox_config(transformers, 32, 0.25, 10000.0, params)
    config.max_position_embeddings = max_positions
    theirs, their_factor = rope_utils.ROPE_INIT_FUNCTIONS[name](config, "cpu", seq_len=seq_len)
    positions = np.array([[1, seq_len - 1]])
    cos, sin = rope_tables(positions, 8, 10000.0, F64, RopeScaling(**scaling))
    np.testing.assert_allclose(np.arctan2(sin, cos)[0, 0, 0, :4], theirs.double().numpy(),
                               rtol=2e-6)
    np.testing.assert_allclose(np.hypot(cos, sin)[0, 0, 0, 0], their_factor, rtol=1e-6)


def _rotary_spec(pairing: str = "interleaved", rotary: int = 4, **changes: object):
    return make_spec("llama_gqa", rotary_dim=rotary, rope_pairing=pairing, d_head=8,
                     init_std=0.3, **changes)


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
def test_attention_rotates_only_the_rotary_dims(pairing: str) -> None:
    """q.k of two tokens depends on their offset through the rotated dims alone: with every
    rotated dim of q and k zeroed, positions no longer matter."""
    spec = _rotary_spec(pairing)
    w = init_weights(spec, seed=5, dtype=np.float64).decoder.blocks[0].attn
    for m in (w.wq, w.wk):
        m.reshape(spec.d_model, -1, spec.head_dim)[..., : spec.rotary_width] = 0.0
    x = np.random.default_rng(4).normal(size=(1, 6, spec.d_model))
    near = attention(spec, w, x, StackInput.over(6, causal=True))
    shifted = np.arange(100, 106)[None]  # (1, T): the same tokens 100 positions later
    far = attention(spec, w, x, StackInput(True, shifted, shifted))
    np.testing.assert_allclose(near, far, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
def test_cached_decoding_equals_a_full_forward(pairing: str) -> None:
    from tfcli.engine.cache import KVCache
    from tfcli.engine.generate import Batch, decode_step, prefill
    from tfcli.engine.model import forward

    spec = _rotary_spec(pairing, rope_scaling={"type": "yarn", "factor": 2.0,
                                               "original_max_seq_len": 8})
    w = init_weights(spec, seed=7, dtype=np.float64)
    sequence = np.array([[5, 17, 3, 40, 22, 9, 1, 33, 8, 12, 19]])  # (1, 11)
    cache = KVCache(spec, 1, sequence.shape[1], np.float64)
    steps = [prefill(spec, w, sequence[:, :4], cache, Batch())]
    steps += [decode_step(spec, w, sequence[:, slot], slot, cache, Batch())
              for slot in range(4, sequence.shape[1])]
    full = forward(spec, w, sequence).logits  # (1, T, V)
    for i, logits in enumerate(steps):
        np.testing.assert_allclose(logits[0], full[0, 3 + i], rtol=1e-10, atol=1e-10)


def test_counts_and_trace_are_those_of_plain_rope() -> None:
    from tfcli.analysis.trace.build import build_trace, convention_text
    from tfcli.analysis.trace.check import execute_check
    from tfcli.spec.counts import total_parameters

    spec = _rotary_spec()
    plain = spec.replace(rotary_dim=None, rope_pairing="half")
    assert plain.rotary_dim == plain.head_dim == 8
    assert total_parameters(spec) == total_parameters(plain)
    report = build_trace(spec, batch=2, seq_len=5)
    assert [r.flops for r in report.rows] == [r.flops for r in build_trace(plain, batch=2, seq_len=5).rows]
    assert execute_check(spec, report).ok
    assert "partial rotary: the first 4 of each head's 8 dims, interleaved pairs" in \
        convention_text(spec, "float32")
    assert "partial rotary" not in convention_text(plain, "float32")
