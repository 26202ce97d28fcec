"""Logits of every row of parity_families.FAMILIES against transformers: the saved model loaded
through tfcli, a batch with its second sequence right-padded and one left-padded, compared on
the real positions (float32 rtol = atol = 1e-4, test_hf_parity.py's F32)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tests.parity.parity_families import (FAMILIES, Saved, left_padded, right_padded,
                                          saved_family, tokens)
from tests.parity.saved_models import real_logits
from tests.parity.test_hf_parity import F32


@pytest.fixture(scope="module", params=list(FAMILIES))
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Saved:
    return saved_family(request, tmp_path_factory)


@pytest.mark.parametrize("padding", [right_padded, left_padded], ids=["right", "left"])
def test_float32_logits_match_on_a_padded_batch(
        saved: Saved, padding: Callable[[], tuple[np.ndarray, np.ndarray | None]]) -> None:
    mask, positions = padding()
    np.testing.assert_allclose(*real_logits(saved.model, saved.path, tokens(), mask, positions), **F32)
