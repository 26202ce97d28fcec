"""gpt-oss against transformers' GptOssForCausalLM (the table-driven modules run its rows'
logits, generation, --check-cache, counts and trace --execute; here what is gpt-oss's own):
each new feature - the attention sinks, the clamped SwiGLU, the router's logit bias, the
experts' biases, the sliding layers - moves the logits by far more than the tolerance when
switched off in transformers, so that a parity that ignored it would fail; and the float64
logits match to 1e-10."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.parity.parity_families import gpt_oss
from tests.parity.family_checks import (assert_float64_logits_match,
                                        layers, saved_rows, switch_test)
from tests.parity.saved_models import save_random
from tests.parity.test_hf_parity import _rms_norm_f64

pytestmark = pytest.mark.slow


saved = saved_rows({"gpt-oss": gpt_oss})


def _no_sinks(model: object) -> None:
    for layer in layers(model):  # a sink of -1e4 takes no probability mass
        layer.self_attn.sinks.data.fill_(-1e4)


def _no_clamp(model: object) -> None:
    for layer in layers(model):
        layer.mlp.experts.limit = 1e9


def _no_router_bias(model: object) -> None:
    for layer in layers(model):
        layer.mlp.router.bias.data.zero_()


def _no_expert_biases(model: object) -> None:
    for layer in layers(model):
        layer.mlp.experts.gate_up_proj_bias.data.zero_()
        layer.mlp.experts.down_proj_bias.data.zero_()


def _no_window(model: object) -> None:
    model.config.layer_types = ["full_attention"] * len(layers(model))  # type: ignore[attr-defined]
    for layer in layers(model):
        layer.self_attn.sliding_window = None


SWITCHES: dict[str, Callable[[object], None]] = {
    "attention sinks": _no_sinks, "clamped SwiGLU": _no_clamp, "router bias": _no_router_bias,
    "expert biases": _no_expert_biases, "sliding layers": _no_window,
}


test_each_feature_moves_the_logits_far_past_the_tolerance = switch_test(SWITCHES)


def _rope_f64(self: object, x: object, position_ids: object) -> tuple:
    """GptOssRotaryEmbedding's default (unscaled) cos / sin in float64: (B, T, d_head / 2),
    not concatenated - its rotation takes the two halves apart."""
    import torch
    dim = 2 * self.inv_freq.shape[0]  # type: ignore[attr-defined]
    theta = self.config.rope_parameters["rope_theta"]  # type: ignore[attr-defined]
    inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = position_ids[..., None].double() * inv_freq  # type: ignore[index]
    return angles.cos().to(x.dtype), angles.sin().to(x.dtype)  # type: ignore[attr-defined]


def test_float64_logits_match(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gpt-oss's RMSNorm and RoPE run in float32 inside transformers whatever the dtype: the
    float64 reference replaces them (unscaled RoPE here: YaRN's tables are float32 from init),
    and runs eager attention, whose sink softmax is in the model's dtype."""
    from transformers.models.gpt_oss import modeling_gpt_oss as module
    monkeypatch.setattr(module.GptOssRMSNorm, "forward", _rms_norm_f64)
    monkeypatch.setattr(module.GptOssRotaryEmbedding, "forward", _rope_f64)
    model = save_random(lambda: gpt_oss(rope_parameters={"rope_type": "default",
                                                          "rope_theta": 1000.0}),
                        tmp_path, std=0.15)
    assert_float64_logits_match(model, tmp_path, attention=None)  # eager: its sink softmax
    # runs in the model's dtype (no sdpa in transformers' gpt-oss)
