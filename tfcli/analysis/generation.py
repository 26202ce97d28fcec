"""`tfcli generate`: run the engine's generator, time it, and (optionally) check the KV cache
against recomputation or measure the speed-up."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfcli.analysis.memory import MemoryEstimate, Workload, generate_estimate
from tfcli.analysis.model_source import Model
from tfcli.analysis.params import kv_cache_bytes
from tfcli.engine.generate import generate
from tfcli.errors import BadInputError
from tfcli.spec import Spec
from tfcli.tokenizer import Tokenizer, get_tokenizer, parse_token_list

Array = np.ndarray
CACHE_TOLERANCE = {"float32": 1e-4, "float64": 1e-9}  # max |logit difference| cached vs not


@dataclass(frozen=True)
class GenerateRequest:
    prompt_tokens: list[int]
    max_new_tokens: int
    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int = 0
    stop_token: int | None = None


@dataclass(frozen=True)
class Timed:
    """One generation run: tokens, timing, logits per step, cache bytes allocated."""

    tokens: list[int]
    logits: list[Array]  # (V,) per step
    prefill_seconds: float  # until the first new token
    decode_seconds: float  # the remaining tokens
    cache_bytes: int

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
    tolerance: float

    @property
    def ok(self) -> bool:
        return self.identical_tokens and self.max_abs_logit_diff <= self.tolerance


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
    kv_formula_bytes: int  # tfcli.analysis.params.kv_cache_bytes for this run
    check: CacheCheck | None
    notes: list[str] = field(default_factory=list)

    @property
    def main(self) -> Timed:
        run = self.cached or self.uncached
        if run is None:  # generate_text always fills one of them
            raise ValueError("no generation run recorded")
        return run

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
                               "allocated": self.cached.cache_bytes if self.cached else 0},
            "speedup": self.speedup,
            "check": None if self.check is None else {
                "identical_tokens": self.check.identical_tokens,
                "max_abs_logit_diff": self.check.max_abs_logit_diff,
                "tolerance": self.check.tolerance, "ok": self.check.ok},
            "notes": self.notes,
        }

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        return ["step", "token"], [[i, t] for i, t in enumerate(self.new_tokens)]


def prompt_tokens(model: Model, prompt: str | None, tokens: str | None) -> tuple[list[int], Tokenizer | None]:
    """Prompt ids from --prompt (tokenised) or --tokens; exactly one must be given."""
    if (prompt is None) == (tokens is None):
        raise BadInputError("give exactly one of --prompt or --tokens")
    if tokens is not None:
        ids = parse_token_list(tokens, model.spec.vocab_size)
        tokenizer = _optional_tokenizer(model)
        return ids, tokenizer
    tokenizer = get_tokenizer(model.spec.vocab_size, model.weights_dir, "--prompt")
    ids = tokenizer.encode(prompt or "")
    if not ids:
        raise BadInputError("--prompt is empty: nothing to continue")
    return ids, tokenizer


def generate_plan(spec: Spec, dtype: type, *, prompt: str | None, tokens: str | None,
                  max_new_tokens: int, mode: str) -> MemoryEstimate:
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


def _run(model: Model, request: GenerateRequest, use_cache: bool,
         on_token: Callable[[list[int]], None] | None) -> Timed:
    steps = generate(
        model.spec, model.weights, [request.prompt_tokens], max_new_tokens=request.max_new_tokens,
        temperature=request.temperature, top_k=request.top_k, top_p=request.top_p,
        seed=request.seed, stop_token=request.stop_token, use_cache=use_cache,
    )
    tokens: list[int] = []
    logits: list[Array] = []
    start = time.perf_counter()
    first = start
    cache_bytes = 0
    for step in steps:
        if not tokens:
            first = time.perf_counter()
        tokens.append(int(step.tokens[0]))
        logits.append(step.logits[0])
        cache_bytes = step.cache_bytes
        if on_token is not None:
            on_token(tokens)
        if bool(step.finished[0]):
            break
    end = time.perf_counter()
    return Timed(tokens, logits, first - start, end - first, cache_bytes)


def _compare(cached: Timed, uncached: Timed, dtype: str) -> CacheCheck:
    same = cached.tokens == uncached.tokens
    steps = min(len(cached.logits), len(uncached.logits))
    diff = max((float(np.abs(cached.logits[i] - uncached.logits[i]).max()) for i in range(steps)),
               default=0.0)
    return CacheCheck(same, diff, CACHE_TOLERANCE[dtype])


def generate_text(model: Model, request: GenerateRequest, tokenizer: Tokenizer | None, *,
                  mode: str = "cache", on_token: Callable[[list[int]], None] | None = None,
                  ) -> GenerateResult:
    """mode: "cache" (default), "no-cache" (recompute the prefix each step), "check" or
    "compare" (run both; check compares tokens and logits, compare reports the speed-up)."""
    both = mode in ("check", "compare")
    cached = _run(model, request, True, on_token) if mode != "no-cache" else None
    uncached = _run(model, request, False, None if both else on_token) if mode != "cache" else None
    main = cached or uncached
    new = main.tokens if main else []
    spec = model.spec
    source_len = len(request.prompt_tokens) if spec.family == "encoder-decoder" else 0
    decoder_prompt = 1 if spec.family == "encoder-decoder" else len(request.prompt_tokens)
    formula = kv_cache_bytes(spec, context=decoder_prompt + request.max_new_tokens, batch=1,
                             dtype=model.dtype, source_len=source_len)
    check = _compare(cached, uncached, model.dtype) if cached and uncached else None
    prompt_text = tokenizer.decode(request.prompt_tokens) if tokenizer else None
    new_text = tokenizer.decode(new) if tokenizer else None
    return GenerateResult(
        spec.name, model.origin, model.dtype, request.prompt_tokens, new,
        None if prompt_text is None else prompt_text + (new_text or ""), new_text,
        cached, uncached, formula, check, _notes(request),
    )


def _notes(request: GenerateRequest) -> list[str]:
    if request.temperature == 0 and (request.top_k or request.top_p is not None):
        return ["--top-k / --top-p only shape sampling; with --temperature 0 (greedy) they have "
                "no effect"]
    return []
