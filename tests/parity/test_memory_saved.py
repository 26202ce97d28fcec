"""The activations tfcli plans a training step to save against the bytes autograd saves for
backward (saved_tensors_hooks, each storage once: torch_memory.saved_bytes) for every family of
tests/parity/memory_families.py, within the row's saved_share (10%): each attention and
recompute it lists (full: non-reentrant gradient checkpointing) at each of its sizes, in
bfloat16, and with the family's own dropout on."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.parity.memory_cases import (Models, checkpointing, fused, models_fixture, random_model,
                                       saved_pair, within)
from tests.parity.memory_families import Family, cases
from tfcli.analysis.memory.activations import Workload

built = models_fixture()


@pytest.mark.parametrize("family,attention,recompute", cases(lambda f: f.saved))
def test_saved_activations(built: Models, family: Family, attention: str,
                           recompute: str) -> None:
    run = built[family]
    model = run.model(attention).train()
    with checkpointing(model, recompute == "full"):
        for batch, seq_len in family.saved_sizes:
            got, want = saved_pair(model, run.spec, Workload(batch, seq_len, 4), family.run,
                                   attention, recompute, fused=fused(model),
                                   tokens=family.tokens(batch, seq_len))
            assert within(got, want, family.saved_share), (batch, seq_len, got, want)


@pytest.mark.parametrize("family,attention", cases(lambda f: f.half_saved))
def test_saved_activations_in_bfloat16(built: Models, family: Family, attention: str) -> None:
    """Mixed precision's activations: 2-byte tensors beside the float32 copies each family
    keeps (memory_families.py says which)."""
    run = built[family]
    half = run.half(attention).train()
    got, want = saved_pair(half, run.spec, Workload(2, 64, 2), family.run, attention,
                           fused=fused(half), tokens=family.tokens(2, 64))
    assert within(got, want, family.saved_share), (got, want)


@pytest.mark.parametrize("family,attention,recompute", cases(lambda f: f.dropout_saved))
def test_saved_activations_with_dropout(transformers: ModuleType, family: Family, attention: str,
                                        recompute: str, tmp_path: Path) -> None:
    """Live dropouts save their noise (and eager attention the dropped probabilities)."""
    model, spec = random_model(lambda: family.build(transformers, **family.dropout), tmp_path)
    family.run_as(model, attention).train()
    with checkpointing(model, recompute == "full"):
        got, want = saved_pair(model, spec, Workload(2, 64, 4), family.run, attention, recompute,
                               fused=fused(model), dropout=True, tokens=family.tokens(2, 64))
    assert within(got, want, family.saved_share), (got, want)
