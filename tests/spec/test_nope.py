"""nope_layers (NoPE: layers whose attention rotates nothing, SmolLM3): the default changes
nothing, and a bad list is one SpecConsistencyError naming the field (through the CLI: exit 2,
no traceback)."""

from __future__ import annotations

import pytest

from tests.conftest import VALID_SPEC
from tfcli.spec.load import parse_spec_text

ROPE = VALID_SPEC.replace("n_layers: 2", "n_layers: 4") + "positions: rope\nnorm: rmsnorm\n"


def test_default_and_a_valid_list() -> None:
    assert parse_spec_text(ROPE).nope_layers is None
    assert parse_spec_text(ROPE + "nope_layers: [1, 3]\n").nope_layers == [1, 3]


BAD = [  # (YAML, message part)
    (ROPE + "nope_layers: [3, 1]\n", "increasing order"),
    (ROPE + "nope_layers: [1, 1]\n", "increasing order"),
    (ROPE + "nope_layers: [-1]\n", "from 0"),
    (ROPE + "nope_layers: [4]\n", "past the last (3)"),
    (ROPE + "nope_layers: []\n", "at least 1"),
    (VALID_SPEC + "nope_layers: [0]\n", "needs positions: rope"),
    (ROPE + "family: encoder-decoder\nlm_head: true\nnope_layers: [0]\n",
     "does not apply to family 'encoder-decoder'"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_list_names_the_field(invoke, write_spec, text: str, message: str) -> None:
    lines = dict(line.split(":", 1) for line in text.splitlines())  # a later key wins
    path = write_spec("\n".join(f"{k}:{v}" for k, v in lines.items()) + "\n")
    result = invoke("params", str(path))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "'nope_layers'" in result.stderr and message in result.stderr
