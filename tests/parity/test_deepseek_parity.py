"""DeepSeek-V2 and DeepSeek-V3 checks of their own (the logits, generation, counts and trace of
the rows "deepseek-*" are in the table-driven test_parity_*.py, the builders in
parity_families.py): which blocks are MoE and the V3 router's correction bias, as loaded; the
released multi-token-prediction layer ignored, as transformers does, and said to be; a V2
checkpoint with a layer past its last refused.

Tolerance: float32 rtol = atol = 1e-4 (as test_hf_parity.py), on the real positions only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.parity.parity_families import (BATCH, FAMILIES, LENGTH, VOCAB, Saved,
                                          deepseek_v2_greedy, deepseek_v3, saved_family, tokens)
from tests.parity.saved_models import real_logits, save_random
from tests.parity.test_hf_parity import F32
from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.engine.weights import MoEWeights


@pytest.fixture(scope="module", params=[name for name in FAMILIES if name.startswith("deepseek")])
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Saved:
    return saved_family(request, tmp_path_factory)


def test_block_kinds_and_router_biases_match(saved: Saved) -> None:
    model, path = saved.model, saved.path
    spec = spec_from_config_dir(path)
    weights = load_weights(path, spec)
    hf_sparse = [hasattr(layer.mlp, "experts") for layer in model.model.layers]
    assert [isinstance(b.ffn, MoEWeights) for b in weights.decoder.blocks] == hf_sparse
    biases = [b.ffn.router_bias for b in weights.decoder.blocks if isinstance(b.ffn, MoEWeights)]
    if model.config.model_type == "deepseek_v3":  # the random bias, loaded as it was saved
        stored = [layer.mlp.gate.e_score_correction_bias.numpy() for layer in model.model.layers
                  if hasattr(layer.mlp, "experts")]
        for ours, theirs in zip(biases, stored, strict=True):
            np.testing.assert_array_equal(ours, theirs)
            assert np.abs(theirs).max() > 0.1
    else:
        assert biases and all(b is None for b in biases)


def _add_mtp_layer(path: Path) -> list[str]:
    """The released DeepSeek-V3 layout: the multi-token-prediction module stored as
    model.layers.61 (a block, its enorm / hnorm / eh_proj and shared head) beside the model."""
    import torch
    from safetensors.torch import load_file, save_file

    file = path / "model.safetensors"
    tensors = load_file(file)
    mtp = {name.replace("model.layers.1.", "model.layers.61."): t.clone()
           for name, t in tensors.items() if name.startswith("model.layers.1.")}
    mtp |= {"model.layers.61.enorm.weight": torch.ones(64), "model.layers.61.hnorm.weight":
            torch.ones(64), "model.layers.61.eh_proj.weight": torch.zeros(64, 128),
            "model.layers.61.shared_head.head.weight": torch.zeros(VOCAB, 64)}
    save_file(tensors | mtp, file, metadata={"format": "pt"})
    return sorted(mtp)


def test_the_multi_token_prediction_layer_is_ignored_and_said_to_be(tmp_path: Path) -> None:
    """transformers' DeepseekV3 ignores model.layers.61 on load; tfcli loads the same 2
    blocks, counts the same parameters, compares the headers as equal, and says so."""
    from transformers import AutoModelForCausalLM

    from tfcli.analysis.params_report import build_params_report
    from tfcli.analysis.stored import stored_for

    model = save_random(deepseek_v3, tmp_path)
    assert len(_add_mtp_layer(tmp_path)) > 20
    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path, attn_implementation="eager")
    counts = [sum(p.numel() for p in m.parameters()) for m in (reloaded, model)]
    assert counts[0] == counts[1]
    ids, mask = tokens(), np.ones((BATCH, LENGTH), dtype=np.int64)
    np.testing.assert_allclose(*real_logits(reloaded.eval(), tmp_path, ids, mask), **F32)
    spec = spec_from_config_dir(tmp_path)
    stored = stored_for(str(tmp_path), spec)
    assert stored is not None and stored.differences == (), stored and stored.verdict
    notes = build_params_report(spec, stored=stored).notes
    assert any("1 multi-token-prediction layer(s) (num_nextn_predict_layers) not built or "
               "counted" in n for n in notes), notes


def test_a_v2_checkpoint_with_a_layer_past_its_last_is_refused(tmp_path: Path) -> None:
    """DeepSeek-V2 has no multi-token-prediction layer: transformers ignores nothing there,
    and tfcli names the stray tensors."""
    from tfcli.core.errors import BadInputError

    save_random(deepseek_v2_greedy, tmp_path)
    _add_mtp_layer(tmp_path)
    with pytest.raises(BadInputError, match=r"unexpected tensor\(s\) model\.layers\.61\."):
        load_weights(tmp_path, spec_from_config_dir(tmp_path))
