"""Documentation stays complete: every spec field in docs/spec.md, every command in the README."""

from __future__ import annotations

import re
from pathlib import Path

from tfcli.cli.app import app
from tfcli.spec.model import FIELD_NAMES

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


ARCHITECTURE = ROOT / "docs" / "architecture.md"
_PATH = re.compile(r"`((?:tfcli|tests)/[\w/]+(?:\.py)?)`")
_PATH_AND_NAME = re.compile(r"`(tfcli/[\w/]+\.py)` `(\w+)`")  # a module, then a name in it


def test_architecture_names_only_modules_that_exist() -> None:
    text = ARCHITECTURE.read_text()
    named = set(_PATH.findall(text)) - {"tfcli/render/<command>.py"}
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert named and missing == []


def test_architecture_names_functions_where_they_are() -> None:
    """`tfcli/engine/model.py` `block_forward`: the function (class, table) is defined there."""
    pairs = _PATH_AND_NAME.findall(ARCHITECTURE.read_text())
    defined = r"^\s*(def|class) {0}\b|^{0}\b.*="  # a function, a class or a module-level table
    wrong = [f"{path} {name}" for path, name in pairs
             if not re.search(defined.format(name), (ROOT / path).read_text(), re.M)]
    assert pairs and wrong == []
