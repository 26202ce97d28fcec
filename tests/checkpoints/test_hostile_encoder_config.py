"""The roberta / xlm-roberta / distilbert / electra / albert readers on hostile config.json
values: any JSON in the keys they read ends in a spec or in one short BadInputError, never
another exception (the property tests of test_hostile_config.py, over small bases)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.checkpoints.hostile import only_bad_input
from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.families import FAMILIES
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

BERT_LIKE = {"hidden_size": 16, "num_attention_heads": 2, "num_hidden_layers": 2,
             "intermediate_size": 32, "vocab_size": 50, "max_position_embeddings": 34}
BASES = {
    "roberta": BERT_LIKE | {"model_type": "roberta", "architectures": ["RobertaModel"]},
    "xlm-roberta": BERT_LIKE | {"model_type": "xlm-roberta",
                                "architectures": ["XLMRobertaModel"]},
    "distilbert": {"model_type": "distilbert", "architectures": ["DistilBertModel"], "dim": 16,
                   "n_heads": 2, "n_layers": 2, "hidden_dim": 32, "vocab_size": 50,
                   "max_position_embeddings": 32},
    "electra": BERT_LIKE | {"model_type": "electra", "architectures": ["ElectraModel"],
                            "embedding_size": 8},
    "albert": BERT_LIKE | {"model_type": "albert", "architectures": ["AlbertModel"],
                           "embedding_size": 8},
}
# the keys each reader reads (its DEFAULTS), and the ones it reads beyond them
EXTRA_KEYS = {"position_embedding_type", "sinusoidal_pos_embds", "pad_token_id"}
SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(-3, 40)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5), max_leaves=10)


def positions_fit(spec: Spec) -> None:
    """What any encoder spec must hold (test_hostile_deberta/modernbert_config.py too)."""
    assert spec.position_rows >= spec.max_seq_len >= 1
    assert spec.embedding_width >= 1


@pytest.mark.parametrize("kind", sorted(BASES))
def test_any_json_in_the_keys_an_encoder_reader_reads(kind: str) -> None:
    keys = sorted(set(FAMILIES[kind].defaults) | EXTRA_KEYS)

    @settings(max_examples=150, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(fields=st.dictionaries(st.sampled_from(keys), JSON, min_size=1, max_size=4))
    def check(fields: dict) -> None:
        only_bad_input(BASES[kind] | fields, positions_fit)

    check()


@pytest.mark.parametrize(("kind", "changes", "words"), [
    ("roberta", {"max_position_embeddings": 2}, "leaves no position for a real token"),
    ("roberta", {"pad_token_id": None}, "pad_token_id"),
    ("xlm-roberta", {"position_embedding_type": "relative_key"}, "position_embedding_type"),
    ("albert", {"num_hidden_groups": 2}, "num_hidden_groups 2 is not supported"),
    ("albert", {"inner_group_num": 3}, "inner_group_num 3 is not supported"),
    ("electra", {"is_decoder": True}, "is_decoder"),
])
def test_what_an_encoder_reader_refuses_is_named(kind: str, changes: dict, words: str) -> None:
    with pytest.raises(BadInputError, match=words):
        spec_from_config(BASES[kind] | changes, "x")
