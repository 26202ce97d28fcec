"""The encoder-body fields (tfcli/spec/encoder.py): embedding_dim, position_offset and
shared_layers - what they derive, each refused combination one SpecConsistencyError naming the
field (through the CLI exit 2 with file, line and field), and a round trip through the minimal
YAML import-config writes."""

from __future__ import annotations

import pytest

from tests.engine.engine_specs import assert_refused, make_spec
from tfcli.checkpoints.export import spec_to_yaml
from tfcli.spec.load import parse_spec_text
from tfcli.sources import load_spec


def test_widths_and_rows_are_derived() -> None:
    spec = make_spec("albert")  # embedding_dim 16, d_model 32, position_offset 2, max_seq_len 48
    assert (spec.embedding_width, spec.position_rows, spec.shared_layers) == (16, 50, True)
    plain = make_spec("bert")
    assert (plain.embedding_width, plain.position_rows, plain.shared_layers) == (32, 48, False)


BAD = [  # (variant, changes, field, message part)
    ("bert", {"positions": "sinusoidal", "position_offset": 2}, "position_offset",
     "needs positions: learned"),
    ("llama_gqa", {"position_offset": 1}, "position_offset", "needs positions: learned"),
    ("gpt", {"embedding_dim": 16}, "embedding_dim", "only applies to family 'encoder'"),
    ("t5", {"embedding_dim": 16}, "embedding_dim", "only applies to family 'encoder'"),
    ("bert", {"embedding_dim": 16, "lm_head": True}, "embedding_dim", "vocabulary logits"),
    ("gpt", {"shared_layers": True}, "shared_layers", "only applies to family 'encoder'"),
    ("t5", {"shared_layers": True}, "shared_layers", "only applies to family 'encoder'"),
]


@pytest.mark.parametrize(("variant", "changes", "field", "message"), BAD)
def test_bad_combinations_name_the_field(variant: str, changes: dict, field: str,
                                         message: str) -> None:
    assert_refused(lambda: make_spec(variant, **changes), field, message)


@pytest.mark.parametrize(("field", "value"), [("embedding_dim", 0), ("position_offset", -1)])
def test_out_of_range_values_are_refused(field: str, value: int) -> None:
    with pytest.raises(ValueError, match=field):
        make_spec("albert", **{field: value})


def test_a_bad_encoder_field_in_yaml_names_file_line_and_field(invoke, write_spec) -> None:  # noqa: ANN001
    text = spec_to_yaml(make_spec("albert")).replace("family: encoder", "family: decoder")
    path = write_spec(text)
    result = invoke("params", str(path))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert str(path) in result.stderr and "'embedding_dim'" in result.stderr


@pytest.mark.parametrize("spec", [make_spec("albert"), load_spec("albert-base-v2"),
                                  load_spec("roberta-base"),
                                  load_spec("electra-small-discriminator")],
                         ids=["albert-variant", "albert-base-v2", "roberta-base", "electra-small"])
def test_minimal_yaml_round_trips(spec) -> None:  # noqa: ANN001
    again = parse_spec_text(spec_to_yaml(spec))
    assert again.model_dump(exclude={"name", "description", "source"}) == \
        spec.model_dump(exclude={"name", "description", "source"})
