"""Shared fixtures: a CliRunner that keeps stderr apart, and a writer for spec files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tfcli.cli.app import app

VALID_SPEC = """\
name: tiny
family: decoder
vocab_size: 64
max_seq_len: 32
d_model: 16
n_heads: 4
n_layers: 2
d_ff: 32
"""


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def invoke(runner: CliRunner) -> Callable[..., object]:
    def run(*args: str) -> object:
        return runner.invoke(app, list(args))

    return run


@pytest.fixture
def write_spec(tmp_path: Path) -> Callable[[str, str], Path]:
    def write(text: str, name: str = "spec.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write
