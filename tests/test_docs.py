"""Documentation stays complete: every spec field in docs/spec.md, every command in the README."""

from __future__ import annotations

from pathlib import Path

from tfcli.cli import app
from tfcli.spec import FIELD_NAMES

ROOT = Path(__file__).resolve().parents[1]


def test_every_spec_field_is_documented() -> None:
    text = (ROOT / "docs" / "spec.md").read_text()
    missing = [f for f in FIELD_NAMES if f"`{f}`" not in text]
    assert missing == []


def test_every_command_has_a_readme_example() -> None:
    readme = (ROOT / "README.md").read_text()
    missing = [c.name for c in app.registered_commands if f"tfcli {c.name}" not in readme]
    assert missing == []


def test_readme_quick_start_matches_ci() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = "pip install -e '.[test]' && pytest"
    assert test_command in readme and test_command in ci
