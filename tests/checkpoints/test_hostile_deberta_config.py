"""The deberta-v2 reader on hostile config.json values: any JSON in the keys it reads ends in a
spec or in one short BadInputError, never another exception (the property test of
test_hostile_encoder_config.py over a small DeBERTa-v3 base); each thing it does not model is
refused by name."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.checkpoints.hostile import only_bad_input
from tests.checkpoints.test_hostile_encoder_config import JSON, positions_fit
from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.families import FAMILIES
from tfcli.core.errors import BadInputError

BASE = {"model_type": "deberta-v2", "architectures": ["DebertaV2Model"], "hidden_size": 16,
        "num_attention_heads": 2, "num_hidden_layers": 2, "intermediate_size": 32,
        "vocab_size": 50, "max_position_embeddings": 32, "relative_attention": True,
        "position_buckets": 8, "pos_att_type": "p2c|c2p", "share_att_key": True,
        "norm_rel_ebd": "layer_norm", "position_biased_input": False}
# keys read beyond DEFAULTS (optional ones, absent by default)
EXTRA_KEYS = {"embedding_size", "pooler_hidden_size", "attention_head_size", "architectures"}
TEXTS = st.sampled_from(["p2c|c2p", "c2p", "P2C | C2P", "p2p", "c2p|c2p", "", "layer_norm",
                         "none|layer_norm", "LAYER_NORM", "tanh", "gelu"])


def test_any_json_in_the_keys_the_reader_reads() -> None:
    keys = sorted(set(FAMILIES["deberta-v2"].defaults) | EXTRA_KEYS)

    @settings(max_examples=150, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(fields=st.dictionaries(st.sampled_from(keys), JSON | TEXTS, min_size=1, max_size=4))
    def check(fields: dict) -> None:
        only_bad_input(BASE | fields, positions_fit)

    check()


@pytest.mark.parametrize(("changes", "words"), [
    ({"conv_kernel_size": 3}, "conv_kernel_size 3 is not supported"),
    ({"pos_att_type": "p2c|p2p"}, "pos_att_type term 'p2p' is not supported"),
    ({"pos_att_type": ["c2p", "c2p"]}, "names a term twice"),
    ({"pos_att_type": None}, "relative_attention without a pos_att_type term"),
    ({"norm_rel_ebd": "batch_norm"}, "norm_rel_ebd 'batch_norm' is not supported"),
    ({"relative_attention": False}, "norm_rel_ebd layer_norm without relative_attention"),
    ({"pooler_hidden_size": 8}, "pooler_hidden_size 8 is not supported"),
    ({"attention_head_size": 4}, "attention_head_size 4 is not supported"),
    ({"architectures": ["DebertaV2ForMaskedLM"], "legacy": False, "embedding_size": 8},
     "legacy false with embedding_size"),
    ({"architectures": ["DebertaV2ForMaskedLM"], "tie_word_embeddings": False},
     "untied masked-LM head"),
    ({"architectures": ["DebertaV2ForPreTraining"]},
     "architectures 'DebertaV2ForPreTraining' is not supported"),
    ({"position_buckets": 40, "max_relative_positions": 12}, "max_relative_positions"),
    ({"model_type": "deberta", "architectures": ["DebertaModel"]},
     "model_type 'deberta' is not supported"),
])
def test_what_the_reader_refuses_is_named(changes: dict, words: str) -> None:
    with pytest.raises(BadInputError, match=words):
        spec_from_config(BASE | changes, "x")


def test_values_below_one_leave_the_span_to_max_position_embeddings() -> None:
    spec = spec_from_config(BASE | {"position_buckets": -1, "max_relative_positions": 0}, "x")
    assert (spec.position_buckets, spec.max_relative_positions, spec.relative_rows) == \
        (None, None, 64)
