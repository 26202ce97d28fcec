"""mT5-small and UMT5-small at full size against transformers on the meta device, from their
published config.json (written out below), and import-config reproducing the bundled specs.

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
import torch
import transformers

from tests.parity.meta_totals import hf_total
from tfcli.checkpoints import spec_from_config
from tfcli.spec.counts import POSITION, components, total_parameters
from tfcli.spec.model import Spec
from tfcli.spec.load import load_spec

IDENTITY = ("name", "description", "source")

# https://huggingface.co/google/mt5-small/blob/main/config.json
MT5_SMALL = {
    "architectures": ["MT5ForConditionalGeneration"], "d_ff": 1024, "d_kv": 64, "d_model": 512,
    "decoder_start_token_id": 0, "dropout_rate": 0.1, "eos_token_id": 1,
    "feed_forward_proj": "gated-gelu", "initializer_factor": 1.0, "is_encoder_decoder": True,
    "layer_norm_epsilon": 1e-06, "model_type": "mt5", "num_decoder_layers": 8, "num_heads": 6,
    "num_layers": 8, "pad_token_id": 0, "relative_attention_num_buckets": 32,
    "tie_word_embeddings": False, "tokenizer_class": "T5Tokenizer", "vocab_size": 250112,
}
# https://huggingface.co/google/umt5-small/blob/main/config.json
UMT5_SMALL = {
    "architectures": ["UMT5ForConditionalGeneration"], "d_ff": 1024, "d_kv": 64, "d_model": 512,
    "decoder_start_token_id": 0, "dense_act_fn": "gelu_new", "dropout_rate": 0.1,
    "eos_token_id": 1, "feed_forward_proj": "gated-gelu", "initializer_factor": 1.0,
    "is_encoder_decoder": True, "is_gated_act": True, "layer_norm_epsilon": 1e-06,
    "model_type": "umt5", "num_decoder_layers": 8, "num_heads": 6, "num_layers": 8,
    "output_past": True, "pad_token_id": 0, "relative_attention_max_distance": 128,
    "relative_attention_num_buckets": 32, "scalable_attention": True,
    "tie_word_embeddings": False, "tokenizer_class": "T5Tokenizer", "use_cache": True,
    "vocab_size": 256384,
}
# bundled spec -> (published config, transformers' count as loaded)
MODELS = {"mt5-small": (MT5_SMALL, 300_176_768), "umt5-small": (UMT5_SMALL, 306_601_984)}


def _as_loaded(config: dict[str, object]) -> int:
    """num_parameters() of the class in `architectures` as from_pretrained builds it from the
    published checkpoint: lm_head apart, embed_tokens one table with `shared`."""
    model_class = getattr(transformers, config["architectures"][0])  # type: ignore[index]
    config_class = transformers.AutoConfig.for_model(str(config["model_type"])).__class__
    built = config_class(**copy.deepcopy({k: v for k, v in config.items() if k != "model_type"}))
    built.tie_word_embeddings = False  # what the stored, different lm_head.weight makes of it
    with torch.device("meta"):
        model = model_class(built)
    for stack in (model.encoder, model.decoder):
        stack.embed_tokens.weight = model.shared.weight
    return model.num_parameters()


def _architecture(spec: Spec) -> dict[str, object]:
    return {k: v for k, v in spec.model_dump().items() if k not in IDENTITY}


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


@pytest.mark.parametrize("name", list(MODELS))
def test_config_import_reproduces_bundled_spec(name: str) -> None:
    config, _ = MODELS[name]
    imported = spec_from_config(config, source=f"{name} config")
    assert _architecture(imported) == _architecture(load_spec(name))


def test_umt5_counts_a_relative_table_per_block() -> None:
    """16 blocks x (32 buckets x 6 heads) in UMT5-small; mT5-small's 2 stacks x 1."""
    def tables(name: str) -> int:
        return sum(c.count for c in components(load_spec(name)) if c.group == POSITION)
    assert (tables("umt5-small"), tables("mt5-small")) == (16 * 32 * 6, 2 * 32 * 6)
