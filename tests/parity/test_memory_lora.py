"""LoRA training's saved activations tfcli plans (tfcli/analysis/memory/saved_lora.py) against
the bytes autograd saves when only rank-8 adapters train (torch_memory.with_lora, as PEFT's
lora.Linear), within the row's saved_share (10%), on the families of
tests/parity/memory_families.py with LoRA sites: q and v, or every target."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.parity.memory_cases import ids, random_model, within
from tests.parity.memory_families import Family, cases
from tfcli.analysis.memory.activations import Workload
from tfcli.analysis.memory.saved_lora import lora_saved_activations

RANK = 8


@pytest.mark.parametrize("family,attention,every", cases(lambda f: f.lora_cases))
def test_lora_saved_activations(transformers: ModuleType, family: Family, attention: str,
                                every: bool, tmp_path: Path) -> None:
    """Only the adapters train: a frozen linear saves nothing, RMS norm no normed values."""
    from tests.parity.torch_memory import saved_bytes, with_lora

    assert family.lora is not None
    model, spec = random_model(lambda: family.build(transformers), tmp_path)
    targets = tuple(family.lora.modules) if every else ("q", "v")
    with_lora(model, family.lora.blocks, family.lora.modules, targets, RANK)
    family.run_as(model, attention).train()
    tokens = ids(2, 64)
    want = saved_bytes(model, family.run(model, tokens), tokens)
    got = lora_saved_activations(spec, Workload(2, 64, 4), attention, targets, RANK).total
    assert within(got, want, family.saved_share), (got, want)
