"""Hostile head keys in config.json (num_labels, id2label, pad_token_id, architectures): each a
spec that counts the class, or one short BadInputError naming config.json and the key."""

from __future__ import annotations

import functools

import pytest

from tests.checkpoints.test_heads import tiny_configs
from tfcli.checkpoints import spec_from_config
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import total_parameters



@functools.cache
def _reward() -> dict[str, object]:
    """The tiny LLaMA's config.json as a reward model's, with no label keys."""
    return {k: v for k, v in tiny_configs()["llama"].to_dict().items()
            if k not in ("id2label", "label2id", "num_labels")} | {
        "architectures": ["LlamaForSequenceClassification"]}


@pytest.mark.parametrize(("key", "value", "says"), [
    ("num_labels", 0, "must be positive"), ("num_labels", -3, "must be positive"),
    ("num_labels", "3", "expected an integer"), ("num_labels", 2.5, "expected an integer"),
    ("num_labels", True, "expected an integer"), ("num_labels", 10**7, "at most 1,048,576"),
    ("num_labels", 10**40, "too large"), ("id2label", [1, 2], "expected an object"),
    ("id2label", "x", "expected an object"), ("pad_token_id", "0", "expected an integer"),
    ("pad_token_id", 10**30, "too large"), ("pad_token_id", 1.0, "expected an integer"),
    ("architectures", "LlamaForSequenceClassification", "expected a list of strings"),
])
def test_bad_head_keys_are_one_message(key: str, value: object, says: str) -> None:
    with pytest.raises(BadInputError) as info:
        spec_from_config(_reward() | {key: value}, "x")
    message = info.value.message
    assert key in message and says in message and "\n" not in message and len(message) < 400


@pytest.mark.parametrize(("extra", "labels", "pad"), [
    ({}, 2, None), ({"num_labels": None}, 2, None), ({"id2label": {}}, 2, None),
    ({"id2label": {"0": "a", "1": "b", "2": "c"}}, 3, None), ({"num_labels": 1}, 1, None),
    ({"pad_token_id": 7}, 2, 7), ({"pad_token_id": None}, 2, None),
])
def test_well_formed_head_keys_count_the_class(extra: dict, labels: int, pad: int | None) -> None:
    spec = spec_from_config(_reward() | extra, "x")
    assert (spec.num_labels, spec.pad_token_id) == (labels, pad)
    assert total_parameters(spec) == total_parameters(spec_from_config(
        _reward() | {"architectures": ["LlamaModel"]}, "x")) + 16 * labels


@pytest.mark.parametrize("pad", [-1, 50, 10**6])
def test_a_pad_id_that_is_no_token_reads_the_last_real_token_and_says_so(pad: int) -> None:
    """-1 (some LLaMA configs) or past the vocabulary matches no token: transformers reads each
    row's last position; the spec keeps no pad id (the attention mask decides) and notes it."""
    spec = spec_from_config(_reward() | {"pad_token_id": pad}, "x")
    assert spec.pad_token_id is None and f"pad_token_id {pad} is no token" in spec.description
