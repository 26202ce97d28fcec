"""docs/api.md's examples run as a doctest: the API page cannot drift from the API."""

from __future__ import annotations

import doctest
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def test_every_example_in_the_api_page_runs() -> None:
    result = doctest.testfile(str(DOC), module_relative=False, optionflags=doctest.ELLIPSIS,
                              raise_on_error=False, verbose=False)
    assert result.attempted >= 15
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"
