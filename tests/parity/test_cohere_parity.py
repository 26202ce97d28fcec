"""Command R (cohere), R+ (its per-head q/k LayerNorms) and R7B (cohere2) against
transformers (the table-driven modules run their rows' logits, generation, --check-cache,
counts and trace --execute; here what is Cohere's own): the logit scale, the interleaved RoPE
pairing, R+'s q/k norms and their weight per head, and cohere2's sliding window and NoPE
global layer each move the logits by far more than the tolerance when switched in
transformers; the float64 logits match to 1e-10."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.parity.family_checks import (assert_float64_logits_match,
                                        saved_rows, switch_test)
from tests.parity.parity_families import cohere, cohere2, cohere_qk_norm
from tests.parity.saved_models import save_random

pytestmark = pytest.mark.slow

BUILDERS = {"cohere": cohere, "cohere2": cohere2}


saved = saved_rows(BUILDERS)
every_row = saved_rows(BUILDERS | {"cohere-qk-norm": cohere_qk_norm})


def _no_logit_scale(model: object) -> None:
    model.logit_scale = 1.0  # type: ignore[attr-defined]


def _half_pairing(model: object) -> None:
    """cos / sin laid out for rotate_half's (i, i + d/2) pairs while the rotation still pairs
    (2i, 2i + 1): the pairing is what changes."""
    import torch
    rotary = model.model.rotary_emb  # type: ignore[attr-defined]
    interleaved = rotary.forward

    def half(x: torch.Tensor, position_ids: torch.Tensor) -> tuple:
        cos, sin = interleaved(x, position_ids)
        return (torch.cat((cos[..., 0::2], cos[..., 0::2]), dim=-1),
                torch.cat((sin[..., 0::2], sin[..., 0::2]), dim=-1))
    rotary.forward = half


COMMON: dict[str, Callable[[object], None]] = {"logit scale": _no_logit_scale,
                                               "interleaved RoPE": _half_pairing}


def _no_window(model: object) -> None:
    """Every layer's mask full; the sliding layers still rotate (their own attribute)."""
    model.config.layer_types = ["full_attention"] * 4  # type: ignore[attr-defined]


def _rotated_global(model: object) -> None:
    """The global layer rotates too: RoPE runs where the attention's sliding_window is set,
    and its mask stays the full one (from layer_types)."""
    model.model.layers[3].self_attn.sliding_window = 10**6  # type: ignore[attr-defined]


COHERE2: dict[str, Callable[[object], None]] = {"sliding window": _no_window,
                                                "NoPE global layer": _rotated_global}


test_each_feature_moves_the_logits_far_past_the_tolerance = switch_test(COMMON)


@pytest.fixture(scope="module")
def saved_cohere2(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Path]:
    path = tmp_path_factory.mktemp("cohere2-own")
    return save_random(cohere2, path, std=0.15), path


test_each_cohere2_feature_moves_the_logits = switch_test(COHERE2, fixture="saved_cohere2")


def _no_qk_norms(model: object) -> None:
    import torch
    for layer in model.model.layers:  # type: ignore[attr-defined]
        layer.self_attn.q_norm = torch.nn.Identity()
        layer.self_attn.k_norm = torch.nn.Identity()


def _one_weight_for_every_head(model: object) -> None:
    """Each q/k norm's first head's weight for every head (Qwen3's shared (d_head,) weight)."""
    for layer in model.model.layers:  # type: ignore[attr-defined]
        for norm in (layer.self_attn.q_norm, layer.self_attn.k_norm):
            norm.weight.data[:] = norm.weight.data[0]


QK_NORM: dict[str, Callable[[object], None]] = {
    "q/k LayerNorms": _no_qk_norms, "a weight per head": _one_weight_for_every_head}


@pytest.fixture(scope="module")
def saved_qk(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Path]:
    path = tmp_path_factory.mktemp("cohere-qk-own")
    return save_random(cohere_qk_norm, path, std=0.15), path


test_each_qk_norm_feature_moves_the_logits = switch_test(QK_NORM, fixture="saved_qk")


def _layer_norm_f64(self: object, x: object) -> object:
    """CohereLayerNorm (no bias) in the input's dtype (transformers: float32)."""
    mean = x.mean(-1, keepdim=True)  # type: ignore[attr-defined]
    variance = (x - mean).pow(2).mean(-1, keepdim=True)
    return self.weight * ((x - mean) * (variance + self.variance_epsilon).rsqrt())  # type: ignore[attr-defined]


def _rope_f64(self: object, x: object, position_ids: object) -> tuple:
    """Cohere's interleaved cos / sin (each angle twice, side by side) in float64."""
    import torch
    dim = 2 * self.inv_freq.shape[0]  # type: ignore[attr-defined]
    theta = self.config.rope_parameters["rope_theta"]  # type: ignore[attr-defined]
    inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = position_ids[..., None].double() * inv_freq  # type: ignore[index]
    angles = torch.repeat_interleave(angles, 2, dim=-1)
    return angles.cos().to(x.dtype), angles.sin().to(x.dtype)  # type: ignore[attr-defined]


def _apply_rope_f64(q: object, k: object, cos: object, sin: object,
                    unsqueeze_dim: int = 1) -> tuple:
    """Cohere's apply_rotary_pos_emb without its cast to float32."""
    from transformers.models.cohere.modeling_cohere import rotate_half
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)  # type: ignore[attr-defined]
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin  # type: ignore[operator]


def test_float64_logits_match(every_row: tuple[object, Path],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Cohere's LayerNorm, RoPE tables and rotation run in float32 inside transformers
    whatever the dtype: the float64 reference replaces them."""
    from transformers.models.cohere import modeling_cohere
    from transformers.models.cohere2 import modeling_cohere2
    for module, prefix in ((modeling_cohere, "Cohere"), (modeling_cohere2, "Cohere2")):
        monkeypatch.setattr(getattr(module, f"{prefix}LayerNorm"), "forward", _layer_norm_f64)
        monkeypatch.setattr(getattr(module, f"{prefix}RotaryEmbedding"), "forward", _rope_f64)
        monkeypatch.setattr(module, "apply_rotary_pos_emb", _apply_rope_f64)
    model, path = every_row
    assert_float64_logits_match(model, path)  # type: ignore[arg-type]
