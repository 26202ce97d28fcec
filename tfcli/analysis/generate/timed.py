"""`tfcli generate`: run the engine's generator, time it, and (optionally) check the KV cache
against recomputation or measure the speed-up."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfcli.analysis.allocation import MemoryEstimate, Workload, generate_estimate
from tfcli.analysis.run.finite import check_step, quiet_numerics
from tfcli.analysis.generate.mode import GenerationMode
from tfcli.analysis.model_source import Model
from tfcli.core.arrays import Array
from tfcli.core.dtypes import ENGINE_DTYPES
from tfcli.engine.generate import GenerationRequest, generate
from tfcli.engine.sampling import SamplingConfig
from tfcli.core.errors import BadInputError, Interrupted, clip, interrupt_signal
from tfcli.spec.counts import kv_cache_bytes
from tfcli.spec.model import Spec
from tfcli.checkpoints.tokenizer import (BYTE_VOCAB, ByteTokenizer, Tokenizer, fit_length, get_tokenizer,
                             parse_token_list)

# --check-cache passes when max |cached - uncached logit| <= CACHE_TOLERANCE[dtype] * scale, with
# scale = max(1, max |uncached logit|). The two runs round differently (other product shapes and
# summation orders) by a few eps per operation, in proportion to the values: measured up to
# 22 eps x scale (gpt2 12 layers, llama-2-7b 2 layers, t5-small; float32 and float64 alike), so
# 1024 eps leaves a ~50x margin. Relative, so large logits (1e4) do not fail a correct cache; the
# floor at 1 keeps near-zero logits from demanding agreement below eps.
CACHE_EPS_FACTOR = 1024
CACHE_TOLERANCE = {name: CACHE_EPS_FACTOR * float(np.finfo(name).eps)
                   for name in ENGINE_DTYPES}


@dataclass(frozen=True)
class Timed:
    """One generation run: tokens, timing, logits per step, cache bytes allocated."""

    tokens: list[int]
    logits: list[Array]  # (V,) per step
    prefill_seconds: float  # until the first new token
    decode_seconds: float  # the remaining tokens
    cache_bytes: int

    @property
    def decode_steps(self) -> int:
        """Tokens after the first (which prefill produces)."""
        return max(len(self.tokens) - 1, 0)

    @property
    def decode_tokens_per_s(self) -> float:
        steps = len(self.tokens) - 1
        return steps / self.decode_seconds if steps > 0 and self.decode_seconds > 0 else 0.0

    @property
    def total_seconds(self) -> float:
        return self.prefill_seconds + self.decode_seconds


@dataclass(frozen=True)
class CacheCheck:
    identical_tokens: bool
    max_abs_logit_diff: float
    tolerance: float  # CACHE_TOLERANCE[dtype] * logit_scale
    logit_scale: float = 1.0  # max(1, max |logit|) of the uncached run

    @property
    def ok(self) -> bool:
        return self.identical_tokens and self.max_abs_logit_diff <= self.tolerance

    @property
    def failure(self) -> str | None:
        """Why the check failed, in one line (the command's exit-1 message); None when ok."""
        if self.ok:
            return None
        return (f"cached and uncached generation differ: tokens identical {self.identical_tokens}, "
                f"max |logit difference| {self.max_abs_logit_diff:.3e} > {self.tolerance:.3g} "
                f"(= {CACHE_EPS_FACTOR} eps x the logits' scale {self.logit_scale:.3g})")


@dataclass(frozen=True)
class GenerateResult:
    spec_name: str
    origin: str
    dtype: str
    prompt_tokens: list[int]
    new_tokens: list[int]
    text: str | None  # prompt + generated, decoded; None without a tokenizer
    new_text: str | None
    cached: Timed | None
    uncached: Timed | None
    kv_formula_bytes: int  # tfcli.spec.counts.kv_cache_bytes for this run
    check: CacheCheck | None
    notes: list[str] = field(default_factory=list)
    interrupted_by: int | None = None  # the signal that cut the generation short (2: Ctrl-C)

    @property
    def kv_allocated_bytes(self) -> int:
        """What the cached run's KV cache allocated; 0 without a cached run."""
        return self.cached.cache_bytes if self.cached else 0

    @property
    def kv_matches_formula(self) -> bool:
        """The allocated KV cache is exactly the bytes tfcli.spec.counts.kv_cache_bytes predicts."""
        return self.kv_allocated_bytes == self.kv_formula_bytes

    @property
    def interruption(self) -> Interrupted | None:
        """The stop to raise once this partial result is written (the CLI exits 128 + n)."""
        if self.interrupted_by is None:
            return None
        return Interrupted(self.interrupted_by, self.notes[-1])

    @property
    def speedup(self) -> float | None:
        if self.cached is None or self.uncached is None or self.cached.total_seconds == 0:
            return None
        return self.uncached.total_seconds / self.cached.total_seconds

    def to_dict(self) -> dict[str, Any]:
        def timing(t: Timed | None) -> dict[str, Any] | None:
            if t is None:
                return None
            return {"prefill_seconds": t.prefill_seconds, "decode_seconds": t.decode_seconds,
                    "decode_tokens_per_s": t.decode_tokens_per_s, "cache_bytes": t.cache_bytes}

        return {
            "spec": self.spec_name, "weights": self.origin, "dtype": self.dtype,
            "prompt_tokens": self.prompt_tokens, "tokens": self.new_tokens,
            "text": self.text, "new_text": self.new_text,
            "cached": timing(self.cached), "uncached": timing(self.uncached),
            "kv_cache_bytes": {"formula": self.kv_formula_bytes,
                               "allocated": self.kv_allocated_bytes},
            "speedup": self.speedup,
            "check": None if self.check is None else {
                "identical_tokens": self.check.identical_tokens,
                "max_abs_logit_diff": self.check.max_abs_logit_diff,
                "tolerance": self.check.tolerance, "logit_scale": self.check.logit_scale,
                "ok": self.check.ok},
            "notes": self.notes,
            "interrupted": self.interrupted_by is not None,
        }

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        return ["step", "token"], [[i, t] for i, t in enumerate(self.new_tokens)]


@dataclass(frozen=True)
class Prompt:
    ids: list[int]
    tokenizer: Tokenizer | None  # None: --tokens on a spec no tokenizer fits
    notes: tuple[str, ...] = ()


def prompt_tokens(model: Model, prompt: str | None, tokens: str | None, *,
                  max_new_tokens: int = 0, truncate: bool = False) -> Prompt:
    """Prompt ids from --text (tokenised alone) or --tokens; exactly one must be given. A
    --text that leaves no room for max_new_tokens is refused, or with `truncate` cut to its
    last tokens (an encoder-decoder's source: its first, as `tfcli run` does)."""
    if (prompt is None) == (tokens is None):
        raise BadInputError("give the prompt as TEXT (or --text) or as --tokens: exactly one")
    if truncate and prompt is None:
        raise BadInputError("--truncate cuts --text; it does not apply to --tokens")
    if tokens is not None:
        return Prompt(parse_token_list(tokens, model.spec.vocab_size), _optional_tokenizer(model))
    spec = model.spec
    tokenizer = get_tokenizer(spec.vocab_size, model.weights_dir, "--text")
    if spec.family == "encoder-decoder":
        encoded = fit_length(tokenizer, prompt or "", "--text", spec.max_seq_len,
                             truncate=truncate,
                             model_why=f"max_seq_len of {spec.name} is {spec.max_seq_len:,}")
    else:
        room = spec.max_seq_len - max_new_tokens
        if room < 1:
            raise BadInputError(f"--max-new-tokens {max_new_tokens:,} leaves no room for a prompt "
                                f"in max_seq_len {spec.max_seq_len:,} of {spec.name}")
        encoded = fit_length(tokenizer, prompt or "", "--text", room, truncate=truncate,
                             keep="end", model_why=f"max_seq_len {spec.max_seq_len:,} of {spec.name} "
                             f"less {max_new_tokens:,} new tokens leaves {room:,}")
    if not encoded.ids:
        raise BadInputError("--text is empty: nothing to continue")
    return Prompt(encoded.ids, tokenizer, (encoded.note,) if encoded.note else ())


def stop_tokens(model: Model, stop_token: int | None,
                ignore_eos: bool) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The ids that end generation (the checkpoint's EOS unless `ignore_eos`, then --stop-token)
    and a note when --ignore-eos has no end-of-sequence token to ignore (random weights)."""
    from tfcli.checkpoints.eos import eos_tokens

    extra = () if stop_token is None else (stop_token,)
    if not ignore_eos:
        eos = eos_tokens(model.weights_dir, model.spec.vocab_size)
        return eos + tuple(t for t in extra if t not in eos), ()
    try:
        has_eos = bool(eos_tokens(model.weights_dir, model.spec.vocab_size))
    except BadInputError:  # a malformed eos_token_id: --ignore-eos is the way past it
        has_eos = True
    if has_eos:
        return extra, ()
    source = f"{clip(str(model.weights_dir))} has" if model.weights_dir else "random weights have"
    return extra, (f"--ignore-eos has no effect: {source} no end-of-sequence token",)


def generate_plan(spec: Spec, dtype: type, *, prompt: str | None, tokens: str | None,
                  max_new_tokens: int, mode: GenerationMode) -> MemoryEstimate:
    """The whole generation's memory estimate (weights, KV cache, activations, the logits kept
    per step), before any weight exists; load_model calls it. A prompt's length is bounded
    before tokenizing (each token covers at least one UTF-8 byte) and by max_seq_len."""
    given = prompt if prompt is not None else tokens or ""
    length = 4 * len(given) + 8 if prompt is not None else given.count(",") + 1
    new = min(max_new_tokens, spec.max_seq_len)  # more is refused by the request check
    work = Workload(seq_len=min(length, spec.max_seq_len), new_tokens=new, mode=mode)
    return generate_estimate(spec, dtype, work)


def _optional_tokenizer(model: Model) -> Tokenizer | None:
    try:
        return get_tokenizer(model.spec.vocab_size, model.weights_dir)
    except BadInputError:
        return None


def _prompt_ids(request: GenerationRequest) -> list[int]:
    """The one prompt a `tfcli generate` request carries (the engine also takes batches)."""
    prompts = request.prompts
    first = np.asarray(prompts[0]) if len(prompts) == 1 else None
    if first is None or first.ndim != 1:
        raise BadInputError("generate_text runs one prompt: GenerationRequest(prompts=(ids,), ...)")
    return [int(t) for t in first]


def _run(model: Model, request: GenerationRequest, use_cache: bool,
         on_token: Callable[[list[int]], None] | None) -> tuple[Timed, int | None]:
    """One generation run, and the signal that stopped it early (None: it ran to the end).
    Ctrl-C (or SIGTERM / SIGHUP, raised as Interrupted by the CLI's guard) keeps the tokens
    produced so far instead of losing them."""
    prompt = _prompt_ids(request)
    tokens: list[int] = []
    logits: list[Array] = []
    start = time.perf_counter()
    first = start
    cache_bytes = 0
    stopped: int | None = None
    try:
        with quiet_numerics():  # NaN / inf logits are reported by check_step, not NumPy warnings
            for step in generate(model.spec, model.weights, request, use_cache=use_cache):
                if not tokens:
                    first = time.perf_counter()
                check_step(model, step.logits, prompt, tokens)
                logits.append(step.logits[0])
                cache_bytes = step.cache_bytes
                tokens.append(int(step.tokens[0]))  # last: a token counts once all is kept
                if on_token is not None:
                    on_token(tokens)
                if bool(step.finished[0]):
                    break
    except KeyboardInterrupt as stop:
        stopped = interrupt_signal(stop)
    end = time.perf_counter()
    del logits[len(tokens):]  # a stop between the two appends
    return Timed(tokens, logits, first - start, max(end - first, 0.0), cache_bytes), stopped


def _compare(cached: Timed, uncached: Timed, dtype: str) -> CacheCheck:
    same = cached.tokens == uncached.tokens
    steps = min(len(cached.logits), len(uncached.logits))
    diff = max((float(np.abs(cached.logits[i] - uncached.logits[i]).max()) for i in range(steps)),
               default=0.0)
    scale = max([1.0] + [float(np.abs(step).max()) for step in uncached.logits])
    return CacheCheck(same, diff, CACHE_TOLERANCE[dtype] * scale, scale)


def generate_text(model: Model, request: GenerationRequest, tokenizer: Tokenizer | None = None, *,
                  notes: Sequence[str] = (), mode: GenerationMode = GenerationMode.cache,
                  on_token: Callable[[list[int]], None] | None = None) -> GenerateResult:
    """Run `request` (one prompt) as `mode` asks and time it; the engine gets the request as it
    is. `tokenizer` decodes the text (None: ids only); `notes` are the prompt's (what --truncate
    cut); `on_token` sees the tokens so far after each step (of the cached run when both run).

    Interrupted (Ctrl-C; SIGTERM or SIGHUP, which the CLI raises as errors.Interrupted), it
    returns what was produced so far, with `interrupted_by` set and a note saying so; raise
    `result.interruption` to pass the stop on (the CLI writes the result first, then exits
    128 + n). A second run (--check-cache, --compare) is not started after a stop."""
    cached, stopped = _run(model, request, True, on_token) if mode.runs_cached else (None, None)
    uncached = None
    if mode.runs_uncached and stopped is None:
        uncached, stopped = _run(model, request, False, None if mode.runs_both else on_token)
    main = cached or uncached  # every mode runs at least one
    new = main.tokens if main else []
    prompt = _prompt_ids(request)
    spec = model.spec
    source_len = len(prompt) if spec.family == "encoder-decoder" else 0
    decoder_prompt = 1 if spec.family == "encoder-decoder" else len(prompt)
    formula = kv_cache_bytes(spec, context=decoder_prompt + request.max_new_tokens, batch=1,
                             dtype=model.dtype, source_len=source_len)
    check = _compare(cached, uncached, model.dtype) if cached and uncached else None
    prompt_text = tokenizer.decode(prompt) if tokenizer else None
    new_text = tokenizer.decode(new) if tokenizer else None
    return GenerateResult(
        spec_name=spec.name, origin=model.origin, dtype=model.dtype, prompt_tokens=prompt,
        new_tokens=new, text=None if prompt_text is None else prompt_text + (new_text or ""),
        new_text=new_text, cached=cached, uncached=uncached, kv_formula_bytes=formula,
        check=check, notes=[*notes, *_sampling_notes(request.sampling),
                            *_stop_notes(request, new, tokenizer), *_byte_notes(tokenizer, new),
                            *_interrupted_notes(stopped, request, new)],
        interrupted_by=stopped,
    )


def _interrupted_notes(stopped: int | None, request: GenerationRequest,
                       new: list[int]) -> list[str]:
    """The last note of a generation cut short (GenerateResult.interruption says it again)."""
    if stopped is None:
        return []
    name = signal.Signals(stopped).name if stopped in signal.valid_signals() else f"signal {stopped}"
    return [f"interrupted ({name}) after {len(new)} of {request.max_new_tokens} new tokens: "
            "the result holds the tokens produced so far"]


def _stop_notes(request: GenerationRequest, new: list[int],
                tokenizer: Tokenizer | None) -> list[str]:
    """Say so when generation ended at a stop token rather than at max_new_tokens."""
    if not new or new[-1] not in request.stop_tokens or len(new) >= request.max_new_tokens:
        return []
    token = f"{tokenizer.token_text(new[-1])!r} " if tokenizer else ""
    return [f"stopped at the stop token {token}(id {new[-1]}) after {len(new)} of "
            f"{request.max_new_tokens} new tokens; --ignore-eos continues past the checkpoint's "
            "end-of-sequence token"]


def _sampling_notes(sampling: SamplingConfig) -> list[str]:
    if sampling.temperature == 0 and (sampling.top_k or sampling.top_p is not None):
        return ["--top-k / --top-p only shape sampling; with --temperature 0 (greedy) they have "
                "no effect"]
    return []


def _byte_notes(tokenizer: Tokenizer | None, new: list[int]) -> list[str]:
    """Why the text shows <id>s: the byte tokenizer has 256 ids, a spec's vocabulary more (or
    a tokenizer.json fewer ids than the model's vocabulary)."""
    outside = 0 if tokenizer is None else sum(1 for t in new if not tokenizer.covers(t))
    if tokenizer is None or outside == 0:
        return []
    if isinstance(tokenizer, ByteTokenizer):
        return [f"{outside} of {len(new)} new ids are >= {BYTE_VOCAB}: no UTF-8 byte, so the text "
                f"shows them as <id> (the byte tokenizer covers ids 0-255; a model with random "
                f"weights spreads over its whole vocabulary)"]
    return [f"{outside} of {len(new)} new ids have no token in {tokenizer.name}, so the text "
            f"shows them as <id> (the model's vocabulary is larger than the tokenizer's)"]
