"""Checkpoints as the hub ships them for GPT-NeoX (Pythia) and GPT-J: besides the weights, the
causal-mask buffers (`attention.bias` as bool, `masked_bias`) and RoPE's `inv_freq` of older
saves are ignored, and the untied head is `embed_out` in Pythia's files; logits unchanged."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tfcli.checkpoints import load_checkpoint
from tfcli.engine.model import forward

if TYPE_CHECKING:
    import torch
    import transformers


def _neox(transformers: ModuleType) -> transformers.PreTrainedModel:
    return transformers.GPTNeoXForCausalLM(transformers.GPTNeoXConfig(
        hidden_size=32, num_attention_heads=4, num_hidden_layers=2, intermediate_size=64,
        vocab_size=64, max_position_embeddings=32, bos_token_id=0, eos_token_id=0))


def _gptj(transformers: ModuleType) -> transformers.PreTrainedModel:
    return transformers.GPTJForCausalLM(transformers.GPTJConfig(
        vocab_size=64, n_positions=32, n_embd=32, n_head=4, n_layer=2, rotary_dim=4,
        bos_token_id=0, eos_token_id=0))


def _neox_buffers(torch: ModuleType, i: int) -> dict[str, torch.Tensor]:
    attn = f"gpt_neox.layers.{i}.attention"
    return {f"{attn}.bias": torch.tril(torch.ones(32, 32, dtype=torch.bool))[None, None],
            f"{attn}.masked_bias": torch.tensor(-1e9), f"{attn}.rotary_emb.inv_freq": torch.ones(2)}


def _gptj_buffers(torch: ModuleType, i: int) -> dict[str, torch.Tensor]:
    attn = f"transformer.h.{i}.attn"
    return {f"{attn}.bias": torch.tril(torch.ones(32, 32, dtype=torch.bool))[None, None],
            f"{attn}.masked_bias": torch.tensor(-1e9)}


@pytest.mark.parametrize(("build", "buffers", "head"), [
    (_neox, _neox_buffers, "embed_out.weight"), (_gptj, _gptj_buffers, "lm_head.weight")])
def test_hub_files_load_with_their_buffers(torch: ModuleType, transformers: ModuleType, build,
                                           buffers, head: str, tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    torch.manual_seed(0)
    model = build(transformers)
    model.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    assert head in tensors  # transformers 5 saves Pythia's head under its hub name
    for i in range(2):
        tensors |= buffers(torch, i)
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    spec, weights = load_checkpoint(tmp_path)
    tokens = np.array([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        want = model(torch.from_numpy(tokens)).logits.numpy()
    np.testing.assert_allclose(forward(spec, weights, tokens).logits, want, rtol=1e-4, atol=1e-4)
