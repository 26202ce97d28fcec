"""The inference peak tfcli plans against what torch really holds for every family of
tests/parity/memory_families.py: the live tensor storages between ops during one forward pass
(torch_memory.forward_peak), within the row's peak_share (15%), at each of its sizes and
attentions, in float32 and (half_peak) bfloat16."""

from __future__ import annotations

import pytest

from tests.parity.memory_cases import Models, fused, models_fixture, peak_pair, within
from tests.parity.memory_families import Family, cases
from tfcli.analysis.memory.activations import Workload

built = models_fixture()


@pytest.mark.parametrize("family,attention", cases(lambda f: f.peak))
def test_inference_peak(built: Models, family: Family, attention: str) -> None:
    run = built[family]
    model = run.model(attention).eval()
    for batch, seq_len in family.peak_sizes:
        tokens = family.tokens(batch, seq_len)
        got, want = peak_pair(model, run.spec, Workload(batch, seq_len, 4), attention,
                              fused(model), tokens=tokens, **family.forward(tokens))
        assert within(got, want, family.peak_share), (batch, seq_len, got, want)


@pytest.mark.parametrize("family,attention", cases(lambda f: f.half_peak))
def test_inference_peak_in_bfloat16(built: Models, family: Family, attention: str) -> None:
    """16-bit tensors, and the float32 ones each family keeps (memory_families.py says which)."""
    run = built[family]
    half = run.half(attention).eval()
    batch, seq_len = family.half_peak_size
    tokens = family.tokens(batch, seq_len)
    got, want = peak_pair(half, run.spec, Workload(batch, seq_len, 2), attention, fused(half),
                          tokens=tokens, **family.forward(tokens))
    assert within(got, want, family.peak_share), (got, want)
