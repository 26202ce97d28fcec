"""Sentence embeddings from hidden states: one vector per sequence, as sentence-transformers
pools them (Reimers & Gurevych 2019): the mean over the real tokens (its default), the first
token ([CLS]) or the last real token (decoder embedding models), optionally L2-normalised.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from tfcli.core.arrays import Array

Pooling = Literal["mean", "cls", "last"]


def _real(hidden: Array, mask: Array | None) -> Array:
    """mask (B, T) as bool, all True when None."""
    if mask is None:
        return np.ones(hidden.shape[:2], dtype=bool)
    return np.asarray(mask, dtype=bool)


def pool(hidden: Array, mask: Array | None, how: Pooling) -> Array:
    """hidden (B, T, d) -> (B, d) in float64 over the real positions of `mask` (B, T)."""
    real = _real(hidden, mask)  # (B, T)
    h = hidden.astype(np.float64)
    if how == "cls":
        return h[:, 0]  # (B, d)
    if how == "last":
        last = real.shape[1] - 1 - np.argmax(real[:, ::-1], axis=1)  # (B,) last True per row
        return h[np.arange(h.shape[0]), last]  # (B, d)
    weights = real[..., None].astype(np.float64)  # (B, T, 1)
    # sentence-transformers divides by max(count, 1e-9): a row without real tokens stays 0
    return (h * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)  # (B, d)


def l2_normalize(x: Array) -> Array:
    """Each row over its L2 norm (torch's F.normalize: the norm floored at 1e-12)."""
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def cosine_matrix(x: Array) -> Array:
    """(B, d) -> (B, B) cosine similarity of every pair of rows."""
    unit = l2_normalize(x)
    return unit @ unit.T
