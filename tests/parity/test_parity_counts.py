"""Checkpoints of every row of parity_families.FAMILIES read as transformers built them: the
parameters counted four ways (saved_models.assert_counts_match) and `tfcli trace --execute`
matching every analytic row."""

from __future__ import annotations

import pytest

from tests.parity.parity_families import FAMILIES, Saved, saved_family
from tests.parity.saved_models import assert_counts_match, assert_trace_execute


@pytest.fixture(scope="module", params=list(FAMILIES))
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Saved:
    return saved_family(request, tmp_path_factory)


def test_parameter_count_matches_transformers(saved: Saved) -> None:
    assert_counts_match(saved.model, saved.path)


def test_trace_execute_matches_the_analytic_rows(saved: Saved, invoke) -> None:  # noqa: ANN001
    assert_trace_execute(invoke, saved.path)
