"""The small random transformers models the family parity tests compare against, saved as
safetensors the way every test_*_parity.py builds them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from transformers import PreTrainedModel


def save_random(make: Callable[[], PreTrainedModel], path: Path,
                std: float | None = None) -> PreTrainedModel:
    """`make()` after torch.manual_seed(0), with non-trivial norm weights and biases (initial
    ones / zeros would hide a missing or misplaced one, Gemma's zero norms a missing (1 + w)),
    in eager attention and eval mode, saved to `path`. `std` redraws the matrices (generation:
    logits far from ties, see test_generate_parity.py)."""
    torch.manual_seed(0)
    model = make()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(torch.randn_like(p) * 0.1)
            elif std is not None:
                p.normal_(0.0, std)
    model.set_attn_implementation("eager")
    model.eval()
    model.save_pretrained(path, safe_serialization=True)
    return model
