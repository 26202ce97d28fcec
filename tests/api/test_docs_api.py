"""docs/api.md's and the README's Python examples run as doctests: they cannot drift from the
API."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("page", "least"), [("docs/api.md", 15), ("README.md", 3)])
def test_every_python_example_runs(page: str, least: int) -> None:
    result = doctest.testfile(str(ROOT / page), module_relative=False,
                              optionflags=doctest.ELLIPSIS, raise_on_error=False, verbose=False)
    assert result.attempted >= least
    assert result.failed == 0, f"{page}: {result.failed} of {result.attempted} examples failed"
