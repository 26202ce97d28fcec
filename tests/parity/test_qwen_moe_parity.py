"""Qwen2-MoE / Qwen3-MoE checks of their own (the logits, generation, counts and trace of the
rows "qwen*-moe*" are in the table-driven test_parity_*.py, the builders in
parity_families.py): the parameters counted as loaded, and which blocks are MoE (the mixed
rows make some dense by decoder_sparse_step and mlp_only_layers).
"""

from __future__ import annotations

import pytest

from tests.parity.parity_families import FAMILIES, Saved, saved_family
from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.engine.weights import MoEWeights, count_parameters
from tfcli.spec.counts import total_parameters


@pytest.fixture(scope="module", params=[name for name in FAMILIES if "-moe" in name])
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Saved:
    return saved_family(request, tmp_path_factory)


def test_parameter_count_and_block_kinds_match(saved: Saved) -> None:
    model, path = saved.model, saved.path
    spec = spec_from_config_dir(path)
    hf_total = sum(p.numel() for p in model.parameters())
    weights = load_weights(path, spec)
    assert total_parameters(spec) == count_parameters(weights, spec) == hf_total
    hf_sparse = [hasattr(layer.mlp, "experts") for layer in model.model.layers]
    assert [isinstance(b.ffn, MoEWeights) for b in weights.decoder.blocks] == hf_sparse
