"""Families transformers runs eagerly whatever attention is asked (memory_families.py rows with
attention "eager"): tfcli plans their sdpa as that eager attention, with a note saying so."""

from __future__ import annotations

import copy

import pytest

from tests.parity.memory_cases import Models, models_fixture
from tests.parity.memory_families import BY_NAME, Family, cases
from tfcli.analysis.memory.activations import Workload, inference_peak
from tfcli.analysis.memory.plan import MemoryOptions, build_memory_plan
from tfcli.analysis.memory.saved import saved_activations

built = models_fixture()


@pytest.mark.parametrize("family", cases(lambda f: [()] if f.model == "DebertaV2Model" else []))
def test_deberta_sdpa_is_planned_as_the_eager_attention_transformers_keeps(
        built: Models, family: Family) -> None:
    """DebertaV2 is not written against the attention interface: asked for sdpa it stays
    eager, so the sdpa plan is the eager one, with a note saying so."""
    run = built[family]
    asked = copy.deepcopy(run.model("eager"))
    asked.set_attn_implementation("sdpa")
    assert asked.config._attn_implementation == "eager"
    work = Workload(2, 64, 4)
    assert inference_peak(run.spec, work, "sdpa") == inference_peak(run.spec, work, "eager")
    assert saved_activations(run.spec, work, "sdpa") == saved_activations(run.spec, work, "eager")
    plan = build_memory_plan(run.spec, MemoryOptions(batch=2, seq_len=64, dtype="float32"))
    assert any("only eager attention" in note for note in plan.notes)


def test_gemma2_sdpa_planned_as_eager(built: Models) -> None:
    """Gemma 2 has no sdpa in transformers (set_attn_implementation('sdpa') raises)."""
    spec = built[BY_NAME["gemma2"]].spec
    plan = build_memory_plan(spec, MemoryOptions(batch=1, seq_len=256, attention="sdpa"))
    assert any("Gemma 2" in note for note in plan.notes)
    work = Workload(1, 256, 4)
    assert inference_peak(spec, work, "sdpa") == inference_peak(spec, work, "eager")
    assert saved_activations(spec, work, "sdpa") == saved_activations(spec, work, "eager")
