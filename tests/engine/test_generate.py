"""Generation: cached == uncached at every step, left-padded batches == single prompts,
seeded sampling, sampler sets, and every bad request refused before any work."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from tests.engine.engine_specs import make_spec
from tfcli.engine.cache import KVCache
from tfcli.engine.generate import Batch, GenerationRequest, decode_step, encode, generate, prefill
from tfcli.engine.model import ModelInput, forward
from tfcli.engine.sampling import SamplingConfig, sample, top_k_filter, top_p_filter
from tfcli.engine.init import init_weights
from tfcli.core.errors import BadInputError

PROMPTS = [[5, 17, 3, 40, 22, 9, 1], [33, 8], [2, 60, 14, 7]]
N_NEW = 10
# Large initial weights make logits decisive, so argmax is not decided by rounding noise.
FAMILIES = ["gpt", "llama_gqa", "mistral_window", "moe", "t5", "relative_decoder",
            "mqa_sinusoidal", "vaswani"]


def _model(variant, dtype=np.float32, **changes):
    spec = make_spec(variant, init_std=0.3, **changes)
    return spec, init_weights(spec, seed=7, dtype=dtype)


def _generate(spec, w, prompts, *, max_new_tokens, use_cache=True, stop_token=None,
              decoder_start=0, **sampling):
    """generate() called with the old keyword arguments, packed into one GenerationRequest."""
    stops = () if stop_token is None else (stop_token,)
    request = GenerationRequest(prompts, max_new_tokens, SamplingConfig(**sampling), stops,
                                decoder_start)
    return generate(spec, w, request, use_cache=use_cache)


def _steps(spec, w, prompts, **kw):
    steps = list(_generate(spec, w, prompts, max_new_tokens=kw.pop("n", N_NEW), **kw))
    return np.stack([s.tokens for s in steps], 1), [s.logits for s in steps]


@pytest.mark.parametrize("variant", FAMILIES)
def test_cached_equals_uncached_at_every_step(variant):
    spec, w = _model(variant)
    cached, cached_logits = _steps(spec, w, PROMPTS, use_cache=True)
    plain, plain_logits = _steps(spec, w, PROMPTS, use_cache=False)
    np.testing.assert_array_equal(cached, plain)
    for a, b in zip(cached_logits, plain_logits):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("variant", FAMILIES)
def test_prefill_and_decode_steps_called_directly_match_a_full_forward(variant):
    """Without generate()'s batch bookkeeping, slot i must still be position i: the learned
    and sinusoidal embeddings as much as RoPE and the relative bias."""
    spec, w = _model(variant)
    sequence = np.array([[5, 17, 3, 40, 22, 9, 1, 33, 8]])  # (1, 9)
    n_prompt = 4
    decoder_in, source, encoder_out = sequence, None, None
    if spec.family == "encoder-decoder":
        source, decoder_in = sequence[:, :5], sequence[:, 3:]  # (1, 5), (1, 6)
        encoder_out = encode(spec, w, source)
    cache = KVCache(spec, 1, decoder_in.shape[1], source_len=0 if source is None else 5)
    side = Batch(encoder_out=encoder_out)
    steps = [prefill(spec, w, decoder_in[:, :n_prompt], cache, side)]
    for slot in range(n_prompt, decoder_in.shape[1]):
        steps.append(decode_step(spec, w, decoder_in[:, slot], slot, cache, side))
    if source is None:
        full = forward(spec, w, decoder_in).logits  # (1, T, V)
    else:
        full = forward(spec, w, ModelInput(source, decoder_tokens=decoder_in)).logits
    for i, logits in enumerate(steps):
        np.testing.assert_allclose(logits[0], full[0, n_prompt - 1 + i], rtol=1e-4, atol=1e-4)


def test_prefill_starts_a_reused_cache_afresh_cross_attention_included():
    spec, w = _model("t5")
    cache = KVCache(spec, 1, 4, source_len=5)
    target = np.array([[0, 7, 3]])
    for source in (np.array([[1, 2, 3, 4, 5]]), np.array([[9, 8, 7, 6, 5]])):
        logits = prefill(spec, w, target, cache, Batch(encoder_out=encode(spec, w, source)))
        expected = forward(spec, w, ModelInput(source, decoder_tokens=target)).logits[:, -1]
        np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)


def test_cached_equals_uncached_in_float64():
    spec, w = _model("llama_gqa", np.float64)
    _, cached = _steps(spec, w, PROMPTS[:1])
    _, plain = _steps(spec, w, PROMPTS[:1], use_cache=False)
    assert cached[0].dtype == np.float64
    for a, b in zip(cached, plain):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("variant", ["gpt", "llama_gqa", "mistral_window", "t5", "mqa_sinusoidal"])
def test_left_padded_batch_equals_each_prompt_alone(variant):
    spec, w = _model(variant)
    batch, batch_logits = _steps(spec, w, PROMPTS)
    for i, prompt in enumerate(PROMPTS):
        alone, alone_logits = _steps(spec, w, [prompt])
        np.testing.assert_array_equal(batch[i], alone[0])
        for a, b in zip(batch_logits, alone_logits):
            np.testing.assert_allclose(a[i], b[0], rtol=1e-4, atol=1e-4)


def test_sampling_is_reproducible_from_the_seed():
    spec, w = _model("gpt")
    kw = dict(temperature=1.0, top_k=20, top_p=0.9)
    first, _ = _steps(spec, w, PROMPTS, seed=11, **kw)
    again, _ = _steps(spec, w, PROMPTS, seed=11, **kw)
    other, _ = _steps(spec, w, PROMPTS, seed=12, **kw)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_sampled_cached_equals_sampled_uncached():
    spec, w = _model("moe")
    kw = dict(temperature=0.8, top_p=0.95, seed=3)
    np.testing.assert_array_equal(_steps(spec, w, PROMPTS, **kw)[0],
                                  _steps(spec, w, PROMPTS, use_cache=False, **kw)[0])


def test_stop_token_ends_each_sequence():
    """Each row is held at the stop token once it produces it (the others go on unchanged),
    and generation ends early once every row has."""
    spec, w = _model("gpt")
    free, _ = _steps(spec, w, PROMPTS, n=12)  # (B, 12) without a stop token
    stop = int(free[0, 2])  # the third token greedy picks for the first prompt
    steps = list(_generate(spec, w, PROMPTS, max_new_tokens=12, stop_token=stop))
    out = np.stack([s.tokens for s in steps], 1)  # (B, n)
    for row, expected in zip(out, free):
        hits = np.flatnonzero(expected[: out.shape[1]] == stop)
        if hits.size == 0:  # never stops: exactly the free-running tokens
            np.testing.assert_array_equal(row, expected[: out.shape[1]])
            continue
        first = hits[0]
        np.testing.assert_array_equal(row[: first + 1], expected[: first + 1])
        assert (row[first:] == stop).all()
    every_row_stops_at = [np.flatnonzero(r == stop) for r in free]
    if all(hits.size for hits in every_row_stops_at):
        assert out.shape[1] == max(hits[0] for hits in every_row_stops_at) + 1
    else:
        assert out.shape[1] == 12
    assert [bool(f) for f in steps[-1].finished] == [bool((r == stop).any()) for r in out]


def test_generation_ends_once_every_sequence_has_stopped():
    spec, w = _model("gpt")
    free, _ = _steps(spec, w, [PROMPTS[0]], n=12)  # one prompt: its own token stops it
    stop = int(free[0, 3])
    first = int(np.flatnonzero(free[0] == stop)[0])
    steps = list(_generate(spec, w, [PROMPTS[0]], max_new_tokens=12, stop_token=stop))
    assert len(steps) == first + 1 and steps[-1].finished.all()


def test_max_new_tokens_zero_yields_nothing():
    spec, w = _model("gpt")
    assert list(_generate(spec, w, PROMPTS, max_new_tokens=0)) == []


@pytest.mark.parametrize("variant, prompts, kw, message", [
    ("gpt", [[1, 2, 3]], {"max_new_tokens": 46}, "exceeds max_seq_len 48"),
    ("bert", [[1, 2, 3]], {"max_new_tokens": 2}, "encoder-only"),
    ("gpt", [[]], {"max_new_tokens": 2}, "empty prompt"),
    ("gpt", [], {"max_new_tokens": 2}, "empty prompt"),
    ("gpt", [[1, 61]], {"max_new_tokens": 2}, "token id 61 is outside the vocabulary"),
    ("gpt", [[1, -1]], {"max_new_tokens": 2}, "token id -1 is outside the vocabulary"),
    ("t5", [list(range(49))], {"max_new_tokens": 2}, "exceeds max_seq_len"),
    ("gpt", [[1]], {"max_new_tokens": 2, "top_p": 1.5}, "top_p"),
    ("gpt", [[1]], {"max_new_tokens": 2, "temperature": -1.0}, "temperature"),
    ("gpt", [[1]], {"max_new_tokens": 2, "temperature": float("nan")}, "temperature"),
    ("gpt", [[1]], {"max_new_tokens": 2, "temperature": float("inf")}, "temperature"),
    ("gpt", [[1]], {"max_new_tokens": 2, "temperature": 1.0, "top_k": 2.5}, "top_k"),
    ("gpt", np.zeros((0, 3), dtype=np.int64), {"max_new_tokens": 2}, "empty prompt"),
    ("t5", [[1, 2]], {"max_new_tokens": 2, "decoder_start": -1}, "decoder_start -1"),
    ("t5", [[1, 2]], {"max_new_tokens": 2, "decoder_start": 61}, "decoder_start 61"),
    ("gpt", [[1]], {"max_new_tokens": 2, "stop_token": 61}, "stop_token 61 is outside"),
    ("gpt", [[1]], {"max_new_tokens": 2, "stop_token": -1}, "stop_token -1 is outside"),
])
def test_bad_requests_fail_before_any_work(variant, prompts, kw, message):
    spec, w = _model(variant)
    with pytest.raises(BadInputError, match=message):
        _generate(spec, w, prompts, **kw)  # raised by the call itself, not on first next()


# --- samplers --------------------------------------------------------------------------------

logit_rows = arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(2, 30)),
                    elements=st.floats(-20, 20, allow_nan=False))


@settings(max_examples=80, deadline=None)
@given(logit_rows, st.integers(1, 30), st.integers(0, 2**32 - 1))
def test_top_k_never_samples_outside_the_k_largest(logits, k, seed):
    tokens = sample(logits, SamplingConfig(1.0, top_k=k), np.random.default_rng(seed))
    for row, token in zip(logits, tokens):
        assert row[token] >= np.sort(row)[::-1][min(k, row.size) - 1]
    assert np.isfinite(top_k_filter(logits, k)).sum(-1).min() >= min(k, logits.shape[1])


@settings(max_examples=80, deadline=None)
@given(logit_rows, st.floats(0.01, 1.0), st.integers(0, 2**32 - 1))
def test_top_p_never_samples_outside_the_nucleus(logits, p, seed):
    tokens = sample(logits, SamplingConfig(0.7, top_p=p), np.random.default_rng(seed))
    scaled = logits / 0.7
    for row, token in zip(scaled, tokens):
        probs = np.exp(row - row.max()) / np.exp(row - row.max()).sum()
        mass_above = probs[probs > probs[token]].sum()  # strictly more likely tokens
        assert mass_above < p + 1e-12  # the nucleus still needed the chosen token
    kept = np.isfinite(top_p_filter(scaled, p))
    assert kept[np.arange(len(scaled)), scaled.argmax(-1)].all()


def test_greedy_is_argmax():
    logits = np.array([[0.1, 3.0, -1.0], [5.0, 4.9, 0.0]])
    assert sample(logits, SamplingConfig(), np.random.default_rng(0)).tolist() == [1, 0]


def test_decode_threads_follow_the_core_watch(monkeypatch):
    """The first decode step takes a 20 ms sample when prefill was too short to read; later
    steps keep their thread count until the watch has a new reading, then follow it."""
    from tfcli.engine import generate as generate_module

    readings = iter([None, None, 1, None, 2, None])  # one per decode step
    monkeypatch.setattr(generate_module, "WORKERS", 2)
    monkeypatch.setattr(generate_module.CoreWatch, "reading", lambda self: next(readings))
    monkeypatch.setattr(generate_module, "idle_cores", lambda cores: 2)
    used, current = [], [None]  # BLAS thread counts seen by decode steps; the one set now
    real_step, real_threads = generate_module.decode_step, generate_module.blas_threads

    @contextmanager
    def recording_threads(n):
        current.append(n)
        with real_threads(n):
            yield
        current.pop()

    def recording_step(*args, **kwargs):
        used.append(current[-1])
        return real_step(*args, **kwargs)

    monkeypatch.setattr(generate_module, "blas_threads", recording_threads)

    monkeypatch.setattr(generate_module, "decode_step", recording_step)
    spec, w = _model("gpt")
    list(_generate(spec, w, PROMPTS[:1], max_new_tokens=7))
    assert used == [2, 2, 1, 1, 2, 2]
    used.clear()
    list(_generate(spec, w, PROMPTS[:1], max_new_tokens=7, use_cache=False))
    assert used == []  # uncached runs are matrix-matrix work: the engine's own pool



def test_top_k_keeps_logits_apart_that_the_max_shift_would_merge() -> None:
    """0 and 1e-300 minus a max of 2.1e-78 are the same float: choosing the top k after the shift
    let the (k+1)-th token through (found by hypothesis in CI)."""
    logits = np.array([[0.0, 2.1e-78, 1e-300]])
    drawn = {int(sample(logits, SamplingConfig(1.0, top_k=2), np.random.default_rng(seed))[0])
             for seed in range(400)}
    assert drawn == {1, 2}
