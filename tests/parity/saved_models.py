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


def assert_counts_match(model: PreTrainedModel, path: Path) -> None:
    """One saved checkpoint counted four ways: transformers' parameters (tied ones once), the
    spec imported from its config.json, the weights tfcli loads, and the safetensors headers
    `tfcli params` reads (tensor by tensor: the verdict must be `equal`)."""
    from tfcli.analysis.stored import stored_for
    from tfcli.checkpoints import load_weights, spec_from_config_dir
    from tfcli.engine.weights import count_parameters
    from tfcli.params import total_parameters

    spec = spec_from_config_dir(path)
    hf_total = sum(p.numel() for p in model.parameters())
    assert total_parameters(spec) == hf_total
    assert count_parameters(load_weights(path, spec)) == hf_total
    stored = stored_for(str(path), spec)
    assert stored is not None and stored.differences == (), stored and stored.verdict
