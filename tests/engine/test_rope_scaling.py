"""RoPE scaling tables (tfcli/engine/positions.py) against transformers' ROPE_INIT_FUNCTIONS and a
float64 reference of each formula written out here; the spec field's checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tfcli.engine.positions import rope_tables
from tfcli.core.errors import SpecConsistencyError
from tfcli.spec.model import Spec
from tfcli.spec.rope import RopeScaling

HF_KEYS = {"original_max_seq_len": "original_max_position_embeddings"}

CASES = {  # name -> (d_head, theta, scaling)
    "llama3-8b": (128, 500000.0, {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_seq_len": 8192}),
    "llama3-small": (16, 10000.0, {"type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0, "original_max_seq_len": 16}),
    "linear": (64, 10000.0, {"type": "linear", "factor": 4.0}),
    "yarn": (128, 10000.0, {"type": "yarn", "factor": 4.0, "original_max_seq_len": 4096}),
    "yarn-betas": (64, 1e6, {"type": "yarn", "factor": 8.0, "original_max_seq_len": 2048,
                             "beta_fast": 16.0, "beta_slow": 2.0, "truncate": False}),
    "yarn-mscale": (64, 10000.0, {"type": "yarn", "factor": 40.0, "original_max_seq_len": 4096,
                                  "mscale": 1.0, "mscale_all_dim": 0.707}),
    "yarn-attention": (32, 10000.0, {"type": "yarn", "factor": 2.0, "original_max_seq_len": 64,
                                     "attention_factor": 1.5}),
    "dynamic": (64, 10000.0, {"type": "dynamic", "factor": 4.0, "original_max_seq_len": 2048}),
    "longrope": (16, 10000.0, {"type": "longrope", "factor": 32.0, "original_max_seq_len": 4096,
                               "short_factor": [1.0, 1.1, 1.3, 1.7, 2.0, 2.5, 3.0, 4.0],
                               "long_factor": [1.0, 1.5, 2.5, 4.0, 8.0, 16.0, 24.0, 32.0]}),
    "longrope-attention": (8, 1e4, {"type": "longrope", "factor": 8.0, "original_max_seq_len": 64,
                                    "short_factor": [1.0, 1.0, 2.0, 2.0],
                                    "long_factor": [1.0, 3.0, 5.0, 7.0], "attention_factor": 1.2}),
}
# sequence lengths each table is built for: within and past the original context
SEQ_LENS = (100, 3000, 5000)


def hf_inv_freq(d_head: int, theta: float, scaling: dict,
                seq_len: int) -> tuple[np.ndarray, float]:
    # imported here, not at collection, nor importorskip'd: a missing transformers must fail CI
    import transformers
    import transformers.modeling_rope_utils as rope_utils

    params = {HF_KEYS.get(k, k): v for k, v in scaling.items() if k != "type"}
    params |= {"rope_type": scaling["type"], "rope_theta": theta}
    max_positions = 131072
    if scaling["type"] == "dynamic":  # transformers' dynamic reads the original length there
        max_positions = params.pop("original_max_position_embeddings")
    config = transformers.LlamaConfig(hidden_size=d_head * 4, num_attention_heads=4,
                                      head_dim=d_head, max_position_embeddings=max_positions,
                                      rope_parameters=params)
    inv_freq, factor = rope_utils.ROPE_INIT_FUNCTIONS[scaling["type"]](config, "cpu",
                                                                         seq_len=seq_len)
    return inv_freq.double().numpy(), float(factor)


def tfcli_inv_freq(d_head: int, theta: float, scaling: dict,
                   seq_len: int = 2) -> tuple[np.ndarray, float]:
    """The frequencies and attention factor the engine uses, read back from its cos/sin tables
    at position 1 of a call whose last position is seq_len - 1."""
    positions = np.array([[1, seq_len - 1]])
    cos, sin = rope_tables(positions, d_head, theta, np.dtype(np.float64), RopeScaling(**scaling))
    factor = float(np.hypot(cos, sin)[0, 0, 0, 0])
    angles = np.arctan2(sin, cos)[0, 0, 0, : d_head // 2]  # position 1: the angle is inv_freq
    return angles, factor


@pytest.mark.parametrize("seq_len", SEQ_LENS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_transformers(case: str, seq_len: int) -> None:
    d_head, theta, scaling = CASES[case]
    ours, our_factor = tfcli_inv_freq(d_head, theta, scaling, seq_len)
    theirs, their_factor = hf_inv_freq(d_head, theta, scaling, seq_len)
    # transformers builds its table in float32: agreement to float32's resolution
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=0)
    assert our_factor == pytest.approx(their_factor, rel=1e-12)


def llama3_reference(inv_freq: float, factor: float, low: float, high: float,
                     original: float) -> float:
    """Meta's apply_scaling (llama3 reference code, models/llama3_1), one frequency at a time."""
    wavelen = 2 * math.pi / inv_freq
    if wavelen < original / high:
        return inv_freq
    if wavelen > original / low:
        return inv_freq / factor
    smooth = (original / wavelen - low) / (high - low)
    return (1 - smooth) * inv_freq / factor + smooth * inv_freq


def test_llama3_float64_reference() -> None:
    d_head, theta, scaling = CASES["llama3-8b"]
    ours, factor = tfcli_inv_freq(d_head, theta, scaling)
    plain = theta ** (-np.arange(0, d_head, 2, dtype=np.float64) / d_head)
    expected = [llama3_reference(f, 8.0, 1.0, 4.0, 8192.0) for f in plain]
    np.testing.assert_allclose(ours, expected, rtol=1e-13)
    assert factor == 1.0
    assert ours[0] == plain[0] and ours[-1] == pytest.approx(plain[-1] / 8, rel=1e-13)


def test_yarn_float64_reference() -> None:
    """YaRN by its definition: r(d) = L / wavelength(d); kept above beta_fast, / factor below."""
    d_head, theta, scaling = CASES["yarn-betas"]
    ours, factor = tfcli_inv_freq(d_head, theta, scaling)
    plain = theta ** (-np.arange(0, d_head, 2, dtype=np.float64) / d_head)
    rotations = 2048 * plain / (2 * math.pi)
    fast, slow = rotations > 16.0, rotations < 2.0
    np.testing.assert_allclose(ours[fast], plain[fast], rtol=1e-13)
    np.testing.assert_allclose(ours[slow], plain[slow] / 8.0, rtol=1e-13)
    assert fast.any() and slow.any()
    assert factor == pytest.approx(0.1 * math.log(8.0) + 1.0, rel=1e-15)


def test_no_scaling_is_unchanged() -> None:
    positions = np.arange(5)[None]
    plain = rope_tables(positions, 8, 10000.0, np.dtype(np.float64))
    same = rope_tables(positions, 8, 10000.0, np.dtype(np.float64), None)
    assert all(np.array_equal(a, b) for a, b in zip(plain, same, strict=True))


BASE = dict(name="x", family="decoder", vocab_size=10, max_seq_len=64, d_model=16, n_heads=2,
            d_ff=16, n_layers=1, positions="rope")


@pytest.mark.parametrize(("scaling", "field"), [
    ({"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0},
     "rope_scaling.original_max_seq_len"),
    ({"type": "linear", "factor": 2.0, "beta_fast": 32.0}, "rope_scaling.beta_fast"),
    ({"type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 4.0,
      "original_max_seq_len": 16}, "rope_scaling.high_freq_factor"),
])
def test_checked_per_type(scaling: dict, field: str) -> None:
    with pytest.raises(SpecConsistencyError) as err:
        Spec.model_validate(BASE | {"rope_scaling": scaling})
    assert err.value.field == field


def test_needs_rope() -> None:
    with pytest.raises(SpecConsistencyError) as err:
        Spec.model_validate(BASE | {"positions": "learned",
                                    "rope_scaling": {"type": "linear", "factor": 2.0}})
    assert err.value.field == "rope_scaling"


def test_dynamic_float64_reference() -> None:
    """NTK-aware base (bloc97): theta * (factor * L / L0 - factor + 1) ^ (d / (d - 2)) past L0."""
    d_head, theta, scaling = CASES["dynamic"]
    plain = theta ** (-np.arange(0, d_head, 2, dtype=np.float64) / d_head)
    within, _ = tfcli_inv_freq(d_head, theta, scaling, 2048)
    np.testing.assert_allclose(within, plain, rtol=1e-13)
    past, factor = tfcli_inv_freq(d_head, theta, scaling, 8192)
    base = theta * (4.0 * 8192 / 2048 - 3.0) ** (64 / 62)
    np.testing.assert_allclose(past, base ** (-np.arange(0, 64, 2) / 64), rtol=1e-13)
    assert factor == 1.0


def test_longrope_float64_reference() -> None:
    d_head, theta, scaling = CASES["longrope"]
    plain = theta ** (-np.arange(0, d_head, 2, dtype=np.float64) / d_head)
    attention = math.sqrt(1 + math.log(32.0) / math.log(4096))
    for seq_len, key in ((4096, "short_factor"), (4097, "long_factor")):
        ours, factor = tfcli_inv_freq(d_head, theta, scaling, seq_len)
        np.testing.assert_allclose(ours, plain / np.array(scaling[key]), rtol=1e-13)
        assert factor == pytest.approx(attention, rel=1e-15)


def test_longrope_lists_have_one_value_per_pair() -> None:
    scaling = CASES["longrope"][2]  # 8 values each: d_head 16
    assert Spec.model_validate(BASE | {"d_model": 32, "rope_scaling": scaling}).head_dim == 16
    with pytest.raises(SpecConsistencyError) as err:
        Spec.model_validate(BASE | {"rope_scaling": scaling})  # d_head 8: 4 pairs
    assert err.value.field == "rope_scaling.short_factor"
