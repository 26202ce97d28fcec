"""tfcli memory's ModernBERT figures (tfcli/analysis/memory/layouts/modernbert.py) against what
torch really holds in small random ModernBertModel / ModernBertForMaskedLM instances: global and
local (sliding-window) layers at a length that materialises the local mask, eager and sdpa.
The inference peak (live tensor storages, op by op) within 15% and the bytes autograd saves
(saved_tensors_hooks), with and without gradient checkpointing, within 10%
(tests/parity/torch_memory.py measures; docs/memory.md quotes the sizes measured by hand).
One size, (2, 64), in CI."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import transformers as tf

from tests.parity.memory_cases import (bfloat16_copy, checkpointing, hidden_loss, ids, peak_pair,
                                       random_models, saved_pair, saved_spec, within)
from tfcli.analysis.memory.activations import Workload, inference_peak
from tfcli.analysis.memory.saved import saved_activations
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

SIZE = (2, 64)  # seq_len 64 reaches local_attention // 2: the local mask is built


def _config(**changes: object) -> tf.ModernBertConfig:
    # layers global, local, local (global_attn_every_n_layers 3), window 128; vocab 2048 so that
    # the masked-LM head's logits are its peak
    return tf.ModernBertConfig(**({
        "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 3,
        "intermediate_size": 128, "vocab_size": 2048, "pad_token_id": 0, "bos_token_id": 0,
        "eos_token_id": 0, "cls_token_id": 0, "sep_token_id": 0} | changes))


MODELS: dict[str, Callable[[], tf.PreTrainedModel]] = {
    "model": lambda: tf.ModernBertModel(_config()),
    "masked_lm": lambda: tf.ModernBertForMaskedLM(_config()),
}
modernbert = random_models(MODELS, "modernbert")
TOKENS = ids(*SIZE) * 10  # spread over the 2048 ids (ids draws below 200)


def _training_run(model: tf.PreTrainedModel, ids: torch.Tensor) -> Callable[[], torch.Tensor]:
    """The masked-LM loss, or a loss on the bare model's last hidden state (whatever reads it
    saves it: the plan's head input)."""
    if isinstance(model, tf.ModernBertForMaskedLM):
        return lambda: model(input_ids=ids, labels=ids).loss
    return hidden_loss(model, ids)


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_inference_peak(modernbert: tuple[tf.PreTrainedModel, Spec], attention: str) -> None:
    model, spec = modernbert
    model.set_attn_implementation(attention)
    assert model.config._attn_implementation == attention
    model.eval()
    got, want = peak_pair(model, spec, Workload(*SIZE, 4), attention, tokens=TOKENS)
    assert within(got, want, 0.15), (got, want)


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_inference_peak_in_bfloat16(modernbert: tuple[tf.PreTrainedModel, Spec],
                                    attention: str) -> None:
    """16 bits: RoPE in float32 (q and k copies), eager's float32 softmax."""
    model, spec = modernbert
    half = bfloat16_copy(model, attention).eval()
    got, want = peak_pair(half, spec, Workload(*SIZE, 2), attention, tokens=TOKENS)
    assert within(got, want, 0.15), (got, want)


@pytest.mark.parametrize("attention,recompute", [("eager", "none"), ("sdpa", "none"),
                                                 ("sdpa", "full")])
def test_saved_activations(modernbert: tuple[tf.PreTrainedModel, Spec], attention: str,
                           recompute: str) -> None:
    model, spec = modernbert
    model.set_attn_implementation(attention)
    model.train()
    with checkpointing(model, recompute == "full"):
        got, want = saved_pair(model, spec, Workload(*SIZE, 4), _training_run, attention,
                               recompute, tokens=TOKENS)
        assert within(got, want, 0.10), (got, want)


def test_saved_activations_in_bfloat16(modernbert: tuple[tf.PreTrainedModel, Spec]) -> None:
    model, spec = modernbert
    half = bfloat16_copy(model, "sdpa").train()
    got, want = saved_pair(half, spec, Workload(*SIZE, 2), _training_run, "sdpa", tokens=TOKENS)
    assert within(got, want, 0.10), (got, want)


def test_without_local_layers_is_refused_by_name(tmp_path: Path) -> None:
    """Every layer global: ModernBertModel still builds the local mask, of a window the spec
    no longer keeps."""
    spec = saved_spec(tf.ModernBertModel(_config(global_attn_every_n_layers=1)), tmp_path)
    for estimate in (lambda: inference_peak(spec, Workload(*SIZE, 4), "sdpa"),
                     lambda: saved_activations(spec, Workload(*SIZE, 4), "sdpa")):
        with pytest.raises(BadInputError, match="RoPE encoder without local layers"):
            estimate()
