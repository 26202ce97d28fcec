"""The forward pass: embeddings -> stacks of blocks -> final norm -> heads.

Encoder and decoder are the same stack (x-transformers style): `causal` on or off, plus
cross-attention in the decoder blocks of an encoder-decoder. Weights live in weights.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.attention import attention, cross_attention
from tfcli.engine.blas import blas_threads
from tfcli.engine.cache import KVCache, LayerCache
from tfcli.engine.ffn import ffn
from tfcli.engine.heads import classifier_input, classify, mlm_transform, pooler_activation
from tfcli.engine.inputs import NO_PROBE, Probe, StackInput, probe_for
from tfcli.engine.disentangled_attention import disentangled_attention, relative_table
from tfcli.engine.latent_attention import latent_attention
from tfcli.engine.ops import Observer, apply_norm, softcap_
from tfcli.engine.parallel import linear, rowwise
from tfcli.engine.positions import default_positions, relative_bias, sinusoidal
from tfcli.engine.shaped import is_shaped
from tfcli.engine.weights import (BlockWeights, LatentAttentionWeights, NormWeights, StackWeights,
                                  Weights)
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec


@dataclass
class ForwardOutput:
    hidden: Array  # (B, T, d) last stack's output (after its final norm)
    logits: Array | None  # (B, T, V) when spec.lm_head
    encoder_hidden: Array | None  # (B, S, d) encoder-decoder only
    pooled: Array | None  # (B, d) when spec.pooler
    # classification logits (tfcli.engine.heads): (B, num_labels) for head
    # sequence_classification, (B, T, num_labels) for token_classification
    scores: Array | None = None


@dataclass(frozen=True)
class ModelInput:
    """Token ids and their side inputs for forward(); a bare (B, T) array means tokens alone."""

    tokens: Array  # (B, T) int: decoder/encoder input, or the SOURCE for encoder-decoder
    attention_mask: Array | None = None  # (B, T) bool/int, 1 = real token (padding = 0)
    token_types: Array | None = None  # (B, T) int in [0, type_vocab_size)
    positions: Array | None = None  # (T,), (1, T) or (B, T) int; default 0..T-1
    decoder_tokens: Array | None = None  # (B, T') encoder-decoder target (default: token 0)
    decoder_attention_mask: Array | None = None  # (B, T')


# --- one block -------------------------------------------------------------------------------


def _norm(spec: Spec, norm: NormWeights | None, x: Array) -> Array:
    return rowwise(lambda rows: apply_norm(spec.norm, norm, rows, spec.norm_eps,
                                           spec.norm_unit_offset), x)


# norm_placement values with a norm on the sublayer's input / on its output inside the residual
NORM_BEFORE = ("pre", "sandwich")
NORM_AFTER_BODY = ("sublayer_post", "sandwich")


def _sublayer(
    spec: Spec, norm: NormWeights | None, x: Array, body: Callable[[Array], Array], probe: Probe,
    post_norm: NormWeights | None = None,
) -> Array:
    """Residual sublayer: pre-norm x + F(N(x)), post-norm N(x + F(x)), sublayer_post
    x + P(F(x)) (OLMo 2) or sandwich x + P(F(N(x))) (Gemma 2/3), P being `post_norm`."""
    placement = spec.norm_placement
    has_norm = spec.norm != "none"
    h = x
    if has_norm and placement in NORM_BEFORE:
        h = _norm(spec, norm, x)
        probe("norm", h.shape, (x,), (norm,))
    out = body(h)  # (B, T, d), a fresh array: the residual is added into it
    if spec.residual_multiplier is not None:  # Granite: x + m F(N(x))
        out *= out.dtype.type(spec.residual_multiplier)
        probe("residual_scale", out.shape, (out,))
    if has_norm and placement in NORM_AFTER_BODY:
        normed = _norm(spec, post_norm, out)  # a fresh array too
        probe("norm", normed.shape, (out,), (post_norm,))
        out = normed
    out += x
    probe("residual_add", out.shape, (x, x))
    if has_norm and placement == "post":
        normed = _norm(spec, norm, out)
        probe("norm", normed.shape, (out,), (norm,))
        out = normed
    return out


def _self_attention(spec: Spec, w: BlockWeights, h: Array, inputs: StackInput,
                    cache: LayerCache | None, probe: Probe) -> Array:
    """The block's self-attention body, multi-head or latent (MLA): (B, T, d) -> (B, T, d)."""
    if isinstance(w.attn, LatentAttentionWeights):
        return latent_attention(spec, w.attn, h, inputs, cache, probe)
    if spec.disentangled_attention:  # DeBERTa: an encoder's, never cached
        return disentangled_attention(spec, w.attn, h, inputs, probe)
    return attention(spec, w.attn, h, inputs, cache, probe)


def _parallel_block(spec: Spec, w: BlockWeights, x: Array, inputs: StackInput,
                    cache: LayerCache | None, probe: Probe) -> Array:
    """Parallel residual (GPT-J, NeoX, Falcon): x + attn(N1(x)) + ffn(N2(x)), one residual add;
    one_norm: N2 is N1's output reused (the block has no ffn_norm). (B, T, d) -> same."""
    at, at_ffn = probe.at("attn"), probe.at("ffn")
    has_norm = spec.norm != "none"
    h = _norm(spec, w.attn_norm, x) if has_norm else x  # (B, T, d)
    if has_norm:
        at("norm", h.shape, (x,), (w.attn_norm,))
    out = _self_attention(spec, w, h, inputs, cache, at)  # (B, T, d), a fresh array
    if has_norm and spec.parallel_residual == "two_norms":
        h = _norm(spec, w.ffn_norm, x)
        at_ffn("norm", h.shape, (x,), (w.ffn_norm,))
    out += ffn(spec, w.ffn, h, at_ffn)
    out += x
    at_ffn("residual_add", out.shape, (x, x, x))
    return out


def block_forward(spec: Spec, w: BlockWeights, x: Array, inputs: StackInput,
                  cache: LayerCache | None = None, probe: Probe = NO_PROBE) -> Array:
    """One Transformer block: self-attention, cross-attention (if any), FFN. (B, T, d) -> same.
    `cache` is this block's layer of the KV cache; `probe` the block's own (`{stack}.{i}`)."""
    if spec.parallel_residual != "off":
        return _parallel_block(spec, w, x, inputs, cache, probe)
    at = probe.at("attn")
    attend = lambda h: _self_attention(spec, w, h, inputs, cache, at)  # noqa: E731
    if spec.first_attn_norm or w.attn_norm is not None:
        x = _sublayer(spec, w.attn_norm, x, attend, at, w.attn_post_norm)
    else:  # ModernBERT's block 0 (first_attn_norm false): x + attn(x), the embedding norm's x
        x = attend(x) + x  # (B, T, d)
        at("residual_add", x.shape, (x, x))
    if w.cross_attn is not None:
        cross = probe.at("cross_attn")
        x = _sublayer(spec, w.cross_norm, x,
                      lambda h: cross_attention(spec, w.cross_attn, h, inputs, cache, cross), cross)
    at_ffn = probe.at("ffn")
    return _sublayer(spec, w.ffn_norm, x, lambda h: ffn(spec, w.ffn, h, at_ffn), at_ffn,
                     w.ffn_post_norm)


# --- a stack of blocks -----------------------------------------------------------------------


def stack_position_bias(spec: Spec, stack: StackWeights, inputs: StackInput) -> Array | None:
    """The stack's shared T5 relative bias (1|B, H, T, S), or None for other position schemes."""
    if spec.positions != "relative" or stack.relative_bias is None:
        return None
    return table_position_bias(spec, stack.relative_bias, inputs)


def table_position_bias(spec: Spec, table: Array, inputs: StackInput) -> Array:
    """T5 relative bias (1|B, H, T, S) of one (relative_buckets, H) table at inputs' positions."""
    return relative_bias(table, inputs.positions, inputs.key_positions,
                         bidirectional=not inputs.causal, max_distance=spec.relative_max_distance)


def _block_input(spec: Spec, block: BlockWeights, inputs: StackInput) -> StackInput:
    """The block's side inputs: with a relative table of its own (UMT5), its own bias."""
    if block.relative_bias is None:
        return inputs
    return replace(inputs, position_bias=table_position_bias(spec, block.relative_bias, inputs))


def layer_specs(spec: Spec, n_layers: int) -> list[Spec]:
    """The spec each of n_layers blocks runs with: `spec` itself, but under a layer_pattern,
    where local blocks keep sliding_window (and take rope_local_theta, unscaled, when set) and
    global ones see every earlier key, and for nope_layers, which rotate nothing (and scale
    their queries by nope_temperature_scale, the only blocks that do). Unvalidated
    copies (model_copy), one per kind of block. A view holds no per-layer field, so it runs as
    a one-block stack too."""
    views = _pattern_views(spec, n_layers) if spec.layer_pattern else [spec] * n_layers
    if not spec.nope_layers:
        return views
    kinds = {id(v): v for v in views}.values()
    # the temperature scales NoPE layers' queries only; Llama 4's l2 q/k norm sits on the
    # rotated layers only
    rotated = {id(v): v.model_copy(update={"nope_layers": None, "nope_temperature_scale": None})
               for v in kinds}
    unrotated = {id(v): v.model_copy(update={
        "positions": "none", "nope_layers": None,
        "qk_norm": "none" if v.qk_norm == "l2" else v.qk_norm}) for v in kinds}
    nope = set(spec.nope_layers)
    return [(unrotated if i in nope else rotated)[id(v)] for i, v in enumerate(views)]


def _pattern_views(spec: Spec, n_layers: int) -> list[Spec]:
    local: dict[str, object] = {"layer_pattern": None, "nope_layers": None}
    if spec.rope_local_theta is not None:
        local |= {"rope_theta": spec.rope_local_theta, "rope_scaling": None,
                  "rope_local_theta": None}
    views = {"local": spec.model_copy(update=local),
             "global": spec.model_copy(update={"layer_pattern": None, "sliding_window": None,
                                               "rope_local_theta": None, "nope_layers": None})}
    pattern = spec.layer_pattern or ["global"]
    return [views[pattern[i % len(pattern)]] for i in range(n_layers)]


def forward_hidden(spec: Spec, stack: StackWeights, x: Array, inputs: StackInput,
                   cache: KVCache | None = None, probe: Probe = NO_PROBE) -> Array:
    """Run a stack's blocks and its final norm on hidden states: (B, T, d) -> (B, T, d).

    `inputs` carries positions, key positions, masks, the cache offset and the encoder output
    (see StackInput); `probe` is the forward pass's root probe (paths `{stack}.{i}.…`).
    """
    bias = stack_position_bias(spec, stack, inputs)  # (1|B, H, T, S)
    if bias is not None:
        inputs = replace(inputs, position_bias=bias)
    named = probe.at(inputs.stack)
    table = relative_table(spec, stack, named)  # (2 span, d): DeBERTa, normed once per call
    if table is not None:
        inputs = replace(inputs, relative_embeddings=table)
    views = layer_specs(spec, len(stack.blocks))  # each block's own spec, made once per call
    for i, block in enumerate(stack.blocks):
        at = named.at(i)
        if is_shaped(x) and at.replayed(views[i], block):  # recorded like an earlier block
            continue
        layer = cache.layers[i] if cache is not None else None
        x = block_forward(views[i], block, x, _block_input(spec, block, inputs), layer, at)
    if stack.final_norm is not None:
        normed = _norm(spec, stack.final_norm, x)
        named.at("final_norm")("norm", normed.shape, (x,), (stack.final_norm,))
        x = normed
    return x


# --- embeddings and heads --------------------------------------------------------------------


def embed(spec: Spec, weights: Weights, tokens: Array, positions: Array,
          token_types: Array | None = None, probe: Probe = NO_PROBE) -> Array:
    """Token (+ position) (+ token type) embeddings, then the embedding norm, then the
    projection of factorised embeddings (embedding_dim e) to d_model.

    tokens (B, T) -> (B, T, d); positions (1|B, T) int (StackInput.positions), read from the
    learned table at position + position_offset (RoBERTa's rows start past padding_idx).
    """
    probe = probe.at("embed")
    x = weights.token_embedding[tokens]  # (B, T) -> (B, T, d)
    probe("token_embedding", x.shape, (tokens,), (weights.token_embedding,))
    if spec.scale_embeddings:  # Gemma: sqrt(d) as a float32 scalar, cast as transformers does
        x *= np.float32(spec.d_model**0.5).astype(x.dtype)
        probe("embed_scale", x.shape, (x,))
    elif spec.embedding_multiplier is not None:  # Granite: x * m, a Python float as torch's
        x *= x.dtype.type(spec.embedding_multiplier)
        probe("embed_scale", x.shape, (x,))
    rows = (tokens.shape[1], spec.d_model)  # the position rows added, as the trace lists them
    if spec.positions == "learned":
        x += weights.position_embedding[positions + spec.position_offset]  # (1|B, T, e)
        probe("position_embedding", x.shape, (x, rows), (weights.position_embedding,))
    elif spec.positions == "sinusoidal":
        x += sinusoidal(positions, spec.embedding_width, x.dtype)  # (1|B, T, e)
        probe("position_embedding", x.shape, (x, rows))
    if weights.token_type_embedding is not None:
        types = np.zeros_like(tokens) if token_types is None else token_types
        x += weights.token_type_embedding[types]  # (B, T) -> (B, T, d)
        probe("token_type_embedding", x.shape, (x, tokens), (weights.token_type_embedding,))
    if spec.embedding_project_first:  # DeBERTa: project, then norm d_model wide
        x = _embedding_project(weights, x, probe)
    if spec.embedding_norm:
        normed = apply_norm(spec.norm, weights.embedding_norm, x, spec.norm_eps,
                            spec.norm_unit_offset)
        probe("embedding_norm", normed.shape, (x,), (weights.embedding_norm,))
        x = normed
    if not spec.embedding_project_first:
        x = _embedding_project(weights, x, probe)
    return x


def _embedding_project(weights: Weights, x: Array, probe: Probe) -> Array:
    """Factorised embeddings to d_model: (B, T, e) @ (e, d) [+ (d,)] -> (B, T, d); x itself
    without a projection."""
    if weights.embedding_project is None:
        return x
    out = linear(x, weights.embedding_project, weights.embedding_project_bias)
    probe("embedding_project", out.shape, (x,),
          (weights.embedding_project, weights.embedding_project_bias))
    return out


def stack_tables(weights: Weights, stack: StackWeights | None) -> Weights:
    """`weights` with `stack`'s own position table and embedding norm in place of the shared
    ones (spec.per_stack_embeddings: BART), for embed(); else `weights` itself."""
    if stack is None or (stack.position_embedding is None and stack.embedding_norm is None):
        return weights
    return replace(weights, position_embedding=stack.position_embedding,
                   embedding_norm=stack.embedding_norm)


def output_logits(spec: Spec, weights: Weights, hidden: Array, probe: Probe = NO_PROBE) -> Array:
    """Vocabulary logits: (B, T, d) -> (B, T, V), soft-capped with final_logit_softcap; under
    head masked_lm, after its transform. Probes `logits` (and `softcap`)."""
    if spec.head == "masked_lm":
        hidden = mlm_transform(spec, weights, hidden, probe)  # (B, T, d)
    logits = _head_logits(spec, weights, hidden)  # a fresh array: capped in place
    matrix = weights.lm_head if weights.lm_head is not None else weights.token_embedding.T
    probe("logits", logits.shape, (hidden,),
          (matrix, weights.lm_head_bias, weights.final_logits_bias))
    if spec.logits_scaling is not None:  # Granite: logits / s
        logits /= logits.dtype.type(spec.logits_scaling)
        probe("logits_scaling", logits.shape, (logits,))
    if spec.final_logit_softcap is not None:
        softcap_(logits, spec.final_logit_softcap)
        probe("softcap", logits.shape, (logits,))
    return logits


def _head_logits(spec: Spec, weights: Weights, hidden: Array) -> Array:
    """Vocabulary logits: (B, T, d) -> (B, T, V), tied (token_embedding^T, no copy) or not."""
    if weights.lm_head is not None:
        logits = linear(hidden, weights.lm_head)  # (B, T, d) @ (d, V)
    else:
        if spec.tied_head_rescale:
            hidden = hidden * spec.d_model**-0.5  # T5: rescale before the tied head
        logits = linear(hidden, weights.token_embedding.T)  # (B, T, d) @ (d, V), a view
    if weights.lm_head_bias is not None:  # untied (Phi-2, GPT-J) or tied (masked_lm)
        logits += weights.lm_head_bias  # (V,)
    if weights.final_logits_bias is not None:  # BART's buffer
        logits += weights.final_logits_bias  # (1, V)
    return logits


def _heads(spec: Spec, weights: Weights, hidden: Array, probe: Probe,
           tokens: Array | None, mask: Array | None) -> tuple[Array | None, Array | None, Array | None]:
    """(vocabulary logits, pooled, classification scores) of the last stack's output; `tokens`
    and `mask` are that stack's input (a decoder's classifier finds each row's last token)."""
    logits = pooled = scores = None
    probe = probe.at("head")
    if spec.lm_head:
        logits = output_logits(spec, weights, hidden, probe)  # (B, T, V)
    if spec.pooler:
        act = pooler_activation(spec)  # tanh (BERT), relu (DistilBERT), gelu (ELECTRA)
        pooled = act(hidden[:, 0] @ weights.pooler_w + weights.pooler_b)  # (B, d) first token
        probe("pooler", pooled.shape, (hidden,), (weights.pooler_w, weights.pooler_b))
    if spec.num_labels is not None:  # a classification head
        scores = classify(spec, weights,
                          classifier_input(spec, hidden, pooled, tokens, mask, probe), probe)
    return logits, pooled, scores


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


def _encoder_decoder(spec: Spec, weights: Weights, x: Array, source: StackInput,
                     given: ModelInput, probe: Probe) -> ForwardOutput:
    """Encode the embedded source x (B, S, d), then decode the checked target against it."""
    encoded = forward_hidden(spec, weights.encoder, x, source, None, probe)  # (B, S, d)
    target = given.decoder_tokens
    inputs = StackInput.over(target.shape[1], True, given.decoder_attention_mask, encoded,
                             source.key_mask, like=target)
    y = embed(spec, stack_tables(weights, weights.decoder), target, inputs.positions, None,
              probe)  # (B, T, d)
    hidden = forward_hidden(spec, weights.decoder, y, inputs, None, probe)  # (B, T, d)
    logits, pooled, scores = _heads(spec, weights, hidden, probe, target,
                                    given.decoder_attention_mask)
    return ForwardOutput(hidden, logits, encoded, pooled, scores)


def _checked(spec: Spec, given: ModelInput) -> ModelInput:
    """Every side input checked (BadInputError) and in the engine's form; positions filled.
    Shape-only tokens (the trace's) have no values to check: positions 0..T-1."""
    if is_shaped(given.tokens):
        return replace(given, positions=default_positions(1, given.tokens.shape[1],
                                                          like=given.tokens))
    tokens = _as_tokens(spec, given.tokens, "tokens")
    positions = _as_positions(spec, given.positions, tokens)
    mask = _as_mask(given.attention_mask, tokens, "attention_mask")
    checked = ModelInput(tokens, mask, _as_token_types(spec, given.token_types, tokens), positions)
    if spec.family != "encoder-decoder":
        return checked
    target = given.decoder_tokens
    if target is None:
        target = np.zeros((tokens.shape[0], 1), dtype=np.int64)
    target = _as_tokens(spec, target, "decoder_tokens")
    _as_positions(spec, None, target)  # the target must fit a learned position table too
    target_mask = _as_mask(given.decoder_attention_mask, target, "decoder_attention_mask")
    return replace(checked, decoder_tokens=target, decoder_attention_mask=target_mask)


def forward(spec: Spec, weights: Weights, tokens: Array | ModelInput,
            observe: Observer | None = None) -> ForwardOutput:
    """Run the model on token ids (B, T), or a ModelInput with masks, token types, positions
    and (encoder-decoder) the target: `tokens` is then the source and `decoder_tokens` the
    target (default: one start token 0 per sequence, as T5)."""
    given = _checked(spec, tokens if isinstance(tokens, ModelInput) else ModelInput(tokens))
    probe = probe_for(observe)
    causal = spec.family == "decoder"
    inputs = StackInput(causal, given.positions, given.positions, 0, given.attention_mask)
    with blas_threads(1):  # all parallelism comes from the engine's own pool (parallel.py)
        first = weights.encoder if spec.has_encoder else weights.decoder  # the stack x enters
        x = embed(spec, stack_tables(weights, first), given.tokens, inputs.positions,
                  given.token_types, probe)
        if spec.family == "encoder-decoder":
            return _encoder_decoder(spec, weights, x, inputs, given, probe)
        stack = weights.decoder if causal else weights.encoder
        hidden = forward_hidden(spec, stack, x, inputs, None, probe)  # (B, T, d)
        logits, pooled, scores = _heads(spec, weights, hidden, probe, given.tokens,
                                        given.attention_mask)
        return ForwardOutput(hidden, logits, None, pooled, scores)


def _as_embeddings(spec: Spec, embeddings: Array) -> Array:
    embeddings = np.asarray(embeddings)
    if (embeddings.ndim != 3 or 0 in embeddings.shape or embeddings.shape[-1] != spec.d_model
            or not np.issubdtype(embeddings.dtype, np.floating)):
        raise BadInputError(f"embeddings must be a non-empty (batch, length, {spec.d_model}) "
                            f"float array for {spec.name} (d_model {spec.d_model}), got shape "
                            f"{embeddings.shape} of {embeddings.dtype}")
    if spec.family == "encoder-decoder":
        raise BadInputError(f"{spec.name} is an encoder-decoder: embeddings in place of tokens "
                            "are taken by decoder and encoder specs only")
    return embeddings


def forward_embeddings(spec: Spec, weights: Weights, embeddings: Array,
                       attention_mask: Array | None = None,
                       observe: Observer | None = None) -> ForwardOutput:
    """Run the model from its first block's input: `embeddings` (B, T, d_model) in place of
    embed()'s output (transformers' inputs_embeds after the whole embedding layer; the lessons'
    X, fed straight into the blocks), positions 0..T-1. Decoder and encoder specs."""
    x = _as_embeddings(spec, embeddings)
    mask = _as_mask(attention_mask, x[..., 0], "attention_mask")
    probe = probe_for(observe)
    causal = spec.family == "decoder"
    positions = default_positions(1, x.shape[1])
    inputs = StackInput(causal, positions, positions, 0, mask)
    with blas_threads(1):
        stack = weights.decoder if causal else weights.encoder
        hidden = forward_hidden(spec, stack, np.array(x, dtype=_weights_dtype(weights)), inputs,
                                None, probe)  # (B, T, d): a copy, the residual adds into it
        logits, pooled, scores = _heads(spec, weights, hidden, probe, None, mask)
        return ForwardOutput(hidden, logits, None, pooled, scores)


def _weights_dtype(weights: Weights) -> np.dtype:
    return weights.token_embedding.dtype
