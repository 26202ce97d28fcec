"""What tfcli memory does not model, refused by name rather than planned wrong: the families'
specs (tests/parity/memory_families.py) changed, or asked for what their transformers modules
do not do."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.parity.memory_cases import Models, models_fixture, saved_spec
from tests.parity.memory_families import BY_NAME, Family, cases
from tfcli.analysis.memory.activations import Workload, inference_peak
from tfcli.analysis.memory.plan import MemoryOptions, build_memory_plan
from tfcli.analysis.memory.saved import saved_activations
from tfcli.core.errors import BadInputError

built = models_fixture()


def _deberta(pairs: list[tuple[dict[str, object], str]]) -> list[object]:
    return cases(lambda f: pairs if f.model == "DebertaV2Model" else [])


@pytest.mark.parametrize("family,change,word", _deberta([({"pooler": True}, "heads"),
                                                         ({"norm_placement": "pre"}, "post-norm")]))
def test_what_deberta_does_not_measure_is_refused_by_name(built: Models, family: Family,
                                                          change: dict[str, object],
                                                          word: str) -> None:
    spec = built[family].spec
    with pytest.raises(BadInputError, match=word):
        saved_activations(spec.model_copy(update=change), Workload(2, 64, 4), "eager")
    with pytest.raises(BadInputError, match="LoRA"):
        build_memory_plan(spec, MemoryOptions(train=True, lora_rank=8))


@pytest.mark.parametrize("family", cases(
    lambda f: [()] if f.config.startswith("Deepseek") else []))
def test_the_engine_live_set_of_latent_attention_is_refused_by_name(built: Models,
                                                                   family: Family) -> None:
    with pytest.raises(BadInputError, match="latent-attention"):
        inference_peak(built[family].spec, Workload(1, 64, 4), "engine")


def test_modernbert_without_local_layers_is_refused_by_name(transformers: ModuleType,
                                                           tmp_path: Path) -> None:
    """Every layer global: ModernBertModel still builds the local mask, of a window the spec
    no longer keeps."""
    model = BY_NAME["modernbert"].build(transformers, global_attn_every_n_layers=1)
    spec = saved_spec(model, tmp_path)
    for estimate in (lambda: inference_peak(spec, Workload(2, 64, 4), "sdpa"),
                     lambda: saved_activations(spec, Workload(2, 64, 4), "sdpa")):
        with pytest.raises(BadInputError, match="RoPE encoder without local layers"):
            estimate()


def test_t5_refusals(built: Models) -> None:
    """By name: the engine's live set with the bias, a decoder-only model with it, and UMT5's
    inference (its per-block tables)."""
    spec = built[BY_NAME["t5_encoder"]].spec
    with pytest.raises(BadInputError, match="engine's live set with a relative position bias"):
        inference_peak(spec, Workload(1, 16, 4), "engine")
    decoder = spec.model_copy(update={"family": "decoder"})
    with pytest.raises(BadInputError, match="decoder-only model with a relative position bias"):
        saved_activations(decoder, Workload(1, 16, 4))
    umt5 = built[BY_NAME["umt5"]].spec
    with pytest.raises(BadInputError, match="UMT5"):
        inference_peak(umt5, Workload(1, 16, 4), "sdpa")


def test_albert_recomputed_is_refused_by_name(built: Models) -> None:
    """AlbertModel has no gradient checkpointing: nothing to measure, so nothing planned."""
    run = built[BY_NAME["albert"]]
    assert not run.model("sdpa").supports_gradient_checkpointing
    with pytest.raises(BadInputError, match="ALBERT"):
        saved_activations(run.spec, Workload(2, 64, 4), "sdpa", "full")
