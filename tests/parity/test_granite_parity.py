"""Granite's four multipliers against transformers' GraniteForCausalLM (the table-driven modules
run its rows' logits, generation, counts and trace; here what is Granite's own): each multiplier
moves the logits by far more than the tolerance, so that a parity that ignored one would fail,
and the float64 logits match to 1e-10."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.parity.parity_families import granite, right_padded, tokens
from tests.parity.saved_models import real_logits, save_random
from tests.parity.test_hf_parity import F32, F64, _rms_norm_f64, _rope_f64

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Path]:
    path = tmp_path_factory.mktemp("granite")
    # std 0.15: logits of order 1, so that a multiplier's effect is measured against them
    return save_random(granite, path, std=0.15), path


def _transformers_logits(model: object) -> np.ndarray:
    import torch
    mask, _ = right_padded()
    with torch.no_grad():
        return model(input_ids=torch.from_numpy(tokens()),  # type: ignore[operator]
                     attention_mask=torch.from_numpy(mask)).logits.numpy()


def _switch_off(model: object, multiplier: str) -> None:
    """Set one multiplier to 1 where GraniteForCausalLM reads it (most are copied at init)."""
    inner = model.model  # type: ignore[attr-defined]
    if multiplier == "embedding_multiplier":
        inner.embedding_multiplier = 1.0
    elif multiplier == "residual_multiplier":
        for layer in inner.layers:
            layer.residual_multiplier = 1.0
    elif multiplier == "attention_multiplier":
        for layer in inner.layers:
            layer.self_attn.scaling = 1.0
    else:
        model.config.logits_scaling = 1.0  # type: ignore[attr-defined]


@pytest.mark.parametrize("multiplier", ["embedding_multiplier", "residual_multiplier",
                                        "attention_multiplier", "logits_scaling"])
def test_each_multiplier_moves_the_logits_far_past_the_tolerance(saved: tuple[object, Path],
                                                                 multiplier: str) -> None:
    import copy
    model, path = saved
    on = _transformers_logits(model)
    off_model = copy.deepcopy(model)
    _switch_off(off_model, multiplier)
    off = _transformers_logits(off_model)
    tolerance = F32["atol"] + F32["rtol"] * np.abs(on).max()
    assert np.abs(on - off).max() > 100 * tolerance, multiplier
    mask, _ = right_padded()
    got, want = real_logits(model, path, tokens(), mask)  # tfcli keeps the multiplier
    np.testing.assert_allclose(got, want, **F32)


def test_float64_logits_match(saved: tuple[object, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Granite's RMSNorm and RoPE run in float32 inside transformers whatever the dtype: the
    float64 reference replaces them, as test_hf_parity.py does LLaMA's."""
    import torch
    from transformers.models.granite import modeling_granite as granite_module
    monkeypatch.setattr(granite_module.GraniteRMSNorm, "forward", _rms_norm_f64)
    monkeypatch.setattr(granite_module.GraniteRotaryEmbedding, "forward", _rope_f64)
    from tfcli.checkpoints import load_weights, spec_from_config_dir
    from tfcli.engine.model import ModelInput, forward

    model, path = saved
    mask, _ = right_padded()
    model.double().set_attn_implementation("sdpa")  # type: ignore[attr-defined]  # eager: float32 softmax
    try:
        with torch.no_grad():
            want = model(input_ids=torch.from_numpy(tokens()),  # type: ignore[operator]
                         attention_mask=torch.from_numpy(mask)).logits.numpy()
    finally:
        model.float().set_attn_implementation("eager")  # type: ignore[attr-defined]
    spec = spec_from_config_dir(path)
    got = forward(spec, load_weights(path, spec, np.float64),
                  ModelInput(tokens(), attention_mask=mask)).logits
    real = mask.astype(bool)
    np.testing.assert_allclose(got[real], want[real], **F64)
