"""Sentence-embedding pooling against loops written out here: the mean over real tokens, the
first token, the last real token; L2 normalisation; a row without real tokens."""

from __future__ import annotations

import numpy as np
import pytest

from tfcli.engine.pooling import cosine_matrix, l2_normalize, pool

RNG = np.random.default_rng(0)
HIDDEN = RNG.standard_normal((3, 5, 4)).astype(np.float32)
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]], dtype=bool)


def test_mean_is_over_the_real_tokens_only() -> None:
    expected = np.stack([HIDDEN[b, MASK[b]].astype(np.float64).mean(axis=0) for b in range(3)])
    np.testing.assert_allclose(pool(HIDDEN, MASK, "mean"), expected, rtol=1e-12)
    np.testing.assert_allclose(pool(HIDDEN, None, "mean"), HIDDEN.mean(axis=1), rtol=1e-6)


@pytest.mark.parametrize(("how", "index"), [("cls", [0, 0, 0]), ("last", [4, 1, 2])])
def test_first_and_last_real_token(how: str, index: list[int]) -> None:
    expected = HIDDEN[np.arange(3), index]
    np.testing.assert_array_equal(pool(HIDDEN, MASK, how), expected)


def test_a_row_without_real_tokens_pools_to_zero_not_nan() -> None:
    empty = MASK.copy()
    empty[1] = False
    assert np.isfinite(pool(HIDDEN, empty, "mean")).all() and not pool(HIDDEN, empty, "mean")[1].any()


def test_normalised_rows_have_unit_length_and_cosines_are_dot_products() -> None:
    vectors = pool(HIDDEN, MASK, "mean")
    unit = l2_normalize(vectors)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=-1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(cosine_matrix(vectors), unit @ unit.T, rtol=1e-14)
    assert not np.isnan(l2_normalize(np.zeros((1, 4)))).any()  # torch's floor: 0 stays 0
