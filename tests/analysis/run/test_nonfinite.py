"""NaN / inf (issue 11, section 2): extreme settings refused up front, non-finite outputs found and
traced to where they first appear, sampling that cannot overflow, and a --check-cache tolerance
relative to the logits' scale."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import VALID_SPEC
from tfcli.analysis.generate import timed as generation
from tfcli.analysis.run.finite import (NonFiniteError, check_step, check_weights, first_nonfinite,
                                   is_finite)
from tfcli.analysis.generate.timed import CACHE_TOLERANCE, generate_text
from tfcli.analysis.generate.mode import GenerationMode
from tfcli.analysis.model_source import Model
from tfcli.analysis.run.forward import RunInputs, run_forward
from tfcli.engine.cache import KVCache
from tfcli.engine.generate import GenerationRequest
from tfcli.engine.model import ModelInput, forward
from tfcli.engine.sampling import MIN_TEMPERATURE, SamplingConfig, sample
from tfcli.engine.init import init_weights
from tfcli.engine.weights import named_arrays
from tfcli.core.errors import BadInputError, SpecConsistencyError, SpecError
from tfcli.spec.model import FLOAT32_TINY, INIT_STD_RANGE, Spec
from tfcli.spec.load import parse_spec_text
from tfcli.sources import load_spec

# A decoder without any norm: init_std 100 multiplies the residual stream by ~1e4 per block, so
# float32 overflows inside block 2 while float64 (max 1.8e308) stays finite for all 4 blocks.
NO_NORM = VALID_SPEC.replace("n_layers: 2", "n_layers: 4") + "norm: none\ninit_std: 100\n"
ENCODER = """\
name: tiny-encoder
family: encoder
vocab_size: 50
max_seq_len: 16
d_model: 16
n_heads: 2
n_layers: 2
d_ff: 32
norm_placement: post
embedding_norm: true
type_vocab_size: 2
pooler: true
"""
T5_LIKE = """\
name: tiny-t5
family: encoder-decoder
vocab_size: 40
max_seq_len: 16
d_model: 16
n_heads: 2
n_layers: 2
d_ff: 32
norm: rmsnorm
positions: relative
bias: false
activation: geglu
tied_head_rescale: true
attention_scale: 1.0
init_std: 0.5
"""


def model(text: str, dtype: str = "float32", seed: int = 0) -> Model:
    spec = parse_spec_text(text)
    return Model(spec, init_weights(spec, seed, np.dtype(dtype)), dtype, f"random (seed {seed})", None)


@contextmanager
def no_numpy_warnings() -> Iterator[None]:
    """Fails if a RuntimeWarning escapes (pytest would otherwise swallow it into its summary)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []


# --- 1. settings refused up front -----------------------------------------------------------


@pytest.mark.parametrize("value", [1e20, 1e4, 1e-7, 1e-30])
def test_init_std_outside_its_range_names_the_field_and_line(value: float) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec_text(VALID_SPEC + f"init_std: {value}\n", "s.yaml")
    assert info.value.message.startswith("s.yaml:9: field 'init_std': must lie in [1e-06, 1000]")


@pytest.mark.parametrize("value", [1e39, 2.0, 1e-39, 1e-50])
def test_norm_eps_outside_float32_or_above_one_is_refused(value: float) -> None:
    with pytest.raises(SpecError, match=r"s.yaml:9: field 'norm_eps': must lie in \[1.18e-38, 1\]"):
        parse_spec_text(VALID_SPEC + f"norm_eps: {value}\n", "s.yaml")


def test_the_range_ends_and_real_values_are_accepted() -> None:
    spec = parse_spec_text(VALID_SPEC)
    for std in (*INIT_STD_RANGE, 0.02, 1.0):
        assert spec.replace(init_std=std).init_std == std
    for eps in (FLOAT32_TINY, 1e-12, 1e-5, 1.0):
        assert spec.replace(norm_eps=eps).norm_eps == eps


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e-300, max_value=1e300))
def test_an_accepted_norm_eps_is_a_normal_nonzero_float32(eps: float) -> None:
    """The property the engine needs, checked against NumPy's float32 rather than our constant."""
    try:
        parse_spec_text(VALID_SPEC).replace(norm_eps=eps)
    except SpecConsistencyError:
        accepted = False
    else:
        accepted = True
    as32 = float(np.float32(eps)) if eps < 3.4e38 else math.inf
    representable = math.isfinite(as32) and as32 >= float(np.finfo(np.float32).tiny)
    assert accepted == (representable and eps <= 1.0)


def test_every_bundled_spec_stays_valid() -> None:
    from tfcli.analysis.catalog import build_catalog  # loads every bundled spec

    assert build_catalog().to_dict()


@pytest.mark.parametrize("temperature", [5e-324, 1e-300, 1e-7])
def test_tiny_temperatures_are_refused_with_the_bound(temperature: float) -> None:
    with pytest.raises(BadInputError, match="temperature must be 0 .greedy. or at least 1e-06"):
        SamplingConfig(temperature).validate()


def test_zero_and_the_minimum_temperature_are_accepted() -> None:
    SamplingConfig(0.0).validate()
    SamplingConfig(MIN_TEMPERATURE).validate()


# --- sampling cannot overflow -----------------------------------------------------------------


FLOAT32_MAX = float(np.finfo(np.float32).max)
finite32 = st.floats(min_value=-FLOAT32_MAX, max_value=FLOAT32_MAX, width=32)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite32, min_size=2, max_size=40),
       st.floats(min_value=5e-324, max_value=1e6), st.integers(0, 2**31))
def test_sampling_any_finite_logits_picks_a_token_that_can_win(values: list[float], temperature: float,
                                                               seed: int) -> None:
    """The sampler itself, below the CLI's MIN_TEMPERATURE too: logits / T overflowed float64 for
    T < ~1e-270 (3e38 / 5e-324) and turned the row NaN (token 0 every step); shifted by the max
    first, the draw is always a real token, and never one infinitely less likely."""
    logits = np.array([values], dtype=np.float32)  # (1, V)
    with no_numpy_warnings():
        token = int(sample(logits, SamplingConfig(temperature), np.random.default_rng(seed))[0])
    assert 0 <= token < logits.shape[1]
    with np.errstate(over="ignore"):  # gaps past float64 become -inf: probability 0
        shifted = (logits[0].astype(np.float64) - logits.max()) / temperature
    assert np.exp(shifted[token]) > 0  # a token with zero probability was never drawn


@pytest.mark.parametrize("temperature", [5e-324, 1e-300, MIN_TEMPERATURE])
def test_a_tiny_temperature_on_huge_logits_is_greedy(temperature: float) -> None:
    logits = np.array([[3e38, -3e38, 2.9e38, 0.0, 1.0]], dtype=np.float32)
    with no_numpy_warnings():
        tokens = [int(sample(logits, SamplingConfig(temperature), np.random.default_rng(s))[0])
                  for s in range(20)]
    assert tokens == [0] * 20


# --- 2. detecting non-finite values -----------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1, max_size=64))
def test_is_finite_agrees_with_isfinite_all(values: list[float]) -> None:
    array = np.array(values, dtype=np.float32)
    assert is_finite(array) == bool(np.isfinite(array).all())


@pytest.mark.parametrize("text", [VALID_SPEC, ENCODER, T5_LIKE])
def test_the_block_by_block_replay_is_the_forward_pass(text: str) -> None:
    """first_nonfinite replays the pass one block at a time; if its maths drifted from forward()
    it would blame the wrong block. Its last stage must equal forward's output."""
    from tfcli.analysis.run.finite import _stages

    m = model(text, "float64")
    tokens = np.array([[1, 2, 3, 4, 5]])
    target = np.array([[0, 3, 1]]) if m.spec.family == "encoder-decoder" else None
    out = forward(m.spec, m.weights, ModelInput(tokens, decoder_tokens=target))
    stages = list(_stages(m.spec, m.weights, tokens, target))
    last = out.logits if out.logits is not None else out.hidden
    # float64, a handful of reassociated sums of <= 32 terms: 1e-12 relative is ~5000 eps.
    np.testing.assert_allclose(stages[-1][1], last, rtol=1e-12, atol=1e-12 * np.abs(last).max())
    blocks = m.spec.encoder_layers + m.spec.decoder_layers
    assert sum("block" in where for where, _ in stages) == blocks


def test_the_first_overflowing_block_is_named() -> None:
    m = model(NO_NORM)
    where, kind, largest = first_nonfinite(m.spec, m.weights, np.array([[1, 2, 3]]))
    assert where.startswith("decoder block ") and kind in ("inf", "NaN", "NaN and inf")
    assert 0 < largest < float(np.finfo(np.float32).max)
    assert first_nonfinite(m.spec, model(NO_NORM, "float64").weights, np.array([[1, 2, 3]])) is None


def test_run_reports_an_overflow_as_a_failed_check_without_warnings() -> None:
    m = model(NO_NORM)
    inputs = RunInputs(np.array([[1, 2, 3]]), None, "tokens", None)
    with no_numpy_warnings(), pytest.raises(NonFiniteError) as info:
        run_forward(m, inputs)
    assert info.value.exit_code == 1
    assert "the forward pass produced" in info.value.message and "decoder block" in info.value.message
    assert "try --dtype float64" in info.value.message
    result, _ = run_forward(model(NO_NORM, "float64"), inputs)  # the advice holds
    assert math.isfinite(result.loss)


def named_weight(m: Model, path: str) -> np.ndarray:
    return dict(named_arrays(m.weights))[path]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_nonfinite_weight_is_bad_input_naming_it(bad: float) -> None:
    m = model(VALID_SPEC)
    named_weight(m, "decoder.blocks.1.ffn.w_down")[3, 2] = bad
    with pytest.raises(BadInputError, match=r"^ckpt: weight decoder.blocks.1.ffn.w_down holds 1 "):
        check_weights(m.weights, "ckpt")
    inputs = RunInputs(np.array([[1, 2, 3]]), None, "tokens", None)
    with no_numpy_warnings(), pytest.raises(BadInputError, match="decoder.blocks.1.ffn.w_down"):
        run_forward(m, inputs)


def test_generation_stops_at_the_first_nonfinite_step() -> None:
    m = model(NO_NORM)
    with no_numpy_warnings(), pytest.raises(NonFiniteError, match="^generation step 0 produced"):
        generate_text(m, GenerationRequest(prompts=([1, 2, 3],), max_new_tokens=4), None)


def test_nonfinite_step_logits_that_replay_finite_blame_the_cache() -> None:
    m = model(VALID_SPEC)
    logits = np.zeros((1, m.spec.vocab_size), np.float32)
    check_step(m, logits, [1, 2], [5])  # finite: nothing raised
    logits[0, 7] = np.nan
    with pytest.raises(NonFiniteError, match=r"generation step 1 .* run afresh give finite values"):
        check_step(m, logits, [1, 2], [5])


def test_trace_execute_reports_an_overflow() -> None:
    from tfcli.analysis.trace.build import build_trace
    from tfcli.analysis.trace.check import execute_check

    spec = parse_spec_text(NO_NORM)
    with no_numpy_warnings(), pytest.raises(NonFiniteError, match="the --execute forward pass") as info:
        execute_check(spec, build_trace(spec, seq_len=4))
    assert "--dtype" not in info.value.message  # trace's --dtype only labels the byte column


# --- 3. the --check-cache tolerance follows the logits' scale ---------------------------------


LARGE_LOGITS = "lesson-tiny"  # no final norm and a tied head: init_std 3 gives logits ~2e4


def large_logit_model() -> Model:
    spec: Spec = load_spec(LARGE_LOGITS).replace(init_std=3.0)
    return Model(spec, init_weights(spec, 0, np.float32), "float32", "random", None)


def test_a_correct_cache_passes_at_large_logits() -> None:
    request = GenerationRequest(prompts=(list(range(1, 9)),), max_new_tokens=8)
    result = generate_text(large_logit_model(), request, None, mode=GenerationMode.check)
    check = result.check
    assert check is not None and check.identical_tokens
    assert check.logit_scale > 1e3  # the case the old absolute 1e-4 failed ...
    assert check.max_abs_logit_diff > 1e-4  # ... because rounding alone exceeds it here
    assert check.ok
    assert check.tolerance == pytest.approx(CACHE_TOLERANCE["float32"] * check.logit_scale)


def test_a_broken_cache_still_fails_at_large_logits(monkeypatch: pytest.MonkeyPatch) -> None:
    update = KVCache.update

    def off_by_a_percent(self: KVCache, layer: int, pos: int, k: np.ndarray, v: np.ndarray):
        if k.shape[2] == 1:  # decode steps store a value 1% off
            v = v * 1.01
        return update(self, layer, pos, k, v)

    monkeypatch.setattr(KVCache, "update", off_by_a_percent)
    request = GenerationRequest(prompts=(list(range(1, 9)),), max_new_tokens=8)
    result = generate_text(large_logit_model(), request, None, mode=GenerationMode.check)
    assert result.check is not None and not result.check.ok
    assert result.check.max_abs_logit_diff > result.check.tolerance


def test_small_logits_keep_an_absolute_floor() -> None:
    request = GenerationRequest(prompts=([1, 2, 3],), max_new_tokens=4)
    result = generate_text(model(VALID_SPEC), request, None, mode=GenerationMode.check)
    assert result.check is not None and result.check.ok
    assert result.check.logit_scale == 1.0  # random init_std 0.02 logits are far below 1
    assert result.check.tolerance == generation.CACHE_TOLERANCE["float32"]
