"""Typed weight containers and their random initialisation.

Matrices are stored (in_features, out_features) so a projection is `x @ w`, as in picoGPT.
Names mirror the parameter-count components in tfcli.analysis.params one to one, which is what
lets a test prove that the arrays allocated here total exactly what `tfcli params` counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields

import numpy as np

from tfcli.spec import Spec

Array = np.ndarray


@dataclass
class NormWeights:
    scale: Array | None  # (d_model,) or None for parameter-free LN
    bias: Array | None  # (d_model,) for layernorm only


@dataclass
class AttentionWeights:
    wq: Array  # (d_model, n_heads * d_head)
    wk: Array  # (d_model, n_kv_heads * d_head)
    wv: Array  # (d_model, n_kv_heads * d_head)
    wo: Array  # (n_heads * d_head, d_model)
    bq: Array | None = None
    bk: Array | None = None
    bv: Array | None = None
    bo: Array | None = None


@dataclass
class FFNWeights:
    w_up: Array  # (d_model, d_ff)
    w_down: Array  # (d_ff, d_model)
    w_gate: Array | None = None  # (d_model, d_ff), gated activations only
    b_up: Array | None = None
    b_gate: Array | None = None
    b_down: Array | None = None


@dataclass
class MoEWeights:
    router: Array  # (d_model, n_experts), no bias
    experts: list[FFNWeights]


@dataclass
class BlockWeights:
    attn_norm: NormWeights | None
    attn: AttentionWeights
    ffn_norm: NormWeights | None
    ffn: FFNWeights | MoEWeights
    cross_norm: NormWeights | None = None
    cross_attn: AttentionWeights | None = None


@dataclass
class StackWeights:
    blocks: list[BlockWeights]
    final_norm: NormWeights | None
    relative_bias: Array | None = None  # (relative_buckets, n_heads), shared by the stack's blocks


@dataclass
class Weights:
    token_embedding: Array  # (vocab_size, d_model)
    position_embedding: Array | None  # (max_seq_len, d_model), learned positions only
    token_type_embedding: Array | None  # (type_vocab_size, d_model)
    embedding_norm: NormWeights | None
    encoder: StackWeights | None
    decoder: StackWeights | None
    lm_head: Array | None  # (d_model, vocab_size); None when tied or headless
    pooler_w: Array | None = None  # (d_model, d_model)
    pooler_b: Array | None = None  # (d_model,)

    @property
    def stacks(self) -> list[StackWeights]:
        return [s for s in (self.encoder, self.decoder) if s is not None]


def iter_arrays(obj: object) -> Iterator[Array]:
    """Every array inside a weights container, each shared array once (tied weights count once)."""
    seen: set[int] = set()
    for array in _walk(obj):
        if id(array) not in seen:
            seen.add(id(array))
            yield array


def _walk(obj: object) -> Iterator[Array]:
    if isinstance(obj, np.ndarray):
        yield obj
    elif isinstance(obj, list):
        for item in obj:
            yield from _walk(item)
    elif obj is not None and hasattr(obj, "__dataclass_fields__"):
        for f in fields(obj):  # type: ignore[arg-type]
            yield from _walk(getattr(obj, f.name))


def count_parameters(weights: Weights) -> int:
    return sum(a.size for a in iter_arrays(weights))


def weight_bytes(weights: Weights) -> int:
    return sum(a.nbytes for a in iter_arrays(weights))


class Initializer:
    """Draws arrays from one seeded generator: normal(0, std) matrices, unit scales, zero biases."""

    def __init__(self, spec: Spec, rng: np.random.Generator, dtype: np.dtype | type = np.float32):
        self.spec = spec
        self.rng = rng
        self.dtype = np.dtype(dtype)

    def normal(self, *shape: int) -> Array:
        return (self.rng.standard_normal(shape, dtype=np.float64) * self.spec.init_std).astype(self.dtype)

    def zeros(self, *shape: int) -> Array:
        return np.zeros(shape, dtype=self.dtype)

    def ones(self, *shape: int) -> Array:
        return np.ones(shape, dtype=self.dtype)

    def norm(self) -> NormWeights | None:
        kind, d = self.spec.norm, self.spec.d_model
        if kind == "none":
            return None
        scale = self.ones(d) if kind in ("layernorm", "rmsnorm") else None
        bias = self.zeros(d) if kind == "layernorm" else None
        return NormWeights(scale, bias)

    def attention(self) -> AttentionWeights:
        s = self.spec
        q_width, kv_width = s.n_heads * s.head_dim, s.kv_heads * s.head_dim
        w = AttentionWeights(
            self.normal(s.d_model, q_width),
            self.normal(s.d_model, kv_width),
            self.normal(s.d_model, kv_width),
            self.normal(q_width, s.d_model),
        )
        if s.attention_bias:
            w.bq, w.bk, w.bv, w.bo = (
                self.zeros(q_width), self.zeros(kv_width), self.zeros(kv_width), self.zeros(s.d_model)
            )
        return w

    def dense_ffn(self) -> FFNWeights:
        s = self.spec
        w = FFNWeights(self.normal(s.d_model, s.d_ff), self.normal(s.d_ff, s.d_model))
        if s.gated:
            w.w_gate = self.normal(s.d_model, s.d_ff)
        if s.ffn_bias:
            w.b_up, w.b_down = self.zeros(s.d_ff), self.zeros(s.d_model)
            w.b_gate = self.zeros(s.d_ff) if s.gated else None
        return w

    def ffn(self) -> FFNWeights | MoEWeights:
        s = self.spec
        if not s.n_experts:
            return self.dense_ffn()
        router = self.normal(s.d_model, s.n_experts)
        return MoEWeights(router, [self.dense_ffn() for _ in range(s.n_experts)])

    def block(self, cross: bool = False) -> BlockWeights:
        b = BlockWeights(self.norm(), self.attention(), self.norm(), self.ffn())
        if cross:
            b.cross_norm, b.cross_attn = self.norm(), self.attention()
        return b

    def stack(self, n_layers: int, cross: bool) -> StackWeights:
        s = self.spec
        rel = self.normal(s.relative_buckets, s.n_heads) if s.positions == "relative" else None
        blocks = [self.block(cross) for _ in range(n_layers)]
        return StackWeights(blocks, self.norm() if s.final_norm else None, rel)


def init_weights(spec: Spec, seed: int = 0, dtype: np.dtype | type = np.float32) -> Weights:
    """Random weights for `spec` from np.random.default_rng(seed)."""
    init = Initializer(spec, np.random.default_rng(seed), dtype)
    s = spec
    token = init.normal(s.vocab_size, s.d_model)
    position = init.normal(s.max_seq_len, s.d_model) if s.positions == "learned" else None
    token_type = init.normal(s.type_vocab_size, s.d_model) if s.type_vocab_size else None
    emb_norm = init.norm() if s.embedding_norm else None
    encoder = init.stack(s.encoder_layers, cross=False) if s.has_encoder else None
    decoder = init.stack(s.decoder_layers, cross=s.family == "encoder-decoder") if s.has_decoder else None
    head = init.normal(s.d_model, s.vocab_size) if s.lm_head and not s.tie_embeddings else None
    weights = Weights(token, position, token_type, emb_norm, encoder, decoder, head)
    if s.pooler:
        weights.pooler_w, weights.pooler_b = init.normal(s.d_model, s.d_model), init.zeros(s.d_model)
    return weights
