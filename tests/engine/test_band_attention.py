"""The bidirectional sliding window of an encoder's local layers (attention._mask_band): query i
sees key j only when |i - j| < window, across every query block the engine splits a long
sequence into, with padded keys hidden as well - against a dense reference computed at once."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tolerance import assert_close
from tfcli.engine.attention import ScoreMask, attend
from tfcli.engine.ops import softmax


def _reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, window: int,
               keys: np.ndarray) -> np.ndarray:
    """softmax over the band (and the real keys) in one (B, H, T, T) product -> (B, T, H, dh)."""
    scores = np.einsum("bhtd,bhsd->bhts", q, k) * scale
    t = np.arange(q.shape[2])
    band = np.abs(t[:, None] - t[None, :]) < window  # (T, T)
    scores = np.where(band[None, None] & keys[:, None, None, :], scores, -np.inf)
    return np.einsum("bhts,bhsd->bthd", softmax(scores), v)


@pytest.mark.parametrize(("length", "window"), [(70, 5), (40, 1), (33, 40)])
def test_the_band_holds_across_query_blocks(length: int, window: int) -> None:
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, length, 8)) for _ in range(3))
    keys = np.ones((2, length), dtype=bool)
    keys[1, length - 7:] = False  # a right-padded row
    got = attend(q, k, v, 0.35, ScoreMask(window=window, key_mask=keys))
    want = _reference(q, k, v, 0.35, window, keys)
    real = keys  # padded queries may see no key at all: their rows are not compared
    assert_close(got[real], want[real], ops=4 * length)  # one dot product of T keys per row
