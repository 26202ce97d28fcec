"""Hunyuan dense against transformers' HunYuanDenseV1ForCausalLM (the table-driven modules run
its row's logits, generation, --check-cache, counts and trace --execute; here what is its own):
its q/k norms, their place after RoPE, the NTK-alpha base and the attention biases each move
the logits by far more than the tolerance, and the float64 logits match to 1e-10."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.parity.family_checks import (assert_float64_logits_match, layers, no_rope,
                                        saved_rows, switch_test, transformers_logits)
from tests.parity.parity_families import hunyuan, right_padded, tokens
from tests.parity.test_hf_parity import F32, _rms_norm_f64

pytestmark = pytest.mark.slow

saved = saved_rows({"hunyuan": hunyuan})


def _no_qk_norms(model: object) -> None:
    import torch
    for layer in layers(model):
        layer.self_attn.query_layernorm = torch.nn.Identity()
        layer.self_attn.key_layernorm = torch.nn.Identity()


def _plain_base(model: object) -> None:
    """RoPE at the config's rope_theta, without alpha's stretch of the base."""
    import torch
    rotary = model.model.rotary_emb  # type: ignore[attr-defined]
    dim = 2 * rotary.inv_freq.shape[0]
    rotary.inv_freq = 1.0 / 10000.0 ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)


def _no_biases(model: object) -> None:
    for layer in layers(model):
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            getattr(layer.self_attn, proj).bias.data.zero_()


SWITCHES: dict[str, Callable[[object], None]] = {
    "q/k norms": _no_qk_norms, "NTK-alpha base": _plain_base, "RoPE": no_rope,
    "attention biases": _no_biases}

test_each_feature_moves_the_logits_far_past_the_tolerance = switch_test(SWITCHES)


def test_the_norms_belong_after_rope(saved: tuple[object, Path]) -> None:
    """tfcli's engine with the norms before RoPE (as Qwen3's) misses transformers' logits by
    far more than the tolerance: the place is what the parity pins."""
    from tfcli.checkpoints import load_weights, spec_from_config_dir
    from tfcli.engine.model import ModelInput, forward
    model, path = saved
    mask, _ = right_padded()
    spec = spec_from_config_dir(path).replace(qk_norm_after_rope=False)
    got = forward(spec, load_weights(path, spec), ModelInput(tokens(), attention_mask=mask))
    want = transformers_logits(model)  # type: ignore[arg-type]
    real = mask.astype(bool)
    tolerance = F32["atol"] + F32["rtol"] * np.abs(want).max()
    assert np.abs(got.logits[real] - want[real]).max() > 100 * tolerance


def _rope_f64(self: object, x: object, position_ids: object) -> tuple:
    """The NTK-alpha table in float64: base theta * alpha^(d / (d - 2))."""
    import torch
    dim = 2 * self.inv_freq.shape[0]  # type: ignore[attr-defined]
    params = self.config.rope_parameters  # type: ignore[attr-defined]
    base = params["rope_theta"] * params["alpha"] ** (dim / (dim - 2))
    inv_freq = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = position_ids[..., None].double() * inv_freq  # type: ignore[index]  # (B, T, d/2)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().to(x.dtype), angles.sin().to(x.dtype)  # type: ignore[attr-defined]


def test_float64_logits_match(saved: tuple[object, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Hunyuan's RMSNorms and RoPE tables run in float32 inside transformers whatever the
    dtype: the float64 reference replaces them."""
    from transformers.models.hunyuan_v1_dense import modeling_hunyuan_v1_dense as module
    monkeypatch.setattr(module.HunYuanDenseV1RMSNorm, "forward", _rms_norm_f64)
    monkeypatch.setattr(module.HunYuanDenseV1RotaryEmbedding, "forward", _rope_f64)
    model, path = saved
    assert_float64_logits_match(model, path)  # type: ignore[arg-type]
