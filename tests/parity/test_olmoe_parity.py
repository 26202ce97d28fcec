"""OLMoE against transformers' OlmoeForCausalLM (the table-driven modules run its rows' logits,
generation, --check-cache, counts and trace --execute; here what is OLMoE's own): the full q/k
norms and the unrenormalised routing each move the logits by far more than the tolerance when
switched in transformers, and the float64 logits match to 1e-10."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.parity.parity_families import olmoe, right_padded, tokens
from tests.parity.saved_models import real_logits, save_random
from tests.parity.test_hf_parity import F32, F64, _rms_norm_f64, _rope_f64

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Path]:
    path = tmp_path_factory.mktemp("olmoe")
    return save_random(olmoe, path, std=0.15), path


def _logits(model: object) -> np.ndarray:
    import torch
    mask, _ = right_padded()
    with torch.no_grad():
        return model(input_ids=torch.from_numpy(tokens()),  # type: ignore[operator]
                     attention_mask=torch.from_numpy(mask)).logits.numpy()


def _no_qk_norm(model: object) -> None:
    import torch
    for layer in model.model.layers:  # type: ignore[attr-defined]
        layer.self_attn.q_norm = torch.nn.Identity()
        layer.self_attn.k_norm = torch.nn.Identity()


def _renormalised(model: object) -> None:
    for layer in model.model.layers:  # type: ignore[attr-defined]
        layer.mlp.gate.norm_topk_prob = True


SWITCHES: dict[str, Callable[[object], None]] = {"full q/k norms": _no_qk_norm,
                                                 "unrenormalised routing": _renormalised}


@pytest.mark.parametrize("feature", list(SWITCHES))
def test_each_feature_moves_the_logits_far_past_the_tolerance(saved: tuple[object, Path],
                                                              feature: str) -> None:
    model, path = saved
    on = _logits(model)
    off_model = copy.deepcopy(model)
    SWITCHES[feature](off_model)
    tolerance = F32["atol"] + F32["rtol"] * np.abs(on).max()
    assert np.abs(on - _logits(off_model)).max() > 100 * tolerance, feature
    mask, _ = right_padded()
    got, want = real_logits(model, path, tokens(), mask)
    np.testing.assert_allclose(got, want, **F32)


def _router_f64(self: object, x: object) -> tuple:
    """OlmoeTopKRouter with its softmax in the model's dtype (transformers: float32)."""
    import torch
    flat = x.reshape(-1, self.hidden_dim)  # type: ignore[attr-defined]
    logits = torch.nn.functional.linear(flat, self.weight)  # type: ignore[attr-defined]
    top, index = torch.topk(logits.softmax(dim=-1), self.top_k, dim=-1)  # type: ignore[attr-defined]
    if self.norm_topk_prob:  # type: ignore[attr-defined]
        top = top / top.sum(dim=-1, keepdim=True)
    return logits, top, index


def test_float64_logits_match(saved: tuple[object, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from transformers.models.olmoe import modeling_olmoe as module
    monkeypatch.setattr(module.OlmoeRMSNorm, "forward", _rms_norm_f64)
    monkeypatch.setattr(module.OlmoeRotaryEmbedding, "forward", _rope_f64)
    monkeypatch.setattr(module.OlmoeTopKRouter, "forward", _router_f64)
    from tfcli.checkpoints import load_weights, spec_from_config_dir
    from tfcli.engine.model import ModelInput, forward

    model, path = saved
    mask, _ = right_padded()
    model.double().set_attn_implementation("sdpa")  # type: ignore[attr-defined]
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
