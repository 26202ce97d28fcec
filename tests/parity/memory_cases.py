"""What the memory parity tests (tests/parity/test_memory_torch*.py) share: the random model saved
and read back as tfcli reads a config dir, gradient checkpointing switched on for a block, the
tolerance check, and the plan's figure paired with torch's measurement (torch_memory.py) for one
workload. Only the measuring: each test keeps its own models, sizes and tolerance."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch
import transformers as tf

from tests.parity.torch_memory import forward_peak, saved_bytes
from tfcli.analysis.memory.activations import Workload, inference_peak
from tfcli.analysis.memory.saved import saved_activations
from tfcli.checkpoints import spec_from_config_dir
from tfcli.spec.model import Spec

VOCAB = 200
SIZES = [(2, 64), (1, 256)]
Run = Callable[[tf.PreTrainedModel, torch.Tensor], Callable[[], object]]


def ids(batch: int, seq_len: int) -> torch.Tensor:
    """(batch, seq_len) token ids below VOCAB, the same on every call (seeded generator)."""
    return torch.randint(0, VOCAB, (batch, seq_len), generator=torch.Generator().manual_seed(1))


def saved_spec(model: tf.PreTrainedModel, path: Path) -> Spec:
    """The spec tfcli reads from `model`'s config.json once save_pretrained wrote it to `path`."""
    model.save_pretrained(path)
    return spec_from_config_dir(path)


def random_model(make: Callable[[], tf.PreTrainedModel],
                 path: Path) -> tuple[tf.PreTrainedModel, Spec]:
    """(the model `make` builds after seeding torch with 0, its spec saved to `path`)."""
    torch.manual_seed(0)
    model = make()
    return model, saved_spec(model, path)


def random_models(models: dict[str, Callable[[], tf.PreTrainedModel]], name: str) -> Any:
    """A module-scoped fixture `name` over `models`' keys: (the random model, the spec tfcli reads
    from its saved config.json). Assign it to `name` in the test module, where pytest finds it."""

    @pytest.fixture(scope="module", params=list(models), name=name)
    def fixture(request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> tuple[tf.PreTrainedModel, Spec]:
        return random_model(models[request.param], tmp_path_factory.mktemp(request.param))
    return fixture


@contextmanager
def checkpointing(model: tf.PreTrainedModel, on: bool) -> Iterator[tf.PreTrainedModel]:
    """Gradient checkpointing (non-reentrant: the plan's --recompute full) on inside the block
    when `on`, and off after it either way: module fixtures share the model with later tests."""
    if on:
        model.activation_checkpointing_enable(
            activation_checkpointing_kwargs={"use_reentrant": False})
    try:
        yield model
    finally:
        model.activation_checkpointing_disable()


def bfloat16_copy(model: tf.PreTrainedModel, attention: str) -> tf.PreTrainedModel:
    """A bfloat16 copy of `model` running `attention` (the float32 model stays as it was)."""
    half = copy.deepcopy(model).to(torch.bfloat16)
    half.set_attn_implementation(attention)
    return half


def within(got: int, want: int, share: float) -> bool:
    """`got` is within `share` of the measured `want`."""
    return abs(got - want) <= share * want


def lm_loss(model: tf.PreTrainedModel, tokens: torch.Tensor) -> Callable[[], object]:
    """A causal LM's training forward: the loss on its own input, no KV cache."""
    return lambda: model(input_ids=tokens, labels=tokens, use_cache=False).loss


def hidden_loss(model: tf.PreTrainedModel, tokens: torch.Tensor) -> Callable[[], torch.Tensor]:
    """A bare model's training forward: a loss that reads every last hidden state (its reader
    saves it, as a head's input would be; the output alone is saved by nothing)."""
    return lambda: model(input_ids=tokens).last_hidden_state.pow(2).mean()


def peak_pair(model: tf.PreTrainedModel, spec: Spec, work: Workload, attention: str,
              fused: frozenset[str] = frozenset(), *, tokens: torch.Tensor | None = None,
              **forward: Any) -> tuple[int, int]:
    """(the plan's inference peak, the measured one) of model(input_ids=tokens, **forward),
    tokens `ids(work.batch, work.seq_len)` unless given."""
    tokens = ids(work.batch, work.seq_len) if tokens is None else tokens
    want = forward_peak(model, tokens, **forward)
    return inference_peak(spec, work, attention, fused).bytes, want


def saved_pair(model: tf.PreTrainedModel, spec: Spec, work: Workload, run: Run, attention: str,
               recompute: str = "none", *, fused: frozenset[str] = frozenset(),
               dropout: bool = False, tokens: torch.Tensor | None = None) -> tuple[int, int]:
    """(the plan's saved activations, the bytes autograd saves while run(model, tokens)()
    builds the graph), tokens `ids(work.batch, work.seq_len)` unless given."""
    tokens = ids(work.batch, work.seq_len) if tokens is None else tokens
    want = saved_bytes(model, run(model, tokens), tokens)
    got = saved_activations(spec, work, attention, recompute, dropout=dropout, fused=fused).total
    return got, want
