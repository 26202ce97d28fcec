"""Spec fields of the encoder-decoder families beyond T5: relative_bias_per_layer (UMT5),
per_stack_embeddings and final_logits_bias (BART)."""

from __future__ import annotations

import pytest

from tfcli.core.errors import SpecConsistencyError
from tfcli.spec.counts import components
from tfcli.spec.model import Spec
from tfcli.sources import load_spec


def test_per_layer_tables_need_relative_positions() -> None:
    data = load_spec("t5-small").model_dump(exclude_unset=True)
    with pytest.raises(SpecConsistencyError) as info:
        Spec.model_validate(data | {"positions": "learned", "relative_bias_per_layer": True})
    assert info.value.field == "relative_bias_per_layer"


def test_per_layer_tables_are_one_component_per_stack_repeated_over_its_blocks() -> None:
    spec = load_spec("t5-small").replace(relative_bias_per_layer=True, n_decoder_layers=4)
    tables = [(c.path, c.shape, c.repeat) for c in components(spec) if c.group == "position"]
    assert tables == [("encoder.blocks.*.relative_bias", (32, 8), 6),
                      ("decoder.blocks.*.relative_bias", (32, 8), 4)]


@pytest.mark.parametrize(("change", "field"), [
    ({"family": "decoder", "n_decoder_layers": None}, "per_stack_embeddings"),
    ({"positions": "sinusoidal", "position_offset": 0}, "per_stack_embeddings"),
    ({"lm_head": False}, "final_logits_bias"),
    ({"decoder_start_token_id": 50265}, "decoder_start_token_id"),
])
def test_bart_fields_say_what_they_need(change: dict, field: str) -> None:
    data = load_spec("bart-base").model_dump(exclude_unset=True) | change
    data = {k: v for k, v in data.items() if v is not None}
    with pytest.raises(SpecConsistencyError) as info:
        Spec.model_validate(data)
    assert info.value.field == field


def test_per_stack_tables_replace_the_shared_ones() -> None:
    paths = {c.path for c in components(load_spec("bart-base"))}
    assert {"encoder.position_embedding", "decoder.position_embedding",
            "encoder.embedding_norm.bias", "decoder.embedding_norm.bias"} <= paths
    assert not {"position_embedding", "embedding_norm.scale"} & paths


def test_decoder_start_token_is_for_encoder_decoders_only() -> None:
    with pytest.raises(SpecConsistencyError) as info:
        load_spec("gpt2").replace(decoder_start_token_id=2)
    assert info.value.field == "decoder_start_token_id"
