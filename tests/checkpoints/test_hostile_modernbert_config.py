"""The modernbert reader on hostile config.json values: any JSON in the keys it reads (and in
rope_parameters' nested objects) ends in a spec or in one short BadInputError, never another
exception (the property tests of test_hostile_encoder_config.py, over a small base); what it
refuses is named."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.checkpoints.hostile import only_bad_input
from tests.checkpoints.test_hostile_encoder_config import JSON, SCALARS, positions_fit
from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.families import FAMILIES
from tfcli.core.errors import BadInputError

BASE = {"model_type": "modernbert", "architectures": ["ModernBertModel"], "hidden_size": 16,
        "num_attention_heads": 2, "num_hidden_layers": 4, "intermediate_size": 24,
        "vocab_size": 50, "max_position_embeddings": 64, "local_attention": 4,
        "pad_token_id": 0}
CLASSES = ["ModernBertModel", "ModernBertForMaskedLM", "ModernBertForSequenceClassification",
           "ModernBertForTokenClassification"]
KEYS = sorted(set(FAMILIES["modernbert"].defaults) | {"head_dim", "num_labels"})
ROPE = st.dictionaries(st.sampled_from(["full_attention", "sliding_attention", "other"]),
                       st.dictionaries(st.sampled_from(["rope_type", "rope_theta", "factor"]),
                                       SCALARS, max_size=3) | SCALARS, max_size=3)
LAYER_TYPES = st.lists(st.sampled_from(["full_attention", "sliding_attention", "chunked"]),
                       min_size=0, max_size=6)


@pytest.mark.parametrize("name", CLASSES)
def test_any_json_in_the_keys_the_modernbert_reader_reads(name: str) -> None:
    @settings(max_examples=80, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(fields=st.dictionaries(st.sampled_from(KEYS), JSON, min_size=1, max_size=4),
           rope=st.none() | ROPE, types=st.none() | LAYER_TYPES)
    def check(fields: dict, rope: object, types: object) -> None:
        nested = {"rope_parameters": rope} if rope is not None else {}
        nested |= {"layer_types": types} if types is not None else {}
        only_bad_input(BASE | {"architectures": [name]} | fields | nested, positions_fit)

    check()


@pytest.mark.parametrize(("changes", "words"), [
    ({"hidden_activation": "relu"}, "hidden_activation 'relu' is not supported"),
    ({"architectures": ["ModernBertForMaskedLM"], "classifier_activation": "tanh"},
     "classifier_activation 'tanh' is not supported"),
    ({"rope_scaling": {"rope_type": "linear", "factor": 2.0}}, "rope_scaling is not supported"),
    ({"rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 2.0}}},
     "rope_parameters.full_attention.rope_type 'yarn' is not supported"),
    ({"layer_types": ["full_attention"] * 3}, "lists 3 layers for num_hidden_layers 4"),
    ({"layer_types": ["full_attention", "chunked", "full_attention", "full_attention"]},
     "'chunked' is not a layer type"),
    ({"head_dim": 4}, "head_dim is not supported"),
    ({"hidden_size": 15}, "not divisible by n_heads"),
    ({"num_hidden_layers": 2000, "global_attn_every_n_layers": 2000}, "layer_pattern"),
    ({"architectures": ["ModernBertForSequenceClassification"], "classifier_pooling": "max"},
     "field 'classifier_pooling': expected 'cls' or 'mean', got 'max'"),
    ({"architectures": ["ModernBertForPreTraining"]}, "architectures 'ModernBertForPreTraining'"),
])
def test_what_the_modernbert_reader_refuses_is_named(changes: dict, words: str) -> None:
    with pytest.raises(BadInputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        spec_from_config(BASE | changes, "x")


def test_every_global_or_every_local_layer_reads_as_such() -> None:
    every_global = spec_from_config(BASE | {"global_attn_every_n_layers": 1}, "x")
    assert every_global.sliding_window is None and every_global.layer_pattern is None
    assert every_global.layer_kinds == ("global",) * 4
    every_local = spec_from_config(BASE | {"layer_types": ["sliding_attention"] * 4}, "x")
    assert every_local.layer_kinds == ("local",) * 4 and every_local.rope_local_theta == 10000.0
