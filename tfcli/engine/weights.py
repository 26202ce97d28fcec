"""Typed weight containers and their random initialisation.

Matrices are stored (in_features, out_features) so a projection is `x @ w`, as in picoGPT.
Names mirror the parameter-count components in tfcli.analysis.params one to one, which is what
lets a test prove that the arrays allocated here total exactly what `tfcli params` counts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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


# --- memory layout --------------------------------------------------------------------------
# A decode step is bound by reading every weight once, through matrix-vector products whose
# speed depends on how each matrix lies in memory (OpenBLAS, 2 threads, GPT-2 small shapes,
# benchmarks/README.md). `arrange_weights` lays the arrays out for that, without changing any
# shape or value:
# - Projections that read the same input (Q, K and V; a gated FFN's gate and up) lie side by
#   side in one array, each field a column view of it, so that one product replaces two or
#   three (fewer, larger products stream faster).
# - Projections no wider out than in (the FFN's down (d_ff, d), attention's output (d, d)) are
#   stored transposed in memory (Fortran order): each output is then a dot product over a
#   contiguous row of weights (3072 x 768: 16 -> 23 GB/s; 768 x 768: 13 -> 17 GB/s).
# - A tied embedding (V, d) is stored Fortran-ordered, so the head reads its transpose, (d, V),
#   as rows of V contiguous weights (50257 x 768: 18 -> 22 GB/s). Embedding lookups then gather
#   strided rows: 0.9 ms for 128 tokens, under 0.5% of a forward pass.
# Matrix-matrix products (prompts, whole forward passes) run within a few percent either way.
# Code that does not know about the layout (or weights built by hand) still works: the fields
# stay ordinary arrays of the documented shapes.


def fuse_columns(parts: Sequence[Array]) -> list[Array]:
    """Copies of `parts` (..., n_i) laid side by side in one new (..., sum n_i) array, returned
    as its consecutive column views; `fused_array(*views)` gives the whole array back."""
    width = sum(p.shape[-1] for p in parts)
    block = np.empty((*parts[0].shape[:-1], width), dtype=np.result_type(*parts))  # C order,
    np.concatenate(parts, axis=-1, out=block)  # whatever order the parts come in: (..., n_1 + ...)
    bounds = np.cumsum([0, *(p.shape[-1] for p in parts)])
    return [block[..., a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def fused_array(*parts: Array | None) -> Array | None:
    """The one array whose consecutive column blocks are exactly `parts`, or None when they are
    not laid out that way (separate arrays, None, a different order)."""
    arrays = [p for p in parts if p is not None]
    if not arrays or len(arrays) < len(parts):
        return None
    base = arrays[0].base
    if not isinstance(base, np.ndarray) or any(p.base is not base for p in arrays):
        return None
    offset = 0
    for part in arrays:
        start = base.ctypes.data + offset * base.itemsize
        if part.shape[:-1] != base.shape[:-1] or part.strides != base.strides:
            return None
        if part.ctypes.data != start:
            return None
        offset += part.shape[-1]
    return base if offset == base.shape[-1] else None


def fused_projection(owner: object, weight_names: tuple[str, ...],
                     bias_names: tuple[str, ...]) -> tuple[Array, Array | None] | None:
    """(W, b) whose column views are the named fields of `owner` (b None when none of them has
    a bias), or None when they are not fused, or only some have biases: the caller then runs one
    product per field. Memoised on `owner`: checking the layout costs about 25 us, more than
    some decode-step products. A field assigned since, or a copy (deepcopy, pickle) whose fields
    are no longer views of the memoised array, is noticed."""
    parts = tuple(getattr(owner, name) for name in (*weight_names, *bias_names))
    memo = owner.__dict__.setdefault("_fused", {})
    hit = memo.get(weight_names)
    if hit is not None and all(a is b for a, b in zip(hit[0], parts)) and _still_views(*hit):
        return hit[1]
    w = fused_array(*parts[: len(weight_names)])
    biases = parts[len(weight_names):]
    if all(b is None for b in biases):
        result = None if w is None else (w, None)
    else:
        b = fused_array(*biases)  # None unless every field has one and they are fused
        result = None if w is None or b is None else (w, b)
    memo[weight_names] = (parts, result)
    return result


def _still_views(parts: tuple[Array | None, ...],
                 result: tuple[Array, Array | None] | None) -> bool:
    """Whether memoised fused arrays are still what the parts (weights, then as many biases)
    are views of."""
    if result is None:
        return True
    w, b = result
    n_weights = len(parts) // 2
    return (all(p is not None and p.base is w for p in parts[:n_weights])
            and (b is None or all(p is not None and p.base is b for p in parts[n_weights:])))


def _fuse(obj: object, weight_names: tuple[str, ...], bias_names: tuple[str, ...]) -> None:
    ws = [getattr(obj, n) for n in weight_names]
    if any(w is None for w in ws):
        return
    if fused_array(*ws) is None:
        for name, view in zip(weight_names, fuse_columns(ws)):
            setattr(obj, name, view)
    bs = [getattr(obj, n) for n in bias_names]
    if all(b is not None for b in bs) and fused_array(*bs) is None:
        for name, view in zip(bias_names, fuse_columns(bs)):
            setattr(obj, name, view)


def _c_order(array: Array | None) -> Array | None:
    return None if array is None else np.ascontiguousarray(array)  # no copy when already so


def _arrange_attention(w: AttentionWeights, fuse: bool) -> None:
    if fuse:
        _fuse(w, ("wq", "wk", "wv"), ("bq", "bk", "bv"))
    else:
        w.wq, w.wk, w.wv = _c_order(w.wq), _c_order(w.wk), _c_order(w.wv)
    w.wo = np.asfortranarray(w.wo)  # (H*dh, d), memory (d, H*dh)


def _arrange_ffn(w: FFNWeights) -> None:
    if w.w_gate is not None:
        _fuse(w, ("w_gate", "w_up"), ("b_gate", "b_up"))
    else:
        w.w_up = _c_order(w.w_up)
    w.w_down = np.asfortranarray(w.w_down)  # (d_ff, d), memory (d, d_ff)


def arrange_weights(weights: Weights) -> Weights:
    """Lay the arrays out for decode steps, in place (see above); values and shapes unchanged.

    Every matrix ends in its layout whatever it came in (the checkpoint loader hands over
    transposed views of nn.Linear weights, so the down and output projections need no copy).
    Cross-attention Q/K/V are not fused: its Q reads the decoder, its K/V the encoder output.
    """
    for stack in weights.stacks:
        for block in stack.blocks:
            _arrange_attention(block.attn, fuse=True)
            if block.cross_attn is not None:
                _arrange_attention(block.cross_attn, fuse=False)
            if isinstance(block.ffn, MoEWeights):
                block.ffn.router = np.ascontiguousarray(block.ffn.router)
            for ffn in block.ffn.experts if isinstance(block.ffn, MoEWeights) else [block.ffn]:
                _arrange_ffn(ffn)
    if weights.lm_head is None:  # tied (or headless: then the order does not matter)
        weights.token_embedding = np.asfortranarray(weights.token_embedding)  # memory (d, V)
    else:
        weights.token_embedding = np.ascontiguousarray(weights.token_embedding)
        weights.lm_head = np.ascontiguousarray(weights.lm_head)
    weights.pooler_w = _c_order(weights.pooler_w)
    return weights


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
        """N(0, init_std^2) in one array scaled in place: float32 weights are drawn as float32
        (no float64 detour, ~2x faster, other values than before); float64 ones keep the float64
        draws of earlier versions, value for value."""
        if self.dtype == np.float32:
            out = self.rng.standard_normal(shape, dtype=np.float32)
            out *= np.float32(self.spec.init_std)
            return out
        out = self.rng.standard_normal(shape, dtype=np.float64)
        out *= self.spec.init_std
        return out if self.dtype == np.float64 else out.astype(self.dtype)

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
    return arrange_weights(weights)
