"""KV cache (gpt-fast style): buffers preallocated once, filled in place step by step.

Per decoder layer: K and V of shape (batch, n_kv_heads, max_len, d_head) for self-attention
(GQA/MQA cache only the K/V heads), and for encoder-decoder the cross-attention K/V over the
`source_len` encoder positions, written once after the encoder runs. Under multi-head latent
attention (DeepSeek MLA) a layer keeps the latent (batch, 1, max_len, kv_lora_rank) in place of
K and the shared RoPE key (batch, 1, max_len, qk_rope_head_dim) in place of V. `nbytes` is what
tfcli.spec.counts.kv_cache_bytes predicts.
"""

from __future__ import annotations

import numpy as np

from tfcli.core.arrays import Array
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec


def _self_shapes(spec: Spec, batch: int,
                 max_len: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """One layer's two self-attention buffers: K and V (B, Hkv, L, dh); MLA's latent
    (B, 1, L, kv_lora_rank) and shared RoPE key (B, 1, L, qk_rope_head_dim)."""
    if spec.latent_attention:
        return (batch, 1, max_len, spec.kv_lora_rank), (batch, 1, max_len, spec.qk_rope_head_dim)  # type: ignore[return-value]
    shape = (batch, spec.kv_heads, max_len, spec.head_dim)
    return shape, shape


class KVCache:
    """Preallocated self- (and cross-) attention K/V for every decoder layer."""

    def __init__(self, spec: Spec, batch: int, max_len: int,
                 dtype: np.dtype | type = np.float32, source_len: int = 0) -> None:
        n_layers, n_kv, d_head = spec.decoder_layers, spec.kv_heads, spec.head_dim
        self.max_len = max_len
        self._length = 0  # slots written so far (the cache's own bookkeeping; see `length`)
        k_shape, v_shape = _self_shapes(spec, batch, max_len)
        self.k = [np.zeros(k_shape, dtype=dtype) for _ in range(n_layers)]
        self.v = [np.zeros(v_shape, dtype=dtype) for _ in range(n_layers)]
        cross_len = source_len if spec.family == "encoder-decoder" else 0
        cross_shape = (batch, n_kv, cross_len, d_head)
        n_cross = n_layers if cross_len else 0
        self.cross_k = [np.zeros(cross_shape, dtype=dtype) for _ in range(n_cross)]
        self.cross_v = [np.zeros(cross_shape, dtype=dtype) for _ in range(n_cross)]
        self._cross_filled = [False] * len(self.cross_k)
        self.layers = [LayerCache(self, i) for i in range(n_layers)]  # one view per layer

    @property
    def length(self) -> int:
        """Slots [0, length) written since the last reset (callers pass offsets explicitly)."""
        return self._length

    @property
    def nbytes(self) -> int:
        """Bytes actually allocated by the buffers."""
        return sum(a.nbytes for a in (*self.k, *self.v, *self.cross_k, *self.cross_v))

    def update(self, layer: int, pos: int, k: Array, v: Array) -> tuple[Array, Array]:
        """Write k, v (B, Hkv, t, dh) at positions [pos, pos + t); return views of [0, pos + t)."""
        end = pos + k.shape[2]
        if end > self.max_len:
            raise BadInputError(f"KV cache holds {self.max_len} positions; step needs {end}")
        self.k[layer][:, :, pos:end] = k
        self.v[layer][:, :, pos:end] = v
        self._length = max(self._length, end)
        return self.k[layer][:, :, :end], self.v[layer][:, :, :end]  # (B, Hkv, pos + t, dh)

    def cross(self, layer: int) -> tuple[Array, Array] | None:
        """The cached cross-attention K, V (B, Hkv, S, dh), or None before they are written."""
        if layer < len(self.cross_k) and self._cross_filled[layer]:
            return self.cross_k[layer], self.cross_v[layer]
        return None

    def set_cross(self, layer: int, k: Array, v: Array) -> tuple[Array, Array]:
        """Store cross-attention K, V (B, Hkv, S, dh) once; returns the stored buffers."""
        if layer >= len(self.cross_k) or self.cross_k[layer].shape != k.shape:
            have = self.cross_k[0].shape if self.cross_k else "none"
            raise BadInputError(f"cross-attention cache shape {have} does not fit K/V {k.shape}")
        self.cross_k[layer][...] = k
        self.cross_v[layer][...] = v
        self._cross_filled[layer] = True
        return self.cross_k[layer], self.cross_v[layer]

    def reset(self) -> None:
        """Forget every cached position (the buffers are reused, not reallocated)."""
        self._length = 0
        self._cross_filled = [False] * len(self.cross_k)


class LayerCache:
    """One decoder layer's view of a KVCache: what attention() is handed, made once per cache."""

    __slots__ = ("cache", "layer")

    def __init__(self, cache: KVCache, layer: int) -> None:
        self.cache, self.layer = cache, layer

    def update(self, pos: int, k: Array, v: Array) -> tuple[Array, Array]:
        """KVCache.update for this layer: write at [pos, pos + t), views of [0, pos + t)."""
        return self.cache.update(self.layer, pos, k, v)

    def cross(self) -> tuple[Array, Array] | None:
        return self.cache.cross(self.layer)

    def set_cross(self, k: Array, v: Array) -> tuple[Array, Array]:
        return self.cache.set_cross(self.layer, k, v)
