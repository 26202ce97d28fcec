"""A %YAML directive whose version has thousands of digits: PyYAML int()s it and Python refuses
integers past 4,300 digits with a ValueError (found by hypothesis in test_spec_io_fuzz)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfcli.core.errors import SpecError
from tfcli.sources import load_spec


@pytest.mark.parametrize("digits", [4_301, 5_000, 50_000])
def test_a_huge_yaml_version_is_one_syntax_error(tmp_path: Path, digits: int) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(f"%YAML 1.{'1' * digits}\n---\nname: x\n")
    with pytest.raises(SpecError) as info:
        load_spec(str(path))
    assert "YAML syntax error" in info.value.message and len(info.value.message) < 500
