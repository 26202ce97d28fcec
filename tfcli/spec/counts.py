"""Analytic counts, a pure function of the Spec: sums over its blueprint (tfcli.spec.blueprint),
never an allocation. Parameters per component, active and inactive expert weights, KV-cache
values and bytes.

It sits below the engine, the checkpoint loader and the analyses (tests/test_layering.py keeps it
so): all of them count with it. The blueprint's names are re-exported for the counting callers.
"""

from __future__ import annotations

from tfcli.core.dtypes import DTYPE_BYTES
from tfcli.spec.blueprint import (  # noqa: F401 (re-exported: what a count is made of)
    ATTENTION, EMBEDDING, EVERY, FFN, HEAD, LOGITS_BIAS_NOTE, NORM, POOLER, POSITION,
    ROUTER_BIAS_NOTE, SHARED_NOTE, TIED_NOTE, Component, block_indices, components,
    dense_ffn_components,
)
from tfcli.spec.model import Spec


def total_parameters(spec: Spec) -> int:
    return sum(c.count for c in components(spec))


def inactive_expert_parameters(spec: Spec) -> int:
    """Expert weights a token does not touch: (n_experts - experts_per_token) routed experts
    per MoE block (shared experts, the router and dense blocks are all active)."""
    if not spec.n_experts:
        return 0
    per_expert = sum(c.per_instance for c in dense_ffn_components(spec, spec.expert_width))
    layers = sum(spec.moe_layer_count(n) for n in (spec.encoder_layers, spec.decoder_layers))
    return (spec.n_experts - spec.experts_per_token) * per_expert * layers


def kv_values_per_layer_token(spec: Spec) -> int:
    """Values one decoder layer caches per token of one sequence: K and V of every K/V head;
    under MLA the latent and the shared RoPE key, kv_lora_rank + qk_rope_head_dim."""
    if spec.latent_attention:
        return spec.kv_lora_rank + spec.qk_rope_head_dim  # type: ignore[operator]
    return 2 * spec.kv_heads * spec.head_dim


def expanded_kv_values_per_layer_token(spec: Spec) -> int:
    """What full multi-head K/V would cache per layer and token: every head's key (d_head) and
    value (v_head_dim under MLA). Equals kv_values_per_layer_token without MLA."""
    return spec.kv_heads * (spec.head_dim + spec.value_dim)


def kv_cache_bytes_per_token(spec: Spec, dtype: str = "float32") -> float:
    """Bytes of decoder self-attention K and V (MLA: latent and RoPE key) cached per token per
    sequence."""
    return kv_values_per_layer_token(spec) * spec.decoder_layers * DTYPE_BYTES[dtype]


def kv_cache_window_bytes(spec: Spec, context: int, batch: int = 1,
                          dtype: str = "float32") -> int | None:
    """KV-cache bytes when each local (sliding-window) layer keeps only its last sliding_window
    tokens, a rolling buffer as transformers' sliding-window cache layers, and each global
    layer of a layer_pattern every token: min(context, window) tokens per local layer. None
    when the window hides no cached token (no window, or one at least `context` long)."""
    window = spec.sliding_window
    if window is None or window >= context or spec.family != "decoder":  # an encoder caches none
        return None
    per_layer_token = kv_values_per_layer_token(spec) * DTYPE_BYTES[dtype]
    local = spec.local_layers
    tokens = local * window + (spec.decoder_layers - local) * context
    return int(round(batch * per_layer_token * tokens))


def kv_cache_bytes(spec: Spec, context: int, batch: int = 1, dtype: str = "float32",
                   source_len: int = 0) -> int:
    """Total KV-cache bytes: self-attention for `context` tokens, plus (encoder-decoder) the
    cross-attention K/V over `source_len` encoder positions, for `batch` sequences."""
    per_token = kv_cache_bytes_per_token(spec, dtype)
    cross = per_token * source_len if spec.family == "encoder-decoder" else 0
    return int(round(batch * (per_token * context + cross)))
