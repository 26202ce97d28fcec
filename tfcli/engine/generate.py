"""Autoregressive generation (gpt-fast style): encode once, prefill the prompt into the KV
cache, then one cached decode step per new token. `use_cache=False` recomputes the whole
prefix every step instead: the baseline the cache is measured against.

Prompts of different lengths are LEFT-padded into one batch: every sequence then ends at the
same cache slot, so one decode step serves all of them. A per-slot key mask hides the padding
and per-slot position ids restart at 0 where each real prompt starts, so each sequence sees
exactly what it would see alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.blas import CoreWatch, blas_threads, idle_cores
from tfcli.engine.cache import KVCache
from tfcli.engine.inputs import StackInput
from tfcli.engine.model import embed, forward_hidden, output_logits, stack_tables
from tfcli.engine.parallel import WORKERS
from tfcli.engine.positions import default_positions
from tfcli.engine.sampling import SamplingConfig, sample
from tfcli.engine.weights import Weights
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

PAD_ID = 0  # what fills left padding; never attended to


@dataclass(frozen=True)
class GenerationStep:
    step: int  # 0-based index of the new token
    tokens: Array  # (B,) the token chosen for each sequence (stop token again once finished)
    logits: Array  # (B, V) the logits it was chosen from (before temperature / truncation)
    finished: Array  # (B,) bool, True once a sequence has produced the stop token
    cache_bytes: int = 0  # bytes the KV cache actually allocated (0 when uncached)


@dataclass(frozen=True)
class GenerationRequest:
    """What to generate: the one object passed from the command line to the engine.

    prompts: one token sequence, a (B, L) array, or a list of sequences of any lengths. For
    encoder-decoder they are the sources; the decoder starts from `decoder_start`, by default
    the spec's decoder_start_token_id (T5: 0; BART: 2).
    Generation stops after max_new_tokens, or once every sequence has produced one of
    `stop_tokens` (a finished sequence repeats the stop token it produced).
    """

    prompts: Sequence[Sequence[int]] | Array
    max_new_tokens: int
    sampling: SamplingConfig = SamplingConfig()
    stop_tokens: tuple[int, ...] = ()
    decoder_start: int | None = None


@dataclass(frozen=True)
class Batch:
    """The per-slot bookkeeping every step of one generation needs, fixed before the first.
    The defaults (UNBATCHED) put slot i at position i, with no padding and no encoder."""

    positions: Array | None = None  # (B, max_len) int, position id of each slot (0 on padding)
    key_mask: Array | None = None  # (B, max_len) bool, True on real tokens; None: no padding
    encoder_out: Array | None = None  # (B, S, d) encoder-decoder: the encoded sources
    encoder_mask: Array | None = None  # (B, S) bool, True on real source tokens; None: all


UNBATCHED = Batch()


# --- input checks (all before any work) ------------------------------------------------------


def _prompt_rows(prompts: Sequence[Sequence[int]] | Array) -> list[Array]:
    array = prompts if isinstance(prompts, np.ndarray) else None
    if array is not None and array.ndim == 1:
        return [array]
    if array is not None and array.ndim == 2:
        return list(array)
    if len(prompts) and all(isinstance(p, (int, np.integer)) for p in prompts):
        return [np.asarray(prompts)]  # one flat prompt
    rows = [np.asarray(p) for p in prompts]
    if not rows:
        raise BadInputError("empty prompt: give at least one token sequence")
    if any(r.ndim != 1 for r in rows):
        raise BadInputError("prompts must be one token sequence or a list of token sequences")
    return rows


def check_request(spec: Spec, rows: list[Array], request: GenerationRequest) -> None:
    """Every reason generation cannot run, raised as BadInputError before any compute."""
    max_new_tokens = request.max_new_tokens
    if spec.family == "encoder":
        raise BadInputError(f"{spec.name} is encoder-only: generation needs a decoder")
    if not spec.lm_head:
        raise BadInputError(f"{spec.name} has no output head (lm_head: false): cannot generate")
    if max_new_tokens < 0:
        raise BadInputError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if not rows or any(r.size == 0 for r in rows):
        raise BadInputError("empty prompt: give at least one token per sequence")
    for r in rows:
        if not np.issubdtype(r.dtype, np.integer):
            raise BadInputError(f"prompt token ids must be integers, got {r.dtype}")
        if r.min() < 0 or r.max() >= spec.vocab_size:
            bad = int(r[(r < 0) | (r >= spec.vocab_size)][0])
            raise BadInputError(f"token id {bad} is outside the vocabulary [0, {spec.vocab_size})")
    request.sampling.validate()
    named = [("stop_token", t) for t in request.stop_tokens]
    if request.decoder_start is not None:
        named.append(("decoder_start", request.decoder_start))
    for name, token in named:
        if not 0 <= token < spec.vocab_size:  # would never match / index
            raise BadInputError(f"{name} {token} is outside the vocabulary [0, {spec.vocab_size})")
    decoder_len = (1 if spec.family == "encoder-decoder" else max(r.size for r in rows))
    if spec.family == "encoder-decoder" and max(r.size for r in rows) > spec.max_seq_len:
        raise BadInputError(f"source of {max(r.size for r in rows)} tokens exceeds "
                            f"max_seq_len {spec.max_seq_len} of {spec.name}")
    if decoder_len + max_new_tokens > spec.max_seq_len and not _grows_past_context(spec):
        raise BadInputError(
            f"{decoder_len} prompt tokens + {max_new_tokens} new tokens = "
            f"{decoder_len + max_new_tokens} exceeds max_seq_len {spec.max_seq_len} of {spec.name}"
        )


def _grows_past_context(spec: Spec) -> bool:
    """Dynamic NTK RoPE grows its base with the sequence, so no length ends it: max_seq_len
    (the original context times the factor, as the config reader sets it) is a claim, not a
    table's end, and transformers generates on past it; so does generate (bounded by memory)."""
    scaling = spec.rope_scaling
    return spec.positions == "rope" and scaling is not None and scaling.type == "dynamic"


# --- batching --------------------------------------------------------------------------------


def left_pad(rows: list[Array], max_len: int) -> tuple[Array, Batch]:
    """Left-pad prompts to one length: tokens (B, L), PAD_ID before each prompt, and the
    bookkeeping covering max_len slots."""
    length = max(r.size for r in rows)
    pads = np.array([length - r.size for r in rows])  # (B,)
    tokens = np.full((len(rows), length), PAD_ID, dtype=np.int64)  # (B, L)
    for i, r in enumerate(rows):
        tokens[i, pads[i]:] = r
    slots = np.arange(max_len)[None, :]  # (1, max_len)
    key_mask = slots >= pads[:, None]  # (B, max_len)
    positions = np.maximum(slots - pads[:, None], 0)  # (B, max_len)
    return tokens, Batch(positions, key_mask if pads.any() else None)


def right_pad(rows: list[Array]) -> tuple[Array, Array | None]:
    """Encoder sources, right-padded: tokens (B, S) and mask (B, S), or None if all equal."""
    length = max(r.size for r in rows)
    tokens = np.full((len(rows), length), PAD_ID, dtype=np.int64)  # (B, S)
    mask = np.zeros((len(rows), length), dtype=bool)  # (B, S)
    for i, r in enumerate(rows):
        tokens[i, : r.size], mask[i, : r.size] = r, True
    return tokens, (None if mask.all() else mask)


# --- model steps -----------------------------------------------------------------------------


def encode(spec: Spec, weights: Weights, source: Array, mask: Array | None = None) -> Array:
    """The encoder of an encoder-decoder, run once: (B, S) -> (B, S, d)."""
    inputs = StackInput.over(source.shape[1], False, mask)
    x = embed(spec, stack_tables(weights, weights.encoder), source, inputs.positions)  # (B, S, d)
    with blas_threads(1):  # all parallelism comes from the engine's own pool (parallel.py)
        return forward_hidden(spec, weights.encoder, x, inputs)


def _step_input(tokens: Array, cache: KVCache | None, start: int, batch: Batch) -> StackInput:
    """The decoder's StackInput for tokens (B, t) occupying slots [start, start + t)."""
    end = start + tokens.shape[1]
    key_from = start if cache is None else 0  # uncached runs see only the tokens given
    if batch.positions is not None:
        positions = batch.positions[:, start:end]  # (B, t)
        key_positions = batch.positions[:, key_from:end]  # (B, S)
    else:  # slot i holds position i, for the embedding as much as for RoPE / bias
        positions = default_positions(1, tokens.shape[1], start)  # (1, t)
        key_positions = default_positions(1, end) if cache is not None else positions  # (1, S)
    key_mask = None if batch.key_mask is None else batch.key_mask[:, key_from:end]  # (B, S)
    return StackInput(True, positions, key_positions, start if cache is not None else 0,
                      key_mask, batch.encoder_out, batch.encoder_mask)


def _decoder_logits(spec: Spec, weights: Weights, tokens: Array, cache: KVCache | None,
                    start: int, batch: Batch) -> Array:
    """Run tokens (B, t) occupying slots [start, start + t); logits (B, V) of the last slot.
    BLAS threads are the caller's (1 unless a decode step was given idle cores)."""
    inputs = _step_input(tokens, cache, start, batch)
    x = embed(spec, stack_tables(weights, weights.decoder), tokens, inputs.positions)  # (B, t, d)
    hidden = forward_hidden(spec, weights.decoder, x, inputs, cache)
    return output_logits(spec, weights, hidden[:, -1])  # (B, d) -> (B, V)


def prefill(spec: Spec, weights: Weights, tokens: Array, cache: KVCache,
            batch: Batch = UNBATCHED) -> Array:
    """Run the prompt (B, T) once, filling cache slots [0, T); logits (B, V) of the last slot.
    Starts the cache afresh, cross-attention K/V included (a new source may come with it)."""
    cache.reset()
    with blas_threads(1):  # all parallelism comes from the engine's own pool (parallel.py)
        return _decoder_logits(spec, weights, tokens, cache, 0, batch)


def decode_step(spec: Spec, weights: Weights, token: Array, pos: int, cache: KVCache,
                batch: Batch = UNBATCHED) -> Array:
    """Run one token per sequence (B,) at cache slot `pos` against the cache; logits (B, V).
    Its weight-bound products run on the caller's BLAS threads (generate: blas.idle_cores)."""
    step = token.reshape(-1, 1)  # (B,) -> (B, 1)
    return _decoder_logits(spec, weights, step, cache, pos, batch)


def rope_refresh_slot(spec: Spec, batch: Batch, prompt_len: int, max_len: int) -> int | None:
    """The decode slot at which a LongRoPE table switches from its short factors to its long
    ones (the sequence grows past original_max_seq_len), or None. Keys cached before it were
    rotated with the short factors, which a recomputation of the whole sequence never uses;
    generate re-encodes the sequence at that slot (as transformers' Phi-3 generate does), so
    the cache keeps equal to recomputation."""
    scaling = spec.rope_scaling
    if scaling is None or scaling.type != "longrope" or spec.positions != "rope":
        return None
    top = np.arange(max_len) if batch.positions is None else batch.positions.max(axis=0)  # (max_len,)
    original = scaling.original_max_seq_len or 0
    if top[prompt_len - 1] >= original:  # the prompt already runs on the long factors
        return None
    later = np.flatnonzero(top >= original)  # slots whose position needs the long factors
    return int(later[0]) if later.size else None


def _uncached_logits(spec: Spec, weights: Weights, sequence: Array, batch: Batch) -> Array:
    """The whole prefix (B, L) recomputed from scratch; logits (B, V) of its last slot."""
    with blas_threads(1):
        return _decoder_logits(spec, weights, sequence, None, 0, batch)


# --- the loop --------------------------------------------------------------------------------


def generate(spec: Spec, weights: Weights, request: GenerationRequest, *,
             use_cache: bool = True) -> Iterator[GenerationStep]:
    """Yield one GenerationStep per new token, as soon as it is chosen. Every bad request is
    refused (BadInputError) by the call itself, before the first step.

    `use_cache=False` recomputes the whole prefix every step (the baseline the cache is
    measured against); the tokens are the same.
    """
    rows = _prompt_rows(request.prompts)
    check_request(spec, rows, request)
    return _generate(spec, weights, rows, request, use_cache)


def _decode_threads(watch: CoreWatch | None, threads: int, first: bool) -> int:
    """BLAS threads for the next decode step: the cores left free since the last reading (the
    prefill and earlier steps); before the first step, a 20 ms sample if prefill was too short
    to read."""
    if watch is None:
        return 1
    reading = watch.reading()
    if reading is not None:
        return reading
    return idle_cores(watch.cores) if first else threads


def _generate(spec: Spec, weights: Weights, rows: list[Array], request: GenerationRequest,
              use_cache: bool) -> Iterator[GenerationStep]:
    config, max_new_tokens = request.sampling, request.max_new_tokens
    stops = np.asarray(request.stop_tokens, dtype=np.int64)  # (n_stop,)
    rng = np.random.default_rng(config.seed)
    encoder_out = encoder_mask = None
    if spec.family == "encoder-decoder":
        source, encoder_mask = right_pad(rows)
        encoder_out = encode(spec, weights, source, encoder_mask)  # (B, S, d)
        start = request.decoder_start
        rows = [np.array([spec.decoder_start_token_id if start is None else start])] * len(rows)
    max_len = max(r.size for r in rows) + max_new_tokens
    prompt, batch = left_pad(rows, max_len)  # (B, L)
    batch = replace(batch, encoder_out=encoder_out, encoder_mask=encoder_mask)
    dtype = weights.token_embedding.dtype
    source_len = 0 if encoder_out is None else encoder_out.shape[1]
    cache = KVCache(spec, len(rows), max_len, dtype, source_len) if use_cache else None
    sequence = prompt  # (B, L), grows by one column per step (only read when uncached)
    finished = np.zeros(len(rows), dtype=bool)
    held = np.zeros(len(rows), dtype=np.int64)  # (B,) last tokens, repeated once finished
    watch = CoreWatch(WORKERS) if use_cache and max_new_tokens > 1 and WORKERS > 1 else None
    threads = 1
    refresh = rope_refresh_slot(spec, batch, prompt.shape[1], max_len) if use_cache else None
    for step in range(max_new_tokens):
        slot = prompt.shape[1] + step - 1  # slot of the newest token
        if cache is None:
            logits = _uncached_logits(spec, weights, sequence, batch)
        elif step == 0:
            logits = prefill(spec, weights, prompt, cache, batch)
        elif slot == refresh:  # LongRoPE's long factors from here: every key rotated anew
            logits = prefill(spec, weights, sequence, cache, batch)
        else:
            threads = _decode_threads(watch, threads, first=step == 1)
            with blas_threads(threads):
                logits = decode_step(spec, weights, tokens, slot, cache, batch)  # noqa: F821 (last step's)
        tokens = sample(logits, config, rng)  # (B,)
        if stops.size:
            tokens = np.where(finished, held, tokens)  # a finished row repeats its stop token
            held = tokens
            finished = finished | np.isin(tokens, stops)
        yield GenerationStep(step, tokens, logits, finished.copy(),
                             cache.nbytes if cache is not None else 0)
        if finished.all():
            return
        if cache is None or refresh is not None:
            sequence = np.concatenate([sequence, tokens[:, None]], axis=1)  # (B, L + step + 1)
