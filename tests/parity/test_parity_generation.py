"""Generation of every row of parity_families.FAMILIES against transformers: greedy tokens
equal `model.generate(do_sample=False)` for a left-padded batch, each prompt alone, and
uncached; `tfcli generate --check-cache` passes (cached and uncached tokens identical)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parity.greedy import hf_greedy, tfcli_greedy
from tests.parity.parity_families import FAMILIES, NEW_TOKENS, Saved, saved_family
from tests.parity.saved_models import assert_check_cache, save_random


@pytest.mark.parametrize("name", list(FAMILIES))
def test_greedy_tokens_match_transformers(name: str, tmp_path: Path) -> None:
    """std 0.2 redraws the matrices: logits far from ties (see test_generate_parity.py)."""
    family = FAMILIES[name]
    prompts = list(family.prompts)
    model = save_random(family.build, tmp_path, std=0.2)
    expected = [hf_greedy(model, p, NEW_TOKENS) for p in prompts]
    assert tfcli_greedy(tmp_path, prompts, NEW_TOKENS) == expected  # one left-padded batch
    assert [tfcli_greedy(tmp_path, [p], NEW_TOKENS)[0] for p in prompts] == expected
    assert tfcli_greedy(tmp_path, prompts[:1], NEW_TOKENS, use_cache=False) == expected[:1]


@pytest.fixture(scope="module", params=list(FAMILIES))
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Saved:
    return saved_family(request, tmp_path_factory)


def test_check_cache_passes(saved: Saved, invoke) -> None:  # noqa: ANN001
    assert_check_cache(invoke, saved.path, saved.family.prompts[0], 12)
