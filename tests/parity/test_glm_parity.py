"""GLM-4 (glm) and GLM-4-0414 (glm4) against transformers (the table-driven modules run their
rows' logits, generation, --check-cache, counts and trace --execute; here what is GLM's own):
the q/k/v biases, the (partial, interleaved) RoPE and glm4's post-sublayer norms each move the
logits by far more than the tolerance when switched off in transformers - with RoPE shown to
matter, the parity at 1e-4 pins which dimensions it rotates and how it pairs them - and the
float64 logits match to 1e-10."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.parity.family_checks import (assert_float64_logits_match,
                                        assert_switch_moves_the_logits, layers, saved_rows)
from tests.parity.parity_families import glm, glm4
from tests.parity.saved_models import save_random
from tests.parity.test_hf_parity import _rms_norm_f64, _rope_f64

pytestmark = pytest.mark.slow

BUILDERS = {"glm": glm, "glm4": glm4}


saved = saved_rows(BUILDERS)


def _no_qkv_biases(model: object) -> None:
    for layer in layers(model):
        for proj in ("q_proj", "k_proj", "v_proj"):
            getattr(layer.self_attn, proj).bias.data.zero_()


def _no_rope(model: object) -> None:
    import torch
    rotary = model.model.rotary_emb  # type: ignore[attr-defined]
    rotated = rotary.forward

    def unrotated(x: torch.Tensor, position_ids: torch.Tensor) -> tuple:
        cos, sin = rotated(x, position_ids)
        return torch.ones_like(cos), torch.zeros_like(sin)
    rotary.forward = unrotated


def _no_post_norms(model: object) -> None:
    import torch
    for layer in layers(model):
        layer.post_self_attn_layernorm = torch.nn.Identity()
        layer.post_mlp_layernorm = torch.nn.Identity()


SWITCHES: dict[str, Callable[[object], None]] = {"q/k/v biases": _no_qkv_biases,
                                                 "partial interleaved RoPE": _no_rope}


@pytest.mark.parametrize("feature", list(SWITCHES))
def test_each_feature_moves_the_logits_far_past_the_tolerance(saved: tuple[object, Path],
                                                              feature: str) -> None:
    model, path = saved
    assert_switch_moves_the_logits(model, path, SWITCHES[feature])  # type: ignore[arg-type]


def test_glm4_post_norms_move_the_logits(tmp_path: Path) -> None:
    model = save_random(glm4, tmp_path, std=0.15)
    assert_switch_moves_the_logits(model, tmp_path, _no_post_norms)  # type: ignore[arg-type]


def test_float64_logits_match(saved: tuple[object, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """GLM's RMSNorm and RoPE tables run in float32 inside transformers whatever the dtype: the
    float64 reference replaces them (its rotation takes the tables' first half, as here)."""
    from transformers.models.glm import modeling_glm
    from transformers.models.glm4 import modeling_glm4
    for module, prefix in ((modeling_glm, "Glm"), (modeling_glm4, "Glm4")):
        monkeypatch.setattr(getattr(module, f"{prefix}RMSNorm"), "forward", _rms_norm_f64)
        monkeypatch.setattr(getattr(module, f"{prefix}RotaryEmbedding"), "forward", _rope_f64)
    model, path = saved
    assert_float64_logits_match(model, path)  # type: ignore[arg-type]
