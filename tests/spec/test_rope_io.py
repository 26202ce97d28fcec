"""rope_scaling in spec files: nested errors name the nested field, its line and a did-you-mean
(exit code 2, no traceback), and a bundled spec with it round-trips through import-config's YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfcli.checkpoints.export import spec_to_yaml
from tfcli.core.errors import SpecError
from tfcli.spec.load import parse_spec_text
from tfcli.sources import load_spec

HEAD = """name: x
family: decoder
vocab_size: 10
max_seq_len: 64
d_model: 16
n_heads: 2
d_ff: 16
n_layers: 1
positions: rope
rope_scaling:
"""


@pytest.mark.parametrize(("body", "field", "words"), [
    ("  type: lama3\n  factor: 8\n", "rope_scaling.type", "did you mean 'llama3'?"),
    ("  type: linear\n  factr: 8\n", "rope_scaling.factr", "did you mean 'factor'?"),
    ("  type: llama3\n  factor: 8\n", "rope_scaling.low_freq_factor", "is required by type 'llama3'"),
    ("  type: linear\n  factor: 0.5\n", "rope_scaling.factor", "must lie in [1, 1e+06]"),
    ("  type: linear\n  factor: 2\n  beta_fast: 4\n", "rope_scaling.beta_fast", "does not apply"),
    ("  type: longrope\n  factor: 2\n  original_max_seq_len: 16\n  short_factor: [1, 1]\n"
     "  long_factor: [1, 2]\n", "rope_scaling.short_factor", "8 / 2 = 4 (got 2)"),
])
def test_nested_errors_name_the_field_and_line(body: str, field: str, words: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec_text(HEAD + body, "s.yaml")
    text = str(err.value)
    assert f"field '{field}'" in text and words in text and "s.yaml:10" in text, text


def test_cli_refuses_with_exit_code_2(invoke, tmp_path: Path) -> None:  # noqa: ANN001
    spec = tmp_path / "s.yaml"
    spec.write_text(HEAD + "  type: lama3\n  factor: 8\n")
    result = invoke("validate", str(spec))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "rope_scaling.type" in result.output


@pytest.mark.parametrize("name", ["llama-3.1-8b", "llama-3.2-1b"])
def test_bundled_spec_round_trips(name: str) -> None:
    spec = load_spec(name)
    text = spec_to_yaml(spec)
    assert "null" not in text  # only the fields the type reads are written
    assert parse_spec_text(text) == spec
