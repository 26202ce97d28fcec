"""The optimizer state, gradients, weights and an optimizer step's own temporaries tfcli plans,
to the byte, against torch's AdamW, Adam and SGD (foreach, as on CUDA) on the families of
tests/parity/memory_families.py marked `optimizer`."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from tests.parity.memory_cases import Models, ids, models_fixture
from tests.parity.memory_families import Family, cases
from tfcli.analysis.memory.plan import (MemoryOptions, build_memory_plan, optimizer_bytes,
                                        step_scratch_bytes)

built = models_fixture()


def _state_bytes(torch: ModuleType, optimizer: Any) -> int:
    return sum(v.nbytes for state in optimizer.state.values() for v in state.values()
               if isinstance(v, torch.Tensor))


def _backward(out: Any) -> None:
    out.sum().backward() if out.dim() else out.backward()


@pytest.mark.parametrize("family,optimizer", cases(
    lambda f: ("adamw", "adam", "sgd") if f.optimizer else ()))
def test_optimizer_and_gradient_bytes_are_exact(torch: ModuleType, built: Models, family: Family,
                                                optimizer: str) -> None:
    from tests.parity.torch_memory import LiveStorages, storage_key

    run = built[family]
    model, spec = run.models[""], run.spec
    params = list(model.parameters())
    make = {"adamw": lambda: torch.optim.AdamW(params, lr=1e-3, foreach=True),
            "adam": lambda: torch.optim.Adam(params, lr=1e-3, foreach=True),
            "sgd": lambda: torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=True)}[optimizer]
    opt = make()
    model.train()
    tokens = ids(1, 16)
    _backward(family.run(model, tokens)())
    opt.step()
    plan = build_memory_plan(spec, MemoryOptions(batch=1, seq_len=16, dtype="float32", train=True,
                                                 optimizer=optimizer, param_tensors=len(params)))
    assert plan.part("optimizer state") == _state_bytes(torch, opt)
    assert plan.part("gradients") == sum(p.grad.nbytes for p in params if p.grad is not None)
    assert plan.part("weights") == sum(p.nbytes for p in params)
    assert plan.part("master weights") == 0  # float32 training: the weights are the master
    assert optimizer_bytes(optimizer, sum(p.numel() for p in params), len(params)) == \
        _state_bytes(torch, opt)
    # the next step's own temporaries (foreach, as on CUDA): every storage but its new ones known
    _backward(family.run(model, tokens)())
    held = [*params, *(p.grad for p in params if p.grad is not None),
            *(v for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor))]
    mode = LiveStorages({storage_key(t) for t in held})
    with mode:
        opt.step()
    assert mode.peak == step_scratch_bytes(optimizer, sum(p.numel() for p in params))
    opt.zero_grad(set_to_none=True)
