"""The disentangled-attention fields (tfcli/spec/disentangled.py) and DeBERTa's factorised
embedding fields: what they derive, each refused combination one SpecConsistencyError naming the
field (through the CLI exit 2 with file and field), and a round trip through the minimal YAML
import-config writes."""

from __future__ import annotations

import pytest

from tests.engine.engine_specs import assert_refused, make_spec
from tfcli.checkpoints.export import spec_to_yaml
from tfcli.spec.load import parse_spec_text
from tfcli.sources import load_spec


def test_span_rows_and_scale_are_derived() -> None:
    spec = make_spec("deberta")  # 8 buckets over 20 positions, both terms, d_head 8
    assert (spec.relative_rows, spec.scale) == (16, (8 * 3) ** -0.5)
    unbucketed = make_spec("deberta", position_buckets=None, max_relative_positions=None)
    assert unbucketed.relative_rows == 2 * unbucketed.max_seq_len  # span max_seq_len
    one_term = make_spec("deberta", disentangled_attention=["p2c"])
    assert one_term.scale == (8 * 2) ** -0.5
    assert make_spec("deberta", attention_scale=0.5).scale == 0.5  # stated wins
    assert make_spec("deberta").embedding_norm_width == 32  # projected first: d_model wide
    assert make_spec("albert").embedding_norm_width == 16


BAD = [  # (variant, changes, field, message part)
    ("deberta", {"disentangled_attention": ["c2p", "c2p"]}, "disentangled_attention",
     "names a term twice"),
    ("gpt", {"disentangled_attention": ["c2p"]}, "disentangled_attention",
     "only applies to family 'encoder'"),
    ("deberta", {"positions": "rope"}, "disentangled_attention", "needs positions: learned or none"),
    ("deberta", {"n_kv_heads": 2}, "n_kv_heads", "must equal n_heads"),
    ("deberta", {"qk_norm": "per_head"}, "qk_norm", "does not apply"),
    ("deberta", {"attn_logit_softcap": 30.0}, "attn_logit_softcap", "does not apply"),
    ("deberta", {"norm": "none", "norm_placement": "pre", "embedding_norm": False},
     "relative_embedding_norm", "needs a norm"),
    ("deberta", {"position_buckets": 1}, "position_buckets", "at least 2"),
    ("deberta", {"position_buckets": 40}, "max_relative_positions", "must exceed"),
    ("bert", {"position_buckets": 8}, "position_buckets", "needs disentangled_attention"),
    ("bert", {"max_relative_positions": 8}, "max_relative_positions",
     "needs disentangled_attention"),
    ("bert", {"share_att_key": True}, "share_att_key", "needs disentangled_attention"),
    ("bert", {"relative_embedding_norm": True}, "relative_embedding_norm",
     "needs disentangled_attention"),
    ("bert", {"embedding_project_first": True}, "embedding_project_first", "needs embedding_dim"),
    ("bert", {"embedding_project_bias": False}, "embedding_project_bias", "needs embedding_dim"),
]


@pytest.mark.parametrize(("variant", "changes", "field", "message"), BAD)
def test_bad_combinations_name_the_field(variant: str, changes: dict, field: str,
                                         message: str) -> None:
    assert_refused(lambda: make_spec(variant, **changes), field, message)


@pytest.mark.parametrize(("field", "value"), [("disentangled_attention", []),
                                              ("disentangled_attention", ["p2p"]),
                                              ("position_buckets", 0),
                                              ("max_relative_positions", -1)])
def test_out_of_range_values_are_refused(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        make_spec("deberta", **{field: value})


def test_a_bad_disentangled_field_in_yaml_names_file_and_field(invoke, write_spec) -> None:  # noqa: ANN001
    text = spec_to_yaml(make_spec("deberta")).replace("position_buckets: 8",
                                                      "position_buckets: 64")
    path = write_spec(text)
    result = invoke("params", str(path))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert str(path) in result.stderr and "'max_relative_positions'" in result.stderr


def test_a_mistyped_field_gets_a_suggestion(invoke, write_spec) -> None:  # noqa: ANN001
    text = spec_to_yaml(make_spec("deberta")).replace("position_buckets:", "position_bucket:")
    result = invoke("validate", str(write_spec(text)))
    assert result.exit_code == 2 and "position_buckets" in result.output


@pytest.mark.parametrize("spec", [make_spec("deberta"), load_spec("deberta-v3-base")],
                         ids=["deberta-variant", "deberta-v3-base"])
def test_minimal_yaml_round_trips(spec) -> None:  # noqa: ANN001
    again = parse_spec_text(spec_to_yaml(spec))
    assert again.model_dump(exclude={"name", "description", "source"}) == \
        spec.model_dump(exclude={"name", "description", "source"})
