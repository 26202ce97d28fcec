"""mT5-small and UMT5-small as from_pretrained loads them, against tfcli's bundled specs (the
import of their published configs is a row of tests/parity/totals_table.py).

transformers 5 forces tie_word_embeddings true when it builds these configs, so a fresh
model counts the head as `shared` (mt5-small: 172,119,424); from_pretrained then finds the
published checkpoint's lm_head.weight apart from `shared`, unties it and counts it (the warning
"both are present in the checkpoints with different values"): 300,176,768, the model people
run. `_as_loaded` builds that model: the head untied, the stacks' embed_tokens tied to
`shared` as the equal stored tables are.
"""

from __future__ import annotations

import copy

import pytest

from tests.parity.meta_totals import hf_total
from tests.parity.published_configs import MT5_SMALL, UMT5_SMALL
from tfcli.spec.counts import total_parameters
from tfcli.sources import load_spec

# bundled spec -> (published config, transformers' count as loaded)
MODELS = {"mt5-small": (MT5_SMALL, 300_176_768), "umt5-small": (UMT5_SMALL, 306_601_984)}


def _as_loaded(config: dict[str, object]) -> int:
    """num_parameters() of the class in `architectures` as from_pretrained builds it from the
    published checkpoint: lm_head apart, embed_tokens one table with `shared`."""
    import torch
    import transformers

    model_class = getattr(transformers, config["architectures"][0])  # type: ignore[index]
    config_class = transformers.AutoConfig.for_model(str(config["model_type"])).__class__
    built = config_class(**copy.deepcopy({k: v for k, v in config.items() if k != "model_type"}))
    built.tie_word_embeddings = False  # what the stored, different lm_head.weight makes of it
    with torch.device("meta"):
        model = model_class(built)
    for stack in (model.encoder, model.decoder):
        stack.embed_tokens.weight = model.shared.weight
    return model.num_parameters()


@pytest.mark.parametrize("name", list(MODELS))
def test_bundled_total_equals_transformers_as_loaded(name: str) -> None:
    config, expected = MODELS[name]
    assert total_parameters(load_spec(name)) == _as_loaded(config) == expected


@pytest.mark.parametrize("name", list(MODELS))
def test_a_fresh_model_differs_by_the_head_alone(name: str) -> None:
    """hf_total's fresh (tied) build: the loaded count less one (vocab, d_model) head."""
    config, expected = MODELS[name]
    head = int(config["vocab_size"]) * int(config["d_model"])  # type: ignore[call-overload]
    assert hf_total(config) == expected - head
