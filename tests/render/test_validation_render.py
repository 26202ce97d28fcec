"""`tfcli validate`'s table shows each problem of a bad spec on its own line."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tfcli.cli.app import app


def test_each_problem_is_its_own_line(tmp_path: Path) -> None:
    bad = tmp_path / "multi.yaml"
    bad.write_text("name: x\nfamily: decoder\nn_head: 3\nd_modle: 5\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["validate", str(bad)], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    assert "\\x0a" not in result.stdout
    assert any("'n_head': unknown field; did you mean 'n_heads'?" in line for line in lines)
    assert any(line.endswith("field 'n_layers': is required") for line in lines)
    assert len(lines) >= 6  # n_head, d_modle and four required fields
