"""What the memory parity tests (tests/parity/test_memory_*.py) share: the random model saved
and read back as tfcli reads a config dir (and `built`, a module's models of the table rows in
memory_families.py), the training and inference forwards a row names, gradient checkpointing
switched on for a block, the tolerance check, and the plan's figure paired with torch's
measurement (torch_memory.py) for one workload. torch, transformers and torch_memory load
inside these functions and fixtures, never when a test module is collected."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

from tfcli.analysis.memory.activations import FUSED_MODULES, Workload, inference_peak
from tfcli.analysis.memory.saved import saved_activations
from tfcli.checkpoints import spec_from_config_dir
from tfcli.spec.model import Spec

if TYPE_CHECKING:
    from torch import Tensor
    from transformers import PreTrainedModel

    from tests.parity.memory_families import Family

VOCAB = 200
SIZES: tuple[tuple[int, int], ...] = ((2, 64), (1, 256))
# a training forward: (model, tokens) -> the closure whose graph autograd's saved tensors measure
Run = Callable[["PreTrainedModel", "Tensor"], Callable[[], object]]
# inference's keyword arguments beside input_ids, given the tokens
Forward = Callable[["Tensor"], dict[str, object]]


def ids(batch: int, seq_len: int) -> Tensor:
    """(batch, seq_len) token ids below VOCAB, the same on every call (seeded generator)."""
    import torch

    return torch.randint(0, VOCAB, (batch, seq_len), generator=torch.Generator().manual_seed(1))


def saved_spec(model: PreTrainedModel, path: Path) -> Spec:
    """The spec tfcli reads from `model`'s config.json once save_pretrained wrote it to `path`."""
    model.save_pretrained(path)
    return spec_from_config_dir(path)


def random_model(make: Callable[[], PreTrainedModel], path: Path) -> tuple[PreTrainedModel, Spec]:
    """(the model `make` builds after seeding torch with 0, its spec saved to `path`)."""
    import torch

    torch.manual_seed(0)
    model = make()
    return model, saved_spec(model, path)


def fused(model: PreTrainedModel) -> frozenset[str]:
    """The projections this model's modules fuse (Phi-3 q|k|v and gate|up, GPT-NeoX q|k|v,
    Falcon its own query_key_value): none for the others."""
    return FUSED_MODULES.get(model.config.model_type, frozenset())


@contextmanager
def checkpointing(model: PreTrainedModel, on: bool) -> Iterator[PreTrainedModel]:
    """Gradient checkpointing (non-reentrant: the plan's --recompute full) on inside the block
    when `on`, and off after it either way: module fixtures share the model with later tests."""
    if on:
        model.activation_checkpointing_enable(
            activation_checkpointing_kwargs={"use_reentrant": False})
    try:
        yield model
    finally:
        model.activation_checkpointing_disable()


def within(got: int, want: int, share: float) -> bool:
    """`got` is within `share` of the measured `want`."""
    return abs(got - want) <= share * want


def lm_loss(model: PreTrainedModel, tokens: Tensor) -> Callable[[], object]:
    """A causal (or seq2seq) LM's training forward: the loss on its own input, no KV cache."""
    return lambda: model(input_ids=tokens, labels=tokens, use_cache=False).loss


def labelled_loss(model: PreTrainedModel, tokens: Tensor) -> Callable[[], object]:
    """A masked LM's training forward: the loss on its own input (it has no KV cache)."""
    return lambda: model(input_ids=tokens, labels=tokens).loss


def hidden_loss(model: PreTrainedModel, tokens: Tensor) -> Callable[[], object]:
    """A bare model's training forward: a loss that reads every last hidden state (its reader
    saves it, as a head's input would be; the output alone is saved by nothing)."""
    return lambda: model(input_ids=tokens).last_hidden_state.pow(2).mean()


def pooled(model: PreTrainedModel, tokens: Tensor) -> Callable[[], object]:
    """A bare model with a pooler: its pooled output (the pooler reads the last hidden state)."""
    return lambda: model(input_ids=tokens).pooler_output


def last_hidden(model: PreTrainedModel, tokens: Tensor) -> Callable[[], object]:
    """A bare model's last hidden state itself, read by nothing."""
    return lambda: model(input_ids=tokens).last_hidden_state


def no_cache(tokens: Tensor) -> dict[str, object]:
    """A decoder's inference without a KV cache."""
    return {"use_cache": False}


def bare(tokens: Tensor) -> dict[str, object]:
    """An encoder's inference: nothing beside input_ids."""
    return {}


def seq2seq(tokens: Tensor) -> dict[str, object]:
    """An encoder-decoder's: decoder targets as long as the input, no KV cache."""
    return {"decoder_input_ids": tokens, "use_cache": False}


def peak_pair(model: PreTrainedModel, spec: Spec, work: Workload, attention: str,
              fused: frozenset[str] = frozenset(), *, tokens: Tensor | None = None,
              **forward: Any) -> tuple[int, int]:
    """(the plan's inference peak, the measured one) of model(input_ids=tokens, **forward),
    tokens `ids(work.batch, work.seq_len)` unless given."""
    from tests.parity.torch_memory import forward_peak

    tokens = ids(work.batch, work.seq_len) if tokens is None else tokens
    want = forward_peak(model, tokens, **forward)
    return inference_peak(spec, work, attention, fused).bytes, want


def saved_pair(model: PreTrainedModel, spec: Spec, work: Workload, run: Run, attention: str,
               recompute: str = "none", *, fused: frozenset[str] = frozenset(),
               dropout: bool = False, tokens: Tensor | None = None) -> tuple[int, int]:
    """(the plan's saved activations, the bytes autograd saves while run(model, tokens)()
    builds the graph), tokens `ids(work.batch, work.seq_len)` unless given."""
    from tests.parity.torch_memory import saved_bytes

    tokens = ids(work.batch, work.seq_len) if tokens is None else tokens
    want = saved_bytes(model, run(model, tokens), tokens)
    got = saved_activations(spec, work, attention, recompute, dropout=dropout, fused=fused).total
    return got, want


@dataclass
class Built:
    """A row's random model (one per attention where it is built with one) and the spec tfcli
    reads from its saved config.json."""

    family: Family
    spec: Spec
    models: dict[str, PreTrainedModel]  # by attention for "built" rows, else under ""

    def model(self, attention: str) -> PreTrainedModel:
        """The model running `attention` (checked), shared by the module's tests."""
        return self.family.run_as(
            self.models[attention if self.family.attention == "built" else ""], attention)

    def half(self, attention: str) -> PreTrainedModel:
        """A bfloat16 copy of the model running `attention` (the float32 one stays as it was)."""
        import torch

        return self.family.run_as(copy.deepcopy(self.model(attention)).to(torch.bfloat16),
                                  attention)


class Models:
    """Each row built on first use (seeded: the same weights in every module), kept."""

    def __init__(self, tf: ModuleType, root: Path) -> None:
        self.tf, self.root = tf, root
        self.kept: dict[str, Built] = {}

    def __getitem__(self, family: Family) -> Built:
        if family.name not in self.kept:
            self.kept[family.name] = self._build(family)
        return self.kept[family.name]

    def _build(self, family: Family) -> Built:
        if family.attention != "built":
            model, spec = random_model(lambda: family.build(self.tf), self.root / family.name)
            return Built(family, spec, {"": model})
        pairs = {attention: random_model(lambda a=attention: family.build(
                     self.tf, attn_implementation=a), self.root / family.name / attention)
                 for attention in ("eager", "sdpa")}
        return Built(family, pairs["sdpa"][1], {a: model for a, (model, _) in pairs.items()})


def models_fixture() -> Any:
    """The module-scoped fixture `built` (Models): assign it to `built` in the test module,
    where pytest finds it; a module's tests share its models, built from scratch per module."""

    @pytest.fixture(scope="module", name="built")
    def fixture(transformers: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Models:
        return Models(transformers, tmp_path_factory.mktemp("families"))
    return fixture
