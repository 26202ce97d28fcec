"""The small random transformers models the family parity tests compare against, saved as
safetensors the way every test_*_parity.py builds them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def save_random(make: Callable[[], PreTrainedModel], path: Path,
                std: float | None = None) -> PreTrainedModel:
    """`make()` after torch.manual_seed(0), with non-trivial norm weights and biases (initial
    ones / zeros would hide a missing or misplaced one, Gemma's zero norms a missing (1 + w)),
    in eager attention and eval mode, saved to `path`. `std` redraws the matrices (generation:
    logits far from ties, see test_generate_parity.py)."""
    import torch
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
    from tfcli.spec.counts import total_parameters

    spec = spec_from_config_dir(path)
    hf_total = sum(p.numel() for p in model.parameters())
    assert total_parameters(spec) == hf_total
    assert count_parameters(load_weights(path, spec), spec) == hf_total
    stored = stored_for(str(path), spec)
    assert stored is not None and stored.differences == (), stored and stored.verdict


def real_logits(model: PreTrainedModel, path: Path, tokens: np.ndarray, mask: np.ndarray,
                positions: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(tfcli's, transformers') logits of a padded batch on its real positions only: the saved
    checkpoint at `path` loaded through tfcli, `model` run on the same ids, mask and positions."""
    import torch
    from tfcli.checkpoints import load_weights, spec_from_config_dir
    from tfcli.engine.model import ModelInput, forward

    with torch.no_grad():
        want = model(input_ids=torch.from_numpy(tokens), attention_mask=torch.from_numpy(mask),
                     position_ids=None if positions is None else torch.from_numpy(positions)
                     ).logits.numpy()
    spec = spec_from_config_dir(path)
    got = forward(spec, load_weights(path, spec),
                  ModelInput(tokens, attention_mask=mask, positions=positions)).logits
    real = mask.astype(bool)
    return got[real], want[real]


def assert_check_cache(invoke: Callable[..., Any], path: Path, prompt: list[int],
                       new_tokens: int) -> None:
    """`tfcli generate PATH --check-cache` passes: cached and uncached runs give the same tokens."""
    result = invoke("generate", str(path), "--tokens", ",".join(map(str, prompt)),
                    "--max-new-tokens", str(new_tokens), "--check-cache", "-f", "json")
    assert result.exit_code == 0, result.output
    check = json.loads(result.stdout)["check"]
    assert check["ok"] and check["identical_tokens"], check


def assert_trace_execute(invoke: Callable[..., Any], path: Path) -> None:
    """`tfcli trace PATH --execute` runs the engine and matches every analytic row."""
    result = invoke("trace", str(path), "--execute", "-f", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["execute"]["ok"]


def seq2seq_inputs(left: bool, *, vocab: int, batch: int, source: int, target: int,
                   lowest: int) -> dict[str, np.ndarray]:
    """An encoder-decoder batch: sources with row 1 left- or right-padded by 4, targets with
    row 0 right-padded by 2; source ids from `lowest` up (above the family's special ids)."""
    rng = np.random.default_rng(1)
    ids = rng.integers(lowest, vocab, size=(batch, source))
    mask = np.ones((batch, source), dtype=np.int64)
    mask[1, :4] = 0 if left else 1
    mask[1, -4:] = 1 if left else 0
    decoder = rng.integers(0, vocab, size=(batch, target))
    target_mask = np.ones((batch, target), dtype=np.int64)
    target_mask[0, -2:] = 0  # a right-padded target row
    return {"source": ids, "mask": mask, "target": decoder, "target_mask": target_mask}


def seq2seq_real_logits(model: PreTrainedModel, path: Path, given: dict[str, np.ndarray],
                        dtype: type = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(tfcli's, transformers') decoder logits of a seq2seq_inputs batch on its real target
    positions, tfcli's weights loaded in `dtype`."""
    import torch
    from tfcli.checkpoints import load_weights, spec_from_config_dir
    from tfcli.engine.model import ModelInput, forward

    t = {k: torch.from_numpy(v) for k, v in given.items()}
    with torch.no_grad():
        want = model(input_ids=t["source"], attention_mask=t["mask"],
                     decoder_input_ids=t["target"], decoder_attention_mask=t["target_mask"])
    spec = spec_from_config_dir(path)
    got = forward(spec, load_weights(path, spec, dtype=dtype), ModelInput(
        given["source"], attention_mask=given["mask"], decoder_tokens=given["target"],
        decoder_attention_mask=given["target_mask"]))
    real = given["target_mask"].astype(bool)
    return got.logits[real], want.logits.numpy()[real]
