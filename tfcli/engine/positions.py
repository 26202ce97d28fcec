"""Position signals: sinusoidal tables, rotary embeddings (RoPE), T5 relative-position bias.

Learned positions are a plain table lookup and live with the embeddings in model.py.
Tables are computed in float64 and cast once to the weights' dtype.
"""

from __future__ import annotations

import math

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.shaped import empty, is_shaped
from tfcli.spec.rope import RopeScaling


def default_positions(batch: int, length: int, offset: int = 0, like: object = None) -> Array:
    """Positions offset..offset+length-1 for every sequence: (B, T) int64 (shape-only when
    `like` is, tfcli.engine.shaped)."""
    return np.broadcast_to(np.arange(offset, offset + length, dtype=np.int64, like=like),
                           (batch, length))


def sinusoidal(positions: Array, d_model: int, dtype: np.dtype) -> Array:
    """Vaswani et al. 2017, section 3.5: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos.

    positions (B, T) int -> (B, T, d_model). An odd d_model drops the last cosine column.
    """
    inv_freq = 10000.0 ** (-np.arange(0, d_model, 2, dtype=np.float64, like=positions)
                           / d_model)  # (ceil d/2,)
    angles = positions[..., None].astype(np.float64) * inv_freq  # (B, T, ceil(d/2))
    table = empty((*positions.shape, d_model), np.float64, positions)  # (B, T, d)
    table[..., 0::2] = np.sin(angles)
    table[..., 1::2] = np.cos(angles[..., : d_model // 2])
    return table.astype(dtype, copy=False)


def rope_tables(
    positions: Array, d_head: int, theta: float, dtype: np.dtype,
    scaling: RopeScaling | None = None, interleaved: bool = False,
) -> tuple[Array, Array]:
    """cos and sin for RoPE (Su et al. 2021) over the d_head rotated dims: (B, 1, T, d_head) each.

    inv_freq_i = theta^(-2i/d) for i < d/2 (stretched by `scaling` when set). Pass the rotary
    width as d_head for partial rotary (transformers builds every table over it). The angle of
    pair i sits at dimensions i and i + d/2 (the `rotate_half` layout of HF LLaMA / GPT-NeoX),
    or at 2i and 2i + 1 when `interleaved` (GPT-J). A scaling's attention factor multiplies
    both cos and sin.
    """
    inv_freq = theta ** (-np.arange(0, d_head, 2, dtype=np.float64, like=positions)
                         / d_head)  # (d/2,)
    factor = 1.0
    if scaling is not None:
        seq_len = _largest_position(positions) + 1  # as transformers: one table for all
        inv_freq, factor = ROPE_SCALINGS[scaling.type](inv_freq, scaling, theta, seq_len)
    angles = positions[..., None].astype(np.float64) * inv_freq  # (B, T, d/2)
    if interleaved:
        angles = np.repeat(angles, 2, axis=-1)[:, None]  # (B, 1, T, d): a0 a0 a1 a1 ...
    else:
        angles = np.concatenate([angles, angles], axis=-1)[:, None]  # (B, 1, T, d)
    cos, sin = np.cos(angles), np.sin(angles)
    if factor != 1.0:
        cos, sin = cos * factor, sin * factor
    return cos.astype(dtype, copy=False), sin.astype(dtype, copy=False)


def _largest_position(positions: Array) -> int:
    """The largest position (-1 for none); on shapes, positions 0..T-1 (the trace's)."""
    if is_shaped(positions):
        return positions.shape[-1] - 1
    return int(positions.max()) if positions.size else -1


# --- RoPE scaling: (inv_freq (d/2,), scaling, theta, seq_len) -> (inv_freq, attention factor) --
# Each follows transformers.modeling_rope_utils (_compute_<type>_parameters), in float64.
# seq_len is the largest position of this call + 1 (dynamic and longrope depend on it); keys
# already cached keep the table they were rotated with, exactly as in transformers.


def rope_linear(inv_freq: Array, scaling: RopeScaling, theta: float,
                seq_len: int) -> tuple[Array, float]:
    """Position interpolation (Chen et al. 2023): every frequency divided by factor."""
    return inv_freq / scaling.factor, 1.0


def rope_llama3(inv_freq: Array, scaling: RopeScaling, theta: float,
                seq_len: int) -> tuple[Array, float]:
    """Llama 3.1: wavelengths past original/low_freq_factor are divided by factor, those below
    original/high_freq_factor kept, and the band between interpolated linearly in original/wavelen."""
    factor, low, high = scaling.factor, scaling.low_freq_factor, scaling.high_freq_factor
    original = float(scaling.original_max_seq_len)  # checked per type
    wavelen = 2 * math.pi / inv_freq  # (d/2,)
    smooth = (original / wavelen - low) / (high - low)
    medium = (1 - smooth) * inv_freq / factor + smooth * inv_freq
    scaled = np.where(wavelen > original / low, inv_freq / factor, inv_freq)
    is_medium = (wavelen >= original / high) & (wavelen <= original / low)
    return np.where(is_medium, medium, scaled), 1.0


def _yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def rope_yarn(inv_freq: Array, scaling: RopeScaling, theta: float,
              seq_len: int) -> tuple[Array, float]:
    """YaRN (Peng et al. 2023): dimensions with fewer than beta_slow rotations over the original
    context are interpolated (/ factor), those with more than beta_fast kept, a linear ramp between;
    cos and sin are multiplied by the attention factor (0.1 ln(factor) + 1 by default)."""
    factor, original = scaling.factor, float(scaling.original_max_seq_len)
    attention = scaling.attention_factor
    if attention is None:
        if scaling.mscale and scaling.mscale_all_dim:
            attention = _yarn_mscale(factor, scaling.mscale) / _yarn_mscale(factor, scaling.mscale_all_dim)
        else:
            attention = _yarn_mscale(factor)
    dim = 2 * inv_freq.shape[0]

    def correction_dim(rotations: float) -> float:  # the dimension that turns `rotations` times
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = correction_dim(scaling.beta_fast or 32.0), correction_dim(scaling.beta_slow or 1.0)
    if scaling.truncate is not False:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # as transformers: no zero-width ramp
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64, like=inv_freq) - low) / (high - low),
                   0, 1)  # (d/2,)
    return inv_freq / factor * ramp + inv_freq * (1 - ramp), float(attention)


def rope_dynamic(inv_freq: Array, scaling: RopeScaling, theta: float,
                 seq_len: int) -> tuple[Array, float]:
    """Dynamic NTK: past the original length L the base grows to
    theta * (factor * seq_len / L - (factor - 1)) ^ (d / (d - 2)); within it, plain RoPE."""
    original, dim = scaling.original_max_seq_len or 1, 2 * inv_freq.shape[0]
    length = max(seq_len, original)
    base = theta * (scaling.factor * length / original - (scaling.factor - 1)) ** (dim / (dim - 2))
    return base ** (-np.arange(0, dim, 2, dtype=np.float64, like=inv_freq) / dim), 1.0


def rope_longrope(inv_freq: Array, scaling: RopeScaling, theta: float,
                  seq_len: int) -> tuple[Array, float]:
    """LongRoPE (Phi-3): each frequency divided by its own factor, the short list within the
    original length, the long one past it; cos/sin times sqrt(1 + ln(factor) / ln(original))."""
    original = scaling.original_max_seq_len or 1
    factors = scaling.long_factor if seq_len > original else scaling.short_factor
    attention = scaling.attention_factor
    if attention is None:
        attention = (1.0 if scaling.factor <= 1 else
                     math.sqrt(1 + math.log(scaling.factor) / math.log(original)))
    return inv_freq / np.asarray(factors, dtype=np.float64), attention


ROPE_SCALINGS = {"linear": rope_linear, "llama3": rope_llama3, "yarn": rope_yarn,
                 "dynamic": rope_dynamic, "longrope": rope_longrope}


def apply_rope(x: Array, cos: Array, sin: Array, interleaved: bool = False) -> Array:
    """x * cos + rotate(x) * sin on the first r = cos.shape[-1] dims of each head, the rest
    passed through (partial rotary): (B, H, T, dh) -> same. rotate_half(x) = [-x2, x1] pairs
    dim i with i + r/2; interleaved (GPT-J's rotate_every_two) pairs 2i with 2i + 1."""
    rotary = cos.shape[-1]
    if rotary < x.shape[-1]:  # only partial rotary pays for the copy of the passed-through dims
        out = x.copy()  # (B, H, T, dh)
        out[..., :rotary] = apply_rope(x[..., :rotary], cos, sin, interleaved)
        return out
    out = x * cos  # (B, H, T, r)
    if interleaved:
        out[..., 0::2] -= x[..., 1::2] * sin[..., 0::2]
        out[..., 1::2] += x[..., 0::2] * sin[..., 1::2]
        return out
    half = rotary // 2
    out[..., :half] -= x[..., half:] * sin[..., :half]
    out[..., half:] += x[..., :half] * sin[..., half:]
    return out


def relative_buckets(
    relative: Array, *, bidirectional: bool, n_buckets: int, max_distance: int
) -> Array:
    """T5's bucket of each (key - query) offset, as HF `T5Attention._relative_position_bucket`.

    Half the buckets are exact small offsets, the rest grow logarithmically up to max_distance.
    Bidirectional (encoder) spends half the buckets on each sign; unidirectional (decoder)
    only looks back. The log is taken in float32, exactly as HF does, so bucket edges agree.
    """
    buckets = np.zeros_like(relative, dtype=np.int64)
    if bidirectional:
        n_buckets //= 2
        buckets += (relative > 0) * n_buckets
        distance = np.abs(relative)
    else:
        distance = -np.minimum(relative, 0)
    max_exact = n_buckets // 2
    with np.errstate(divide="ignore"):  # log(0) for distance 0; those take the exact branch
        scaled = (
            np.log(distance.astype(np.float32) / np.float32(max_exact))
            / np.float32(math.log(max_distance / max_exact))
            * np.float32(n_buckets - max_exact)
        )
    large = max_exact + np.nan_to_num(scaled, neginf=0.0).astype(np.int64)
    large = np.minimum(large, n_buckets - 1)
    return buckets + np.where(distance < max_exact, distance, large)


def relative_bias(
    table: Array,
    query_positions: Array,
    key_positions: Array,
    *,
    bidirectional: bool,
    max_distance: int,
) -> Array:
    """T5 position bias added to attention scores: (1|B, H, T, S).

    table (n_buckets, H); query_positions (1|B, T) and key_positions (1|B, S) int.
    """
    relative = key_positions[:, None, :] - query_positions[:, :, None]  # (B, T, S)
    buckets = relative_buckets(
        relative, bidirectional=bidirectional, n_buckets=table.shape[0], max_distance=max_distance
    )
    bias = table[buckets]  # (B, T, S) -> (B, T, S, H)
    return bias.transpose(0, 3, 1, 2).copy()  # (B, T, S, H) -> (B, H, T, S), C-ordered
