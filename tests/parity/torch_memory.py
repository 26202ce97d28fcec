"""What torch really holds: the peak of live tensor storages during a forward pass (torch CPU has
no allocator statistics), and the bytes autograd saves for backward. Both count each storage
once and leave out the storages that existed before (parameters, buffers, the inputs). Also the
LoRA adapters the LoRA check trains. Imported inside the tests (memory_cases.py), never when
they are collected: its classes subclass torch's."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


def storage_key(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def known_storages(model: torch.nn.Module, *tensors: torch.Tensor) -> set[int]:
    """The storages a measurement leaves out: the model's parameters and buffers, the inputs."""
    held: Iterable[torch.Tensor] = (*model.parameters(), *model.buffers(), *tensors)
    return {storage_key(t) for t in held}


class LiveStorages(TorchDispatchMode):
    """Tracks every storage an op returns until the last tensor on it is freed; `peak` is the
    most bytes alive at once. Buffers an aten kernel allocates and frees inside itself are not
    seen (sdpa's per-thread blocks): the figure is the live set between ops."""

    def __init__(self, known: set[int]) -> None:
        super().__init__()
        self.known, self.owners, self.sizes = known, {}, {}
        self.now = self.peak = 0

    def _drop(self, key: int, tensor_id: int) -> None:
        refs = self.owners.get(key)
        if refs is None:
            return
        refs.pop(tensor_id, None)
        if not refs:
            del self.owners[key]
            self.now -= self.sizes.pop(key)

    def _track(self, t: torch.Tensor) -> None:
        """Owners by tensor id (weakrefs to tensors compare their referents with ==, which is
        elementwise: an in-place op returning a tensor already tracked must not compare)."""
        key = storage_key(t)
        if key == 0 or key in self.known:
            return
        if key not in self.owners:
            self.owners[key], self.sizes[key] = {}, t.untyped_storage().nbytes()
            self.now += self.sizes[key]
        if id(t) not in self.owners[key]:
            self.owners[key][id(t)] = weakref.ref(t, lambda _, k=key, i=id(t): self._drop(k, i))

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self._track(t)
        self.peak = max(self.peak, self.now)
        return out


def forward_peak(model: torch.nn.Module, ids: torch.Tensor, **kwargs: Any) -> int:
    """Peak live bytes of model(input_ids=ids) under no_grad, the output included."""
    with torch.no_grad():
        mode = LiveStorages(known_storages(model, ids))
        with mode:
            out = model(input_ids=ids, **kwargs)
        del out
    return mode.peak


def saved_bytes(model: torch.nn.Module, run: Callable[[], Any], *inputs: torch.Tensor) -> int:
    """Bytes autograd keeps for backward while `run()` builds the graph: every tensor the
    saved_tensors_hooks pack hook sees, its storage counted once; parameters, buffers and the
    inputs left out (they exist without training)."""
    known = known_storages(model, *inputs)
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        key = storage_key(t)
        if key not in known:
            seen.setdefault(key, t.untyped_storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = run()
    del out
    return sum(seen.values())


class LoRA(torch.nn.Module):
    """A frozen linear plus a trainable rank-r update B(A(x)), as PEFT's lora.Linear (no
    dropout)."""

    def __init__(self, base: torch.nn.Linear, rank: int) -> None:
        super().__init__()
        self.base = base
        self.A = torch.nn.Linear(base.in_features, rank, bias=False)
        self.B = torch.nn.Linear(rank, base.out_features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.B(self.A(x)) * 2.0


def _attribute(root: object, path: str) -> Any:
    for part in path.split("."):
        root = getattr(root, part)
    return root


def with_lora(model: torch.nn.Module, blocks: str, modules: Mapping[str, str],
              targets: tuple[str, ...], rank: int) -> None:
    """Every weight frozen, then each block's `targets` linears (`modules[target]`, a path in
    the block; `blocks` the path to the blocks) wrapped in a rank-`rank` LoRA."""
    for p in model.parameters():
        p.requires_grad_(False)
    for block in _attribute(model, blocks):
        for target in targets:
            parent_path, _, leaf = modules[target].rpartition(".")
            parent = _attribute(block, parent_path) if parent_path else block
            setattr(parent, leaf, LoRA(getattr(parent, leaf), rank))
