"""rotary_dim and rope_pairing: defaults that change nothing, and bad combinations refused with
one SpecConsistencyError naming the field (through the CLI: exit 2, file, line and field)."""

from __future__ import annotations

import pytest

from tests.conftest import VALID_SPEC
from tfcli.core.errors import SpecConsistencyError
from tfcli.spec.model import Spec
from tfcli.spec.load import parse_spec_text
from tfcli.sources import load_spec

ROPE = VALID_SPEC + "positions: rope\n"  # d_model 16, 4 heads: d_head 4


def test_defaults_rotate_every_dimension_in_halves() -> None:
    spec = parse_spec_text(ROPE)
    assert (spec.rotary_dim, spec.rotary_width, spec.rope_pairing) == (4, 4, "half")
    learned = parse_spec_text(VALID_SPEC)
    assert learned.rotary_dim is None and learned.rope_pairing == "half"
    assert load_spec("llama-3-8b").rotary_dim == 128


def test_partial_and_interleaved_are_accepted() -> None:
    spec = parse_spec_text(ROPE + "d_head: 8\nrotary_dim: 2\nrope_pairing: interleaved\n")
    assert (spec.rotary_dim, spec.rotary_width, spec.rope_pairing) == (2, 2, "interleaved")
    # an odd d_head is fine when only an even part of it rotates (RoPE pairs the rotated dims)
    assert parse_spec_text(ROPE + "d_head: 5\nrotary_dim: 4\n").rotary_dim == 4


BAD = [  # (extra YAML, field, message part)
    ("rotary_dim: 3\n", "rotary_dim", "must be even"),
    ("rotary_dim: 6\n", "rotary_dim", "exceeds d_head 4"),
    ("rotary_dim: 0\n", "rotary_dim", "greater than 0"),
    ("rope_pairing: every_two\n", "rope_pairing", "half"),
    ("d_head: 5\n", "d_head", "even d_head"),
]


@pytest.mark.parametrize(("extra", "field", "message"), BAD)
def test_bad_values_name_the_field(invoke, write_spec, extra: str, field: str,
                                   message: str) -> None:
    path = write_spec(ROPE + extra)
    result = invoke("params", str(path))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"'{field}'" in result.stderr and message in result.stderr


@pytest.mark.parametrize(("field", "value"), [("rotary_dim", 2), ("rope_pairing", "interleaved")])
def test_rotary_fields_need_rope(invoke, write_spec, field: str, value: object) -> None:
    with pytest.raises(SpecConsistencyError) as info:
        parse_spec_text(VALID_SPEC).replace(**{field: value})
    assert info.value.field == field and "needs positions: rope" in info.value.detail
    path = write_spec(VALID_SPEC + f"{field}: {value}\n")
    result = invoke("params", str(path))
    assert result.exit_code == 2 and f"'{field}'" in result.stderr
    assert f"{path}:9:" in result.stderr


def test_longrope_lists_follow_the_rotary_width() -> None:
    base = dict(name="x", family="decoder", vocab_size=8, max_seq_len=64, d_model=64, n_heads=4,
                d_ff=8, n_layers=1, positions="rope", rotary_dim=4)
    scaling = {"type": "longrope", "factor": 4.0, "original_max_seq_len": 16,
               "short_factor": [1.0, 2.0], "long_factor": [1.0, 3.0]}
    assert Spec(**base, rope_scaling=scaling).rotary_width == 4
    with pytest.raises(SpecConsistencyError) as info:
        Spec(**base | {"rotary_dim": 8}, rope_scaling=scaling)
    assert info.value.field == "rope_scaling.short_factor"


def test_the_default_round_trips_without_the_filled_width(tmp_path) -> None:
    from tfcli.checkpoints.export import minimal_fields

    assert "rotary_dim" not in minimal_fields(load_spec("llama-3-8b"))
    spec = parse_spec_text(ROPE + "d_head: 8\nrotary_dim: 2\nrope_pairing: interleaved\n")
    assert {"rotary_dim": 2, "rope_pairing": "interleaved"}.items() <= minimal_fields(spec).items()
