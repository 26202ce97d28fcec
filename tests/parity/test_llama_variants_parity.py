"""Seed-OSS, ERNIE 4.5 and EXAONE 4.0 against transformers (the table-driven modules run their
rows' logits, generation, --check-cache, counts and trace --execute; here what each adds to
LLaMA): each feature moves the logits by far more than the tolerance when switched off in
transformers, and the float64 logits match to 1e-10."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.parity.family_checks import (assert_float64_logits_match,
                                        assert_switch_moves_the_logits, layers, no_qk_norms,
                                        no_rope, saved_rows)
from tests.parity.parity_families import ernie4_5, exaone4, seed_oss
from tests.parity.test_hf_parity import _rms_norm_f64, _rope_f64

pytestmark = pytest.mark.slow

saved = saved_rows({"seed-oss": seed_oss, "ernie4_5": ernie4_5, "exaone4": exaone4})


def _zero_biases(*names: str) -> Callable[[object], None]:
    """Zero the biases of the named projections (dotted: self_attn.o_proj) in every block."""
    def switch(model: object) -> None:
        for layer in layers(model):
            for name in names:
                module = layer
                for part in name.split("."):
                    module = getattr(module, part)
                module.bias.data.zero_()
    return switch


def _no_post_norms(model: object) -> None:
    import torch
    for layer in layers(model):
        layer.post_attention_layernorm = torch.nn.Identity()
        layer.post_feedforward_layernorm = torch.nn.Identity()


def _rotated_global(model: object) -> None:
    """The full layer rotates too: EXAONE rotates where sliding_window is None or the layer
    slides; its mask stays the full one (from layer_types)."""
    layers(model)[3].self_attn.is_sliding = True


SWITCHES: dict[str, dict[str, Callable[[object], None]]] = {
    "seed-oss": {"o bias": _zero_biases("self_attn.o_proj"),
                 "MLP biases": _zero_biases("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")},
    "ernie4_5": {"biases": _zero_biases("self_attn.q_proj", "self_attn.o_proj", "mlp.up_proj"),
                 "interleaved RoPE": no_rope},
    "exaone4": {"per-head q/k norms": no_qk_norms, "post-sublayer norms": _no_post_norms,
                "NoPE full layer": _rotated_global},
}
CASES = [(row, feature) for row, switches in SWITCHES.items() for feature in switches]


@pytest.mark.parametrize(("saved", "feature"), CASES, indirect=["saved"],
                         ids=[f"{row}-{feature}" for row, feature in CASES])
def test_each_feature_moves_the_logits_far_past_the_tolerance(saved: tuple[object, Path],
                                                              feature: str) -> None:
    model, path = saved
    row = next(r for r, switches in SWITCHES.items() if feature in switches)
    assert_switch_moves_the_logits(model, path, SWITCHES[row][feature])  # type: ignore[arg-type]


def _apply_rope_f64(q: object, k: object, cos: object, sin: object,
                    unsqueeze_dim: int = 1) -> tuple:
    """ERNIE's apply_rotary_pos_emb (GLM's interleaving) without its cast to float32."""
    from transformers.models.ernie4_5.modeling_ernie4_5 import rotate_half
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)  # type: ignore[attr-defined]
    cos = cos[..., : cos.shape[-1] // 2].repeat_interleave(2, dim=-1)
    sin = sin[..., : sin.shape[-1] // 2].repeat_interleave(2, dim=-1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin  # type: ignore[operator]


def test_float64_logits_match(saved: tuple[object, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The three run their RMSNorm and RoPE tables in float32 inside transformers (ERNIE its
    rotation too) whatever the dtype: the float64 reference replaces them."""
    from transformers.models.ernie4_5 import modeling_ernie4_5
    from transformers.models.exaone4 import modeling_exaone4
    from transformers.models.seed_oss import modeling_seed_oss
    for module, prefix in ((modeling_seed_oss, "SeedOss"), (modeling_ernie4_5, "Ernie4_5"),
                           (modeling_exaone4, "Exaone4")):
        monkeypatch.setattr(getattr(module, f"{prefix}RMSNorm"), "forward", _rms_norm_f64)
        monkeypatch.setattr(getattr(module, f"{prefix}RotaryEmbedding"), "forward", _rope_f64)
    monkeypatch.setattr(modeling_ernie4_5, "apply_rotary_pos_emb", _apply_rope_f64)
    model, path = saved
    assert_float64_logits_match(model, path)  # type: ignore[arg-type]
