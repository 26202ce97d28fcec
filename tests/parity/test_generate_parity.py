"""Greedy generation parity with transformers' `generate`, on small random checkpoints loaded
through tfcli's own loader: the same new tokens, for GPT-2, LLaMA with GQA, Mixtral, Mistral (sliding window) and T5.

Weights are scaled up (std 0.2 instead of 0.02) so the logits are far from ties: with
near-uniform logits, float32 rounding alone could flip an argmax and the test would measure
luck, not correctness.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.parity.greedy import hf_greedy, tfcli_greedy

if TYPE_CHECKING:
    from transformers import PreTrainedModel

VOCAB, NEW_TOKENS = 96, 12
PROMPTS = [[5, 17, 33, 2, 80], [9, 1, 4]]
DECODER = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
           "intermediate_size": 128, "vocab_size": VOCAB, "max_position_embeddings": 64}


def _gpt2() -> PreTrainedModel:
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_head=4,
                                      n_layer=2, initializer_range=0.2))


def _llama() -> PreTrainedModel:
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(**DECODER, num_key_value_heads=2, initializer_range=0.2))


def _mixtral() -> PreTrainedModel:
    from transformers import MixtralConfig, MixtralForCausalLM
    return MixtralForCausalLM(MixtralConfig(**DECODER, num_key_value_heads=2, num_local_experts=4,
                                            num_experts_per_tok=2, initializer_range=0.2))


def _mistral_window() -> PreTrainedModel:
    """A 4-token sliding window: the prompts and every decode step reach past it."""
    from transformers import MistralConfig, MistralForCausalLM
    return MistralForCausalLM(MistralConfig(**DECODER, num_key_value_heads=2, sliding_window=4,
                                            initializer_range=0.2))


def _t5() -> PreTrainedModel:
    from transformers import T5Config, T5ForConditionalGeneration
    return T5ForConditionalGeneration(T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128,
                                               num_layers=2, num_heads=4, initializer_factor=4.0,
                                               decoder_start_token_id=0, pad_token_id=0))


BUILDERS = {"gpt2": _gpt2, "llama-gqa": _llama, "mixtral": _mixtral,
            "mistral-window": _mistral_window, "t5": _t5}


def _saved(name: str, root: Path) -> tuple[PreTrainedModel, Path]:
    import torch
    torch.manual_seed(0)
    model = BUILDERS[name]()
    model.config._attn_implementation = "eager"
    model.eval()
    path = root / name
    model.save_pretrained(path)
    return model, path


def _hf_greedy(model: PreTrainedModel, prompt: list[int]) -> list[int]:
    return hf_greedy(model, prompt, NEW_TOKENS)


def _tfcli_greedy(path: Path, prompts: list[list[int]], use_cache: bool = True) -> list[list[int]]:
    return tfcli_greedy(path, prompts, NEW_TOKENS, use_cache)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_greedy_tokens_match_transformers(name: str, tmp_path: Path) -> None:
    model, path = _saved(name, tmp_path)
    expected = [_hf_greedy(model, p) for p in PROMPTS]
    # Both prompts in one left-padded batch, then each alone: all equal transformers'.
    assert _tfcli_greedy(path, PROMPTS) == expected
    assert [_tfcli_greedy(path, [p])[0] for p in PROMPTS] == expected
    assert _tfcli_greedy(path, PROMPTS[:1], use_cache=False) == expected[:1]
