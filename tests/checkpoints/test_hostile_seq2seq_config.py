"""The mt5 / umt5 / bart readers on hostile config.json values: named refusals (exit 2, one line that
names config.json and the key), and any JSON in the keys they read ends in a spec or in one
short BadInputError, never another exception (as test_hostile_config.py)."""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.checkpoints.hostile import MAX_MESSAGE, only_bad_input
from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.configs import config_from_bytes
from tfcli.checkpoints.families.bart import DEFAULTS as BART_DEFAULTS
from tfcli.checkpoints.families.t5 import MT5_DEFAULTS, UMT5_DEFAULTS
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

SMALL = {"vocab_size": 50, "d_model": 16, "d_kv": 4, "d_ff": 24, "num_layers": 2, "num_heads": 2}
BASES = [SMALL | {"model_type": "mt5", "architectures": ["MT5ForConditionalGeneration"]},
         SMALL | {"model_type": "umt5", "architectures": ["UMT5ForConditionalGeneration"]}]
FIELDS = sorted(set(MT5_DEFAULTS) | set(UMT5_DEFAULTS) | {"scale_decoder_outputs"})
BART = {"model_type": "bart", "architectures": ["BartForConditionalGeneration"], "vocab_size": 50,
        "d_model": 16, "encoder_layers": 2, "decoder_layers": 2, "encoder_ffn_dim": 24,
        "decoder_ffn_dim": 24, "encoder_attention_heads": 2, "decoder_attention_heads": 2,
        "max_position_embeddings": 32}
SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(-3, 8)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5), max_leaves=10)


def _spec(config: dict) -> object:
    return spec_from_config(config_from_bytes(json.dumps(config).encode(), "c.json"), "x")


def _message(config: dict) -> str:
    with pytest.raises(BadInputError) as info:
        _spec(config)
    message = info.value.message
    assert len(message) < MAX_MESSAGE and "\n" not in message and message.isprintable(), message
    return message


@pytest.mark.parametrize("base", BASES, ids=["mt5", "umt5"])
@pytest.mark.parametrize(("change", "says"), [
    ({"num_heads": "6"}, "field 'num_heads': expected an integer"),
    ({"d_model": -512}, "field 'd_model'"),
    ({"relative_attention_num_buckets": 2}, "relative_buckets"),
    ({"relative_attention_max_distance": 1}, "relative_max_distance"),
    ({"feed_forward_proj": "gated-swish-x"}, "feed_forward_proj"),
    ({"feed_forward_proj": "gated-tanh"}, "feed_forward_proj"),
    ({"layer_norm_epsilon": 0}, "field 'layer_norm_epsilon': must be positive"),
    ({"num_decoder_layers": 1.5}, "field 'num_decoder_layers': expected an integer"),
    ({"tie_word_embeddings": "no"}, "field 'tie_word_embeddings'"),
    ({"architectures": ["MT5ForSequenceClassification"]}, "ForSequenceClassification"),
])
def test_bad_values_are_refused_by_name(base: dict, change: dict, says: str) -> None:
    message = _message(base | change)
    assert message.startswith("config.json") and says in message, message


def test_mt5_never_rescales_and_umt5_follows_scale_decoder_outputs() -> None:
    tied = {"tie_word_embeddings": True}
    mt5, umt5 = (_spec(base | tied) for base in BASES)
    assert (mt5.tied_head_rescale, umt5.tied_head_rescale) == (False, True)
    assert _spec(BASES[1] | tied | {"scale_decoder_outputs": False}).tied_head_rescale is False
    assert (mt5.relative_bias_per_layer, umt5.relative_bias_per_layer) == (False, True)


@pytest.mark.parametrize(("change", "says"), [
    ({"encoder_ffn_dim": 32}, "encoder_ffn_dim 32 and decoder_ffn_dim 24 differ"),
    ({"decoder_attention_heads": 4}, "encoder_attention_heads 2 and decoder_attention_heads 4"),
    ({"activation_function": "tanh"}, "activation_function 'tanh' is not supported"),
    ({"tie_word_embeddings": False}, "an untied BART head is not supported"),
    ({"max_position_embeddings": 0}, "field 'max_position_embeddings': must be positive"),
    ({"scale_embedding": "yes"}, "field 'scale_embedding'"),
    ({"encoder_layers": None}, "field 'encoder_layers'"),
    ({"d_model": 17}, "n_heads"),
    ({"architectures": ["BartForSequenceClassification"]}, "BartForSequenceClassification"),
])
def test_bad_bart_values_are_refused_by_name(change: dict, says: str) -> None:
    message = _message(BART | change)
    assert message.startswith("config.json") and says in message, message


def test_bart_model_has_neither_head_nor_logits_bias() -> None:
    spec = _spec(BART | {"architectures": ["BartModel"]})
    assert (spec.lm_head, spec.final_logits_bias, spec.per_stack_embeddings) == (False, False, True)


def _two_extra_positions(spec: Spec) -> None:
    assert spec.position_rows == spec.max_seq_len + 2


def _bias_per_layer(model_type: str, spec: Spec) -> None:
    assert spec.relative_bias_per_layer == (model_type == "umt5")


@settings(max_examples=200, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(fields=st.dictionaries(st.sampled_from(sorted(BART_DEFAULTS)), JSON, min_size=1,
                              max_size=4))
def test_any_json_in_the_keys_bart_reads(fields: dict) -> None:
    only_bad_input(BART | fields, _two_extra_positions)


@settings(max_examples=200, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(fields=st.dictionaries(st.sampled_from(FIELDS), JSON, min_size=1, max_size=4))
def test_any_json_in_the_keys_mt5_and_umt5_read(fields: dict) -> None:
    for base in BASES:
        only_bad_input(base | fields, functools.partial(_bias_per_layer, base["model_type"]))
