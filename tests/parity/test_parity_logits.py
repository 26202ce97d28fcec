"""Logits of every row of parity_families.FAMILIES against transformers: the saved model loaded
through tfcli, a batch with its second sequence right-padded and one left-padded, compared on
the real positions (float32 rtol = atol = 1e-4, test_hf_parity.py's F32). A row whose
transformers model counts left padding as positions (left_padded_alone) is checked, left-padded,
against transformers run on each sequence alone."""

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
    got, want = real_logits(saved.model, saved.path, tokens(), mask, positions)
    if padding is left_padded and saved.family.left_padded_alone:
        want = np.concatenate([_alone(saved, row, mask[row]) for row in range(len(mask))])
    np.testing.assert_allclose(got, want, **F32)


def _alone(saved: Saved, row: int, mask: np.ndarray) -> np.ndarray:
    """transformers' logits (n, vocab) of one row's real tokens, run unpadded."""
    import torch
    ids = torch.from_numpy(tokens()[row][mask.astype(bool)][None])
    with torch.no_grad():
        return saved.model(input_ids=ids).logits.numpy()[0]
