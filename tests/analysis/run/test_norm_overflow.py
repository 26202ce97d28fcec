"""Issue 28.8: a norm whose mean square overflows float32 used to scale its row by 1/sqrt(inf) = 0,
so every hidden state became 0 (or the norm's bias) and every logit equal: finite, confident and
meaningless, with nothing said. The engine's norms now mark such rows NaN
(ops._undefined_where_overflowed), so the finiteness check names the block and points at
float64, for every norm kind and placement and every command that runs a forward pass."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.analysis.run.test_nonfinite import model, no_numpy_warnings
from tests.conftest import VALID_SPEC
from tfcli.analysis.run.finite import NonFiniteError
from tfcli.analysis.generate.timed import generate_text
from tfcli.analysis.run.forward import RunInputs, run_forward
from tfcli.engine.generate import GenerationRequest
from tfcli.engine.ops import layer_norm, rms_norm
from tfcli.engine.weights import named_arrays

HUGE = 1e22  # embeddings of std 0.02 -> |x| ~ 1e20, |x|^2 = 1e40 > float32's max 3.4e38; float64 squares it without trouble
NORMS = ["layernorm", "rmsnorm", "layernorm_noaffine", "layernorm_nobias"]
PLACEMENTS = ["pre", "post"]
TOKENS = np.array([[1, 2, 3]])


def huge_model(norm: str, placement: str, dtype: str):
    m = model(VALID_SPEC + f"norm: {norm}\nnorm_placement: {placement}\n", dtype)
    dict(named_arrays(m.weights))["token_embedding"][...] *= HUGE  # in place
    return m


@pytest.mark.parametrize("norm", ["layer", "rms"])
def test_an_overflowing_row_is_nan_and_its_neighbours_are_untouched(norm: str) -> None:
    x = np.array([[1.0, -2.0, 3.0, 0.5], [HUGE, -HUGE, HUGE, 0.0]], np.float32)
    with np.errstate(all="ignore"):
        out = layer_norm(x, None, None, 1e-5) if norm == "layer" else rms_norm(x, None, 1e-5)
    assert np.isnan(out[1]).all()  # not the silent zeros (or bias) of 1/sqrt(inf)
    reference = x[0].astype(np.float64)
    if norm == "layer":
        reference = reference - reference.mean()
    reference /= np.sqrt(np.mean(reference**2) + 1e-5)
    np.testing.assert_allclose(out[0], reference, rtol=1e-5)


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("norm", NORMS)
def test_run_names_the_overflow_and_float64_gives_the_result(norm: str, placement: str) -> None:
    inputs = RunInputs(TOKENS, None, "tokens", None)
    with no_numpy_warnings(), pytest.raises(NonFiniteError) as info:
        run_forward(huge_model(norm, placement, "float32"), inputs)
    message = info.value.message
    assert info.value.exit_code == 1
    assert message.startswith("the forward pass overflowed float32: first in ")
    assert "beyond 1.84e+19, the largest value whose square float32 holds" in message
    assert "try --dtype float64" in message
    result, out = run_forward(huge_model(norm, placement, "float64"), inputs)  # the advice holds
    assert math.isfinite(result.loss)
    assert not np.allclose(out.hidden[0, 0], out.hidden[0, 1])  # positions differ: a result


@pytest.mark.parametrize("norm", NORMS)
def test_generation_names_the_overflow(norm: str) -> None:
    with no_numpy_warnings(), pytest.raises(NonFiniteError,
                                            match="^generation step 0 overflowed float32: first in decoder block 0"):
        generate_text(huge_model(norm, "pre", "float32"),
                      GenerationRequest(prompts=([1, 2, 3],), max_new_tokens=2), None)


def test_a_spec_without_norms_keeps_the_plain_overflow_message() -> None:
    from tests.analysis.run.test_nonfinite import NO_NORM

    with no_numpy_warnings(), pytest.raises(NonFiniteError, match="the forward pass produced"):
        run_forward(model(NO_NORM), RunInputs(TOKENS, None, "tokens", None))
