"""Llama 4 text against transformers' Llama4ForCausalLM (the table-driven modules run its rows'
logits, generation, --check-cache, counts and trace --execute; here what is its own): chunked
attention, the NoPE layers and their attention temperature, the L2 q/k norm, the shared expert
and the routed weight scaling the expert's input each move the logits by far more than the
tolerance when switched off in transformers, and the float64 logits match to 1e-10."""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.parity.family_checks import (assert_float64_logits_match, layers, saved_rows,
                                        switch_test)
from tests.parity.parity_families import llama4, llama4_listed

pytestmark = pytest.mark.slow

saved = saved_rows({"llama4": llama4, "llama4-listed": llama4_listed})
scout = saved_rows({"llama4": llama4})


def _unchunked(model: object) -> None:
    model.config.layer_types = ["full_attention"] * len(layers(model))  # type: ignore[attr-defined]


def _no_temperature(model: object) -> None:
    for layer in layers(model):
        layer.self_attn.attn_temperature_tuning = False


def _no_qk_norm(model: object) -> None:
    for layer in layers(model):
        if hasattr(layer.self_attn, "qk_norm"):
            del layer.self_attn.qk_norm


def _every_layer_rotates(model: object) -> None:
    for layer in layers(model):
        layer.self_attn.use_rope = True


def _no_shared_expert(model: object) -> None:
    for layer in layers(model):
        if layer.is_moe_layer:
            layer.feed_forward.shared_expert.down_proj.weight.data.zero_()


def _weights_scale_outputs(model: object) -> None:
    """Each expert's output times its routed weight, w expert(x), as other MoEs compute."""
    import torch

    def moe(self: torch.nn.Module, hidden: torch.Tensor) -> tuple:
        hidden = hidden.reshape(-1, self.hidden_dim)  # (N, d)
        scores, logits = self.router(hidden)  # (N, E): 0 off the top-k
        routed = self.experts(hidden.repeat(scores.shape[1], 1))  # (E N, d)
        routed = routed * scores.transpose(0, 1).reshape(-1, 1)
        out = self.shared_expert(hidden)
        return out + routed.reshape(scores.shape[1], -1, out.shape[-1]).sum(dim=0), logits
    for layer in layers(model):
        if layer.is_moe_layer:
            layer.feed_forward.forward = types.MethodType(moe, layer.feed_forward)


SWITCHES: dict[str, Callable[[object], None]] = {
    "chunked attention": _unchunked, "NoPE layers": _every_layer_rotates,
    "shared expert": _no_shared_expert, "routed weight on the input": _weights_scale_outputs,
}
# the first row's own: the second has neither
SCOUT_SWITCHES: dict[str, Callable[[object], None]] = {
    "attention temperature": _no_temperature, "L2 q/k norm": _no_qk_norm}

test_each_feature_moves_the_logits_far_past_the_tolerance = switch_test(SWITCHES)
test_each_scout_feature_moves_the_logits_far_past_the_tolerance = switch_test(SCOUT_SWITCHES,
                                                                              "scout")


def test_float64_logits_match(saved: tuple[object, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """transformers computes Llama 4's RoPE (a complex float32 product), its norms, router
    sigmoid and the temperature's logarithm in float32 whatever the dtype: the float64
    reference replaces each."""
    import torch
    from transformers.models.llama4 import modeling_llama4 as module
    monkeypatch.setattr(module.Llama4TextRotaryEmbedding, "forward", _rope_f64)
    monkeypatch.setattr(module, "apply_rotary_emb", _apply_rope_f64)
    monkeypatch.setattr(module.Llama4TextL2Norm, "forward", lambda self, x: _rms(x, self.eps))
    monkeypatch.setattr(module.Llama4TextRMSNorm, "forward",
                        lambda self, x: _rms(x, self.eps) * self.weight)
    monkeypatch.setattr(module.Llama4Router, "forward", _router_f64)
    monkeypatch.setattr(module, "torch", _Float64Log(torch))
    model, path = saved
    assert_float64_logits_match(model, path)  # type: ignore[arg-type]


def _rms(x: object, eps: float) -> object:
    import torch
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)  # type: ignore[attr-defined]


def _rope_f64(self: object, x: object, position_ids: object) -> object:
    import torch
    dim = 2 * self.inv_freq.shape[0]  # type: ignore[attr-defined]
    theta = self.config.rope_parameters["rope_theta"]  # type: ignore[attr-defined]
    inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = position_ids[..., None].double() * inv_freq  # type: ignore[index]  # (B, T, dim/2)
    return torch.polar(torch.ones_like(angles), angles)


def _apply_rope_f64(xq: object, xk: object, freqs: object) -> tuple:
    import torch

    def rotate(x: torch.Tensor) -> torch.Tensor:  # (B, T, H, dh): pairs (0, 1), (2, 3) ...
        pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())
        return torch.view_as_real(pairs * freqs[:, :, None, :]).flatten(3)  # type: ignore[index]
    return rotate(xq), rotate(xk)  # type: ignore[arg-type]


def _router_f64(self: object, hidden: object) -> tuple:
    import torch
    logits = torch.nn.functional.linear(hidden, self.weight)  # type: ignore[arg-type, attr-defined]
    top, index = torch.topk(logits, self.top_k, dim=1)  # type: ignore[attr-defined]
    scores = torch.full_like(logits, float("-inf")).scatter_(1, index, top)
    return torch.sigmoid(scores), logits


class _Float64Log:
    """The module's `torch` with log1p in float64: the temperature's log1p(floor((p + 1) / f))
    runs on float32 positions in transformers; all else is torch itself."""

    def __init__(self, torch: object) -> None:
        self._torch = torch

    def __getattr__(self, name: str) -> object:
        return getattr(self._torch, name)

    def log1p(self, x: object) -> object:
        return self._torch.log1p(x.double())  # type: ignore[attr-defined]
