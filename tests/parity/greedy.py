"""Greedy generation on both sides, for the parity tests: transformers' `generate(do_sample=False)`
and tfcli's engine `generate`, each giving the new token ids only."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tfcli.checkpoints import load_checkpoint
from tfcli.engine.generate import GenerationRequest, generate

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def hf_greedy(model: PreTrainedModel, prompt: list[int], new_tokens: int) -> list[int]:
    """Exactly `new_tokens` greedy ids after `prompt` (no EOS stop; T5's start token dropped)."""
    import torch
    ids = torch.tensor([prompt])
    with torch.inference_mode():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                             min_new_tokens=new_tokens, do_sample=False, pad_token_id=0,
                             eos_token_id=None)
    if model.config.is_encoder_decoder:
        return out[0].tolist()[1:]  # the decoder's output, less its start token
    return out[0, len(prompt):].tolist()


def tfcli_greedy(path: Path, prompts: list[list[int]], new_tokens: int,
                 use_cache: bool = True) -> list[list[int]]:
    """(B, new_tokens) greedy ids from the checkpoint at `path`, through the engine."""
    spec, weights = load_checkpoint(path)
    steps = list(generate(spec, weights, GenerationRequest(prompts, new_tokens), use_cache=use_cache))
    return np.stack([s.tokens for s in steps], axis=1).tolist()
