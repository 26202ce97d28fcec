"""Fused projections (activations.FUSED_MODULES by config.json model_type) reaching the plan:
MemoryOptions.fused in both estimates (Phi-3), Falcon's own query_key_value layout, and
`tfcli memory DIR` picking falcon_qkv from a Falcon directory. The families' own figures with
their fusions: test_memory_peak.py and test_memory_saved.py."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.cli.guarded import run_in_memory
from tests.parity.memory_cases import (Models, ids, models_fixture, random_model, saved_spec,
                                       within)
from tests.parity.memory_families import BY_NAME, Family, cases
from tfcli.analysis.memory.activations import FUSED_MODULES, Workload, check_fused, inference_peak
from tfcli.analysis.memory.plan import MemoryOptions, build_memory_plan
from tfcli.analysis.memory.saved import saved_activations
from tfcli.core.errors import BadInputError

built = models_fixture()


@pytest.mark.parametrize("train", [False, True])
def test_plan_takes_the_fused_projections(transformers: ModuleType, train: bool,
                                          tmp_path: Path) -> None:
    """MemoryOptions.fused reaches both estimates: Phi-3's sdpa figures grow by what its fused
    projections keep alive (measured in test_memory_peak.py, test_memory_saved.py)."""
    spec = saved_spec(BY_NAME["phi3"].build(transformers), tmp_path)
    fused = FUSED_MODULES["phi3"]

    def activations(fused: frozenset[str]) -> int:
        return build_memory_plan(spec, MemoryOptions(batch=2, seq_len=64, dtype="float32",
                                                     train=train, fused=tuple(sorted(fused)))
                                 ).part("activations")
    work = Workload(2, 64, 4)
    want = saved_activations(spec, work, fused=fused).total if train else \
        inference_peak(spec, work, "sdpa", fused).bytes
    assert activations(fused) == want
    assert activations(frozenset()) < want


@pytest.mark.parametrize("family", cases(lambda f: [()] if f.config == "FalconConfig" else []))
def test_falcon_qkv_is_one_layout_of_a_falcon_shaped_spec(built: Models, family: Family) -> None:
    spec = built[family].spec
    assert FUSED_MODULES["falcon"] == {"falcon_qkv"}
    with pytest.raises(BadInputError, match="two layouts"):
        check_fused(frozenset({"qkv", "falcon_qkv"}))
    gated = spec.model_copy(update={"activation": "swiglu"})
    with pytest.raises(BadInputError, match="not Falcon-shaped"):
        inference_peak(gated, Workload(1, 16, 4), "sdpa", frozenset({"falcon_qkv"}))


def test_memory_cli_plans_a_falcon_directory(transformers: ModuleType, tmp_path: Path) -> None:
    """`tfcli memory DIR` reads model_type falcon from config.json and plans its own modules:
    the measured peak, where the generic layers' figure was 0.28 of it (sdpa, (1, 256))."""
    from tests.parity.torch_memory import forward_peak

    falcon = BY_NAME["falcon-7b"]
    model, _ = random_model(lambda: falcon.build(transformers, attn_implementation="sdpa"),
                            tmp_path)
    model.eval()
    code, out, err = run_in_memory("memory", str(tmp_path), "--batch", "1", "--seq-len", "256",
                                   "--dtype", "float32", "--attention", "sdpa", "-f", "json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["options"]["fused"] == ["falcon_qkv"]
    got = {p["name"]: p["bytes"] for p in plan["parts"]}["activations"]
    want = forward_peak(model, ids(1, 256), use_cache=False)
    assert within(got, want, falcon.peak_share), (got, want)
