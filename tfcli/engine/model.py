"""The forward pass: embeddings -> stacks of blocks -> final norm -> heads.

Encoder and decoder are the same stack (x-transformers style): `causal` on or off, plus
cross-attention in the decoder blocks of an encoder-decoder. Weights live in weights.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfcli.engine.attention import attention
from tfcli.engine.blas import blas_threads
from tfcli.engine.ffn import ffn
from tfcli.engine.ops import Observer, apply_norm
from tfcli.engine.parallel import linear, rowwise
from tfcli.engine.positions import default_positions, relative_bias, sinusoidal
from tfcli.engine.weights import BlockWeights, NormWeights, StackWeights, Weights, init_weights
from tfcli.errors import BadInputError
from tfcli.spec import Spec

Array = np.ndarray

__all__ = [
    "ForwardOutput", "block_forward", "embed", "ffn", "forward",
    "forward_hidden", "init_weights", "output_logits", "stack_position_bias",
]


@dataclass
class ForwardOutput:
    hidden: Array  # (B, T, d) last stack's output (after its final norm)
    logits: Array | None  # (B, T, V) when spec.lm_head
    encoder_hidden: Array | None  # (B, S, d) encoder-decoder only
    pooled: Array | None  # (B, d) when spec.pooler


# --- one block -------------------------------------------------------------------------------


def _norm(spec: Spec, norm: NormWeights | None, x: Array) -> Array:
    return rowwise(lambda rows: apply_norm(spec.norm, norm, rows, spec.norm_eps), x)


def _sublayer(
    spec: Spec, norm: NormWeights | None, x: Array, body: Callable[[Array], Array],
    observe: Observer | None, path: str,
) -> Array:
    """Residual sublayer: pre-norm x + F(N(x)), or post-norm N(x + F(x))."""
    pre = spec.norm_placement == "pre"
    has_norm = spec.norm != "none"
    h = x
    if pre and has_norm:
        h = _norm(spec, norm, x)
        if observe is not None:
            observe(path, "norm", h.shape)
    out = body(h)  # (B, T, d), a fresh array: the residual is added into it
    out += x
    if observe is not None:
        observe(path, "residual_add", out.shape)
    if not pre and has_norm:
        out = _norm(spec, norm, out)
        if observe is not None:
            observe(path, "norm", out.shape)
    return out


def block_forward(
    spec: Spec,
    w: BlockWeights,
    x: Array,
    *,
    causal: bool,
    key_mask: Array | None = None,
    position_bias: Array | None = None,
    positions: Array | None = None,
    encoder_out: Array | None = None,
    encoder_mask: Array | None = None,
    cache: Any = None,
    layer: int = 0,
    observe: Observer | None = None,
    path: str = "",
) -> Array:
    """One Transformer block: self-attention, cross-attention (if any), FFN. (B, T, d) -> same."""
    def self_attn(h: Array) -> Array:
        return attention(
            spec, w.attn, h, causal=causal, key_mask=key_mask, position_bias=position_bias,
            positions=positions, cache=cache, layer=layer, observe=observe, path=f"{path}.attn",
        )

    def cross_attn(h: Array) -> Array:
        return attention(
            spec, w.cross_attn, h, context=encoder_out, causal=False, key_mask=encoder_mask,
            cache=cache, layer=layer, observe=observe, path=f"{path}.cross_attn",
        )

    x = _sublayer(spec, w.attn_norm, x, self_attn, observe, f"{path}.attn")
    if w.cross_attn is not None:
        x = _sublayer(spec, w.cross_norm, x, cross_attn, observe, f"{path}.cross_attn")
    ffn_path = f"{path}.ffn"
    return _sublayer(spec, w.ffn_norm, x, lambda h: ffn(spec, w.ffn, h, observe, ffn_path),
                     observe, ffn_path)


# --- a stack of blocks -----------------------------------------------------------------------


def stack_position_bias(
    spec: Spec, stack: StackWeights, query_positions: Array, key_positions: Array, causal: bool
) -> Array | None:
    """The stack's shared T5 relative bias (1|B, H, T, S), or None for other position schemes."""
    if spec.positions != "relative" or stack.relative_bias is None:
        return None
    return relative_bias(
        stack.relative_bias, query_positions, key_positions,
        bidirectional=not causal, max_distance=spec.relative_max_distance,
    )


def forward_hidden(
    spec: Spec,
    stack: StackWeights,
    x: Array,
    *,
    causal: bool,
    key_mask: Array | None = None,
    positions: Array | None = None,
    key_positions: Array | None = None,
    encoder_out: Array | None = None,
    encoder_mask: Array | None = None,
    cache: Any = None,
    observe: Observer | None = None,
    name: str | None = None,
) -> Array:
    """Run a stack's blocks and its final norm on hidden states: (B, T, d) -> (B, T, d).

    positions (B, T) are the queries' positions (default: arange, after cache.pos when cached);
    key_positions (B, S) the keys' (default: the queries', or 0..S-1 with a cache); both are
    used only by RoPE and the T5 relative bias. key_mask (B, S) marks real keys.
    """
    name = name or ("decoder" if causal else "encoder")
    start = cache.pos if cache is not None else 0
    if positions is None:
        positions = default_positions(1, x.shape[1], start)  # (1, T)
    if key_positions is None:
        key_positions = default_positions(1, start + x.shape[1]) if cache is not None else positions
    bias = stack_position_bias(spec, stack, positions, key_positions, causal)  # (1|B, H, T, S)
    for i, block in enumerate(stack.blocks):
        x = block_forward(
            spec, block, x, causal=causal, key_mask=key_mask, position_bias=bias,
            positions=positions, encoder_out=encoder_out, encoder_mask=encoder_mask,
            cache=cache, layer=i, observe=observe, path=f"{name}.{i}",
        )
    if stack.final_norm is not None:
        x = _norm(spec, stack.final_norm, x)
        if observe is not None:
            observe(f"{name}.final_norm", "norm", x.shape)
    return x


# --- embeddings and heads --------------------------------------------------------------------


def embed(
    spec: Spec,
    weights: Weights,
    tokens: Array,
    positions: Array | None = None,
    token_types: Array | None = None,
    observe: Observer | None = None,
) -> Array:
    """Token (+ position) (+ token type) embeddings, then the embedding norm.

    tokens (B, T) -> (B, T, d).
    """
    x = weights.token_embedding[tokens]  # (B, T) -> (B, T, d)
    if observe is not None:
        observe("embed", "token_embedding", x.shape)
    if spec.positions in ("learned", "sinusoidal"):
        if positions is None:
            positions = default_positions(1, tokens.shape[1])  # (1, T)
        if spec.positions == "learned":
            x += weights.position_embedding[positions]  # (1|B, T) -> (1|B, T, d)
        else:
            x += sinusoidal(positions, spec.d_model, x.dtype)  # (1|B, T, d)
        if observe is not None:
            observe("embed", "position_embedding", x.shape)
    if weights.token_type_embedding is not None:
        types = np.zeros_like(tokens) if token_types is None else token_types
        x += weights.token_type_embedding[types]  # (B, T) -> (B, T, d)
        if observe is not None:
            observe("embed", "token_type_embedding", x.shape)
    if spec.embedding_norm:
        x = apply_norm(spec.norm, weights.embedding_norm, x, spec.norm_eps)
        if observe is not None:
            observe("embed", "embedding_norm", x.shape)
    return x


def output_logits(spec: Spec, weights: Weights, hidden: Array) -> Array:
    """Vocabulary logits: (B, T, d) -> (B, T, V), tied (token_embedding^T, no copy) or not."""
    if weights.lm_head is not None:
        return linear(hidden, weights.lm_head)  # (B, T, d) @ (d, V)
    if spec.tied_head_rescale:
        hidden = hidden * spec.d_model**-0.5  # T5: rescale before the tied head
    return linear(hidden, weights.token_embedding.T)  # (B, T, d) @ (d, V), a transposed view


def _heads(spec: Spec, weights: Weights, hidden: Array,
           observe: Observer | None) -> tuple[Array | None, Array | None]:
    logits = pooled = None
    if spec.lm_head:
        logits = output_logits(spec, weights, hidden)  # (B, T, V)
        if observe is not None:
            observe("head", "logits", logits.shape)
    if spec.pooler:
        pooled = np.tanh(hidden[:, 0] @ weights.pooler_w + weights.pooler_b)  # (B, d) first token
        if observe is not None:
            observe("head", "pooler", pooled.shape)
    return logits, pooled


# --- the whole model -------------------------------------------------------------------------


def _as_tokens(spec: Spec, tokens: Array, what: str) -> Array:
    tokens = np.asarray(tokens)
    if tokens.ndim != 2 or 0 in tokens.shape or not np.issubdtype(tokens.dtype, np.integer):
        raise BadInputError(f"{what} must be a non-empty (batch, length) integer array, got "
                            f"shape {tokens.shape} of {tokens.dtype}")
    if tokens.min() < 0 or tokens.max() >= spec.vocab_size:
        raise BadInputError(f"{what} holds token ids outside the vocabulary [0, {spec.vocab_size})")
    return tokens


def _as_positions(spec: Spec, positions: Array | None, tokens: Array) -> Array:
    if positions is None:
        positions = default_positions(1, tokens.shape[1])
    positions = np.asarray(positions)
    if positions.ndim == 1:
        positions = positions[None]
    if (positions.ndim != 2 or positions.shape[1] != tokens.shape[1]
            or positions.shape[0] not in (1, tokens.shape[0])
            or not np.issubdtype(positions.dtype, np.integer)):
        raise BadInputError(f"positions must be integers of shape (T,), (1, T) or (B, T) for "
                            f"tokens {tokens.shape}, got shape {positions.shape} of "
                            f"{positions.dtype}")
    if spec.positions == "learned" and (positions.min() < 0 or positions.max() >= spec.max_seq_len):
        raise BadInputError(f"positions must lie in [0, {spec.max_seq_len}) for {spec.name}, "
                            f"got up to {positions.max()} (max_seq_len {spec.max_seq_len})")
    return positions


def _as_mask(mask: Array | None, tokens: Array, what: str) -> Array | None:
    if mask is None:
        return None
    mask = np.asarray(mask)
    if mask.shape != tokens.shape:
        raise BadInputError(f"{what} has shape {mask.shape}; it must match its tokens' "
                            f"{tokens.shape}")
    return mask.astype(bool, copy=False)


def _as_token_types(spec: Spec, token_types: Array | None, tokens: Array) -> Array | None:
    if token_types is None:
        return None
    if spec.type_vocab_size == 0:
        raise BadInputError(f"{spec.name} has no token-type embedding (type_vocab_size 0), "
                            "but token_types were given")
    token_types = np.asarray(token_types)
    if token_types.shape != tokens.shape or not np.issubdtype(token_types.dtype, np.integer):
        raise BadInputError(f"token_types must be integers of the tokens' shape {tokens.shape}, "
                            f"got shape {token_types.shape} of {token_types.dtype}")
    if token_types.min() < 0 or token_types.max() >= spec.type_vocab_size:
        raise BadInputError(f"token_types must lie in [0, {spec.type_vocab_size}) for "
                            f"{spec.name}, got {token_types.min()}..{token_types.max()}")
    return token_types


def _encoder_decoder(
    spec: Spec, weights: Weights, x: Array, mask: Array | None, positions: Array, target: Array,
    target_mask: Array | None, observe: Observer | None,
) -> ForwardOutput:
    """Encode the embedded source x (B, S, d), then decode the target (B, T) against it."""
    encoded = forward_hidden(spec, weights.encoder, x, causal=False, key_mask=mask,
                             positions=positions, observe=observe)  # (B, S, d)
    target_positions = default_positions(1, target.shape[1])  # (1, T)
    y = embed(spec, weights, target, target_positions, None, observe)  # (B, T, d)
    hidden = forward_hidden(
        spec, weights.decoder, y, causal=True, key_mask=target_mask, positions=target_positions,
        encoder_out=encoded, encoder_mask=mask, observe=observe,
    )  # (B, T, d)
    logits, pooled = _heads(spec, weights, hidden, observe)
    return ForwardOutput(hidden, logits, encoded, pooled)


def forward(
    spec: Spec,
    weights: Weights,
    tokens: Array,
    *,
    attention_mask: Array | None = None,
    token_types: Array | None = None,
    positions: Array | None = None,
    decoder_tokens: Array | None = None,
    decoder_attention_mask: Array | None = None,
    observe: Observer | None = None,
) -> ForwardOutput:
    """Run the model on token ids (B, T). For encoder-decoder, `tokens` is the source and
    `decoder_tokens` the target (default: one start token 0 per sequence, as T5)."""
    tokens = _as_tokens(spec, tokens, "tokens")
    positions = _as_positions(spec, positions, tokens)
    mask = _as_mask(attention_mask, tokens, "attention_mask")
    token_types = _as_token_types(spec, token_types, tokens)
    if spec.family == "encoder-decoder":
        if decoder_tokens is None:
            decoder_tokens = np.zeros((tokens.shape[0], 1), dtype=np.int64)
        target = _as_tokens(spec, decoder_tokens, "decoder_tokens")
        _as_positions(spec, None, target)  # the target must fit a learned position table too
        target_mask = _as_mask(decoder_attention_mask, target, "decoder_attention_mask")
    with blas_threads(1):  # all parallelism comes from the engine's own pool (parallel.py)
        x = embed(spec, weights, tokens, positions, token_types, observe)  # (B, T, d)
        if spec.family == "encoder-decoder":
            return _encoder_decoder(spec, weights, x, mask, positions, target, target_mask,
                                    observe)
        causal = spec.family == "decoder"
        stack = weights.decoder if causal else weights.encoder
        hidden = forward_hidden(spec, stack, x, causal=causal, key_mask=mask,
                                positions=positions, observe=observe)  # (B, T, d)
        logits, pooled = _heads(spec, weights, hidden, observe)
        return ForwardOutput(hidden, logits, None, pooled)
