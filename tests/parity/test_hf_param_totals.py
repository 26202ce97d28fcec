"""Bundled specs against transformers at full size, without allocating a weight.

Each bundled spec that describes a Hugging Face model is matched by a transformers config built
from the same published numbers. Two checks per model: the model instantiated on the "meta"
device (shapes only) has exactly tfcli's parameter total, and tfcli's config.json importer
turns that config into the bundled spec, field for field.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from transformers import (
    BertConfig,
    BertModel,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    MixtralConfig,
    MixtralForCausalLM,
    PretrainedConfig,
    PreTrainedModel,
    T5Config,
    T5ForConditionalGeneration,
)

from tfcli.spec.counts import total_parameters
from tfcli.checkpoints import spec_from_config
from tfcli.spec.model import Spec
from tfcli.spec.load import load_spec

IDENTITY = ("name", "description", "source")

# bundled spec -> (model class, its config from the published config.json numbers)
MODELS: dict[str, tuple[type[PreTrainedModel], Callable[[], PretrainedConfig]]] = {
    "gpt2": (GPT2LMHeadModel, GPT2Config),
    "gpt2-medium": (GPT2LMHeadModel, lambda: GPT2Config(n_embd=1024, n_layer=24, n_head=16)),
    "bert-base": (BertModel, BertConfig),
    "t5-small": (T5ForConditionalGeneration, T5Config),
    "llama-2-7b": (LlamaForCausalLM, lambda: LlamaConfig(max_position_embeddings=4096,
                                                         rms_norm_eps=1e-5)),
    "llama-2-70b": (LlamaForCausalLM, lambda: LlamaConfig(
        hidden_size=8192, intermediate_size=28672, num_attention_heads=64, num_key_value_heads=8,
        num_hidden_layers=80, max_position_embeddings=4096, rms_norm_eps=1e-5)),
    "llama-3-8b": (LlamaForCausalLM, lambda: LlamaConfig(
        vocab_size=128256, intermediate_size=14336, num_key_value_heads=8,
        max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=500000.0)),
    "mistral-7b": (MistralForCausalLM, lambda: MistralConfig(
        max_position_embeddings=32768, rms_norm_eps=1e-5, sliding_window=4096)),
    "mixtral-8x7b": (MixtralForCausalLM, lambda: MixtralConfig(max_position_embeddings=32768)),
}


def _architecture_fields(spec: Spec) -> dict[str, object]:
    return {k: v for k, v in spec.model_dump().items() if k not in IDENTITY}


@pytest.mark.parametrize("name", list(MODELS))
def test_bundled_total_equals_transformers_on_meta_device(name: str) -> None:
    model_class, config = MODELS[name]
    with torch.device("meta"):
        model = model_class(config())
    hf_total = sum(p.numel() for p in model.parameters())  # tied parameters counted once
    assert total_parameters(load_spec(name)) == hf_total


@pytest.mark.parametrize("name", list(MODELS))
def test_config_import_reproduces_bundled_spec(name: str) -> None:
    _, config = MODELS[name]
    imported = spec_from_config(config().to_dict(), source=f"{name} config")
    expected = load_spec(name)
    assert _architecture_fields(imported) == _architecture_fields(expected)
    assert total_parameters(imported) == total_parameters(load_spec(name))
