"""The rotated share of a head in config.json (Phi / Phi-3 / StableLM partial_rotary_factor,
GPT-NeoX rotary_pct, top level or inside the RoPE object): a share that rotates no pair, an odd
number of dimensions or more than the head is refused naming that key and its value, not the
spec's derived rotary_dim; a share that works gives int(d_head * share) as transformers."""

from __future__ import annotations

import json

import pytest

from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.configs import config_from_bytes
from tfcli.core.errors import BadInputError

SIZES = {"hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 2,  # d_head 32
         "intermediate_size": 32, "vocab_size": 50, "max_position_embeddings": 64}
FAMILIES = [  # (model_type, extra keys, the key holding the share)
    ("phi", {}, "partial_rotary_factor"),
    ("phi3", {"num_key_value_heads": 1}, "partial_rotary_factor"),
    ("stablelm", {"num_key_value_heads": 2}, "partial_rotary_factor"),
    ("gpt_neox", {}, "rotary_pct"),
]
LONGROPE = {"type": "longrope", "short_factor": [1.0] * 4, "long_factor": [1.0] * 4}


def _spec(config: dict):
    return spec_from_config(config_from_bytes(json.dumps(config).encode(), "config.json"), "x")


def _refusal(config: dict) -> str:
    with pytest.raises(BadInputError) as err:
        _spec(config)
    return err.value.message


@pytest.mark.parametrize(("model_type", "extra", "key"), FAMILIES)
@pytest.mark.parametrize(("share", "words"), [
    (1e-300, "rotates 0 of each head's 32 dimensions"),
    (0.02, "rotates 0 of each head's 32 dimensions"),
    (0.47, "rotates 15 of each head's 32 dimensions"),  # an odd count: RoPE rotates pairs
    (1.5, "is more than the whole head"),
])
def test_a_share_that_cannot_rotate_names_its_key(model_type, extra, key, share, words):
    message = _refusal({"model_type": model_type, **SIZES, **extra, key: share})
    assert f"{key} {share!r}" in message and words in message, message
    assert "rotary_dim" not in message, message


@pytest.mark.parametrize(("model_type", "extra", "key"), FAMILIES)
@pytest.mark.parametrize(("share", "rotated"), [(0.25, 8), (0.45, 14), (1.0, 32)])
def test_a_share_that_works_rotates_int_d_head_times_it(model_type, extra, key, share, rotated):
    spec = _spec({"model_type": model_type, **SIZES, **extra, key: share})
    assert spec.rotary_width == rotated


@pytest.mark.parametrize("section", ["rope_scaling", "rope_parameters"])
def test_phi3_names_the_share_inside_its_rope_object(section):
    rope = LONGROPE | {"partial_rotary_factor": 1e-300}
    message = _refusal({"model_type": "phi3", **SIZES, "num_key_value_heads": 1,
                        "original_max_position_embeddings": 16, section: rope})
    assert f"{section}.partial_rotary_factor 1e-300 rotates 0" in message, message


def test_longrope_factors_are_counted_over_the_rotated_pairs():
    # half of each 32-wide head rotated: 8 pairs, so 8 factors, not d_head / 2 = 16
    config = {"model_type": "phi3", **SIZES, "num_key_value_heads": 1,
              "original_max_position_embeddings": 16, "partial_rotary_factor": 0.5,
              "rope_scaling": LONGROPE}
    assert "16 / 2 = 8 (got 4)" in _refusal(config)
    fitted = LONGROPE | {"short_factor": [1.0] * 8, "long_factor": [1.0] * 8}
    assert _spec(config | {"rope_scaling": fitted}).rotary_width == 16
