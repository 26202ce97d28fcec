"""Checkpoint formats written by transformers: bf16 / f16 tensors and sharded safetensors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tfcli.checkpoints import load_checkpoint
from tfcli.engine.model import forward
from tfcli.engine.weights import Weights, iter_arrays

if TYPE_CHECKING:
    from transformers import PreTrainedModel


@pytest.fixture(scope="module")
def model() -> PreTrainedModel:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                         num_hidden_layers=2, intermediate_size=64, vocab_size=64)
    return LlamaForCausalLM(config).eval()


def _arrays(weights: Weights) -> list[np.ndarray]:
    return list(iter_arrays(weights))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_checkpoint_widens_exactly(
    model: PreTrainedModel, dtype: str, tmp_path: Path
) -> None:
    import torch
    from transformers import LlamaForCausalLM
    half = LlamaForCausalLM(model.config).to(getattr(torch, dtype)).eval()
    half.load_state_dict(model.state_dict())
    half.save_pretrained(tmp_path)
    spec, weights = load_checkpoint(tmp_path, dtype=np.float32)
    hf_embedding = half.model.embed_tokens.weight.detach().float().numpy()
    np.testing.assert_array_equal(weights.token_embedding, hf_embedding)  # exact, not close
    np.testing.assert_array_equal(weights.lm_head, half.lm_head.weight.detach().float().numpy().T)
    tokens = np.arange(10)[None] % 64
    with torch.no_grad():
        expected = half.float()(input_ids=torch.from_numpy(tokens)).logits.numpy()
    np.testing.assert_allclose(forward(spec, weights, tokens).logits, expected, rtol=1e-4, atol=1e-4)


def test_sharded_checkpoint_equals_single_file(model: PreTrainedModel, tmp_path: Path) -> None:
    model.save_pretrained(tmp_path / "single")
    model.save_pretrained(tmp_path / "sharded", max_shard_size="20KB")
    assert (tmp_path / "sharded" / "model.safetensors.index.json").is_file()
    assert len(list((tmp_path / "sharded").glob("model-*.safetensors"))) > 1
    _, single = load_checkpoint(tmp_path / "single")
    _, sharded = load_checkpoint(tmp_path / "sharded")
    for a, b in zip(_arrays(single), _arrays(sharded), strict=True):
        np.testing.assert_array_equal(a, b)
