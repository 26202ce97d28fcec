"""NaN and inf in a forward pass: detected cheaply on its outputs, then traced to where they first
appear, so a command reports one line instead of a table of NaN (or token 0 every step).

The cheap check is a min and a max per output (both propagate NaN, and an inf is one of them):
no temporary as large as the logits. Only when it fails is anything re-run: the weights are
scanned (a NaN or inf there is bad input: the checkpoint, exit 2), else the pass is replayed one
block at a time to name the first block whose output is not finite (an overflow: exit 1).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from tfcli.analysis.model_source import Model
from tfcli.core.arrays import Array
from tfcli.engine.inputs import StackInput
from tfcli.engine.model import (ForwardOutput, embed, forward_hidden, layer_specs, output_logits,
                                stack_tables)
from tfcli.engine.weights import StackWeights, Weights, named_arrays
from tfcli.core.errors import BadInputError, CheckFailedError
from tfcli.spec.model import Spec


class NonFiniteError(CheckFailedError):
    """A forward pass on finite weights produced NaN or inf (it overflowed): exit 1, as a failed
    check, since the inputs were valid and the result is meaningless."""


@contextmanager
def quiet_numerics() -> Iterator[None]:
    """NumPy's overflow / invalid RuntimeWarnings off, for code whose results are checked here
    and reported in one line. np.errstate covers this thread only; the engine's worker threads
    (parallel.py) keep their own error state, but their warnings pass the global filters, which
    catch_warnings silences for the duration."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def is_finite(array: Array | None) -> bool:
    """True when every value is finite (None counts as finite). Two reductions, no temporary."""
    if array is None or array.size == 0:
        return True
    with np.errstate(all="ignore"):
        return bool(np.isfinite(array.min()) and np.isfinite(array.max()))


def kind_of(array: Array) -> str:
    """'NaN', 'inf' or 'NaN and inf': what is wrong in a non-finite array (for the message)."""
    nan, inf = bool(np.isnan(array).any()), bool(np.isinf(array).any())
    return "NaN and inf" if nan and inf else "NaN" if nan else "inf"


# --- the weights -------------------------------------------------------------------------------


def nonfinite_weight(weights: Weights) -> tuple[str, str, int] | None:
    """(path, kind, count) of the first weight array holding NaN or inf, or None."""
    for path, array in named_arrays(weights):
        if np.issubdtype(array.dtype, np.floating) and not is_finite(array):
            return path, kind_of(array), int(np.count_nonzero(~np.isfinite(array)))
    return None


def check_weights(weights: Weights, origin: str) -> None:
    """BadInputError naming the first weight that holds NaN or inf."""
    found = nonfinite_weight(weights)
    if found is not None:
        path, kind, count = found
        raise BadInputError(f"{origin}: weight {path} holds {count:,} {kind} value(s); the "
                            "checkpoint is corrupt or was saved after a diverged update")


# --- replaying the pass ------------------------------------------------------------------------


def _stack_stages(spec: Spec, stack: StackWeights, x: Array, *, causal: bool, name: str,
                  encoder_out: Array | None = None) -> Iterator[tuple[str, Array]]:
    """A stack run one block at a time (same maths as forward_hidden: it is forward_hidden on
    one-block stacks sharing the stack's relative-position table), then its final norm."""
    n_blocks = len(stack.blocks)
    # block i runs as its own kind (a one-block stack would be block 0's)
    views = layer_specs(spec, n_blocks)
    for i, block in enumerate(stack.blocks):
        one = StackWeights([block], None, stack.relative_bias)
        x = forward_hidden(views[i], one, x, StackInput.over(x.shape[1], causal, None, encoder_out))
        yield f"{name} block {i} (of {n_blocks})", x
    if stack.final_norm is not None:
        x = forward_hidden(spec, StackWeights([], stack.final_norm), x,
                           StackInput.over(x.shape[1], causal))
        yield f"{name} final norm", x


def _stages(spec: Spec, weights: Weights, tokens: Array,
            decoder_tokens: Array | None) -> Iterator[tuple[str, Array]]:
    """(where, output) after the embeddings, each block, each final norm and the head."""
    first = weights.encoder if spec.has_encoder else weights.decoder
    x = embed(spec, stack_tables(weights, first), tokens,
              StackInput.over(tokens.shape[1], False).positions)
    yield "the embeddings", x
    encoder_out = None
    if spec.family == "encoder-decoder" and weights.encoder is not None:
        for where, x in _stack_stages(spec, weights.encoder, x, causal=False, name="encoder"):
            yield where, x
        encoder_out = x
        target = np.zeros((tokens.shape[0], 1), np.int64) if decoder_tokens is None else decoder_tokens
        x = embed(spec, stack_tables(weights, weights.decoder), target,
                  StackInput.over(target.shape[1], True).positions)
        yield "the decoder embeddings", x
    causal = spec.family != "encoder"
    stack = weights.decoder if causal else weights.encoder
    if stack is not None:
        for where, x in _stack_stages(spec, stack, x, causal=causal, encoder_out=encoder_out,
                                      name="decoder" if causal else "encoder"):
            yield where, x
    if spec.lm_head:
        yield "the output logits", output_logits(spec, weights, x)


def first_nonfinite(spec: Spec, weights: Weights, tokens: Array,
                    decoder_tokens: Array | None = None) -> tuple[str, str, float] | None:
    """(where, kind, largest |value| entering it) for the first stage whose output is not
    finite, replaying the pass on `tokens` (B, T); None when every stage is finite."""
    largest = 0.0
    with quiet_numerics():
        for where, x in _stages(spec, weights, np.asarray(tokens), decoder_tokens):
            if not is_finite(x):
                return where, kind_of(x), largest
            largest = float(np.abs(x).max())
    return None


def nonfinite_error(spec: Spec, weights: Weights, dtype: str, origin: str, tokens: Array,
                    decoder_tokens: Array | None = None, what: str = "the forward pass",
                    dtype_hint: bool = True) -> Exception:
    """The one-line error for a pass whose output held NaN or inf: a BadInputError naming the
    weight when one is not finite, else a NonFiniteError naming the first block that is not.
    dtype_hint: suggest --dtype float64 (for commands whose --dtype is the engine's)."""
    check_weights(weights, origin)
    found = first_nonfinite(spec, weights, tokens, decoder_tokens)
    if found is None:  # finite when replayed whole from the start: the cached path differs
        return NonFiniteError(f"{what} produced NaN or inf, although the same tokens run afresh "
                              "give finite values (a KV-cache fault?)")
    where, kind, largest = found
    limit = float(np.finfo(np.dtype(dtype)).max)
    hint = "; try --dtype float64" if dtype == "float32" and dtype_hint else ""
    # A block whose input's squares pass the dtype's max: its norm's mean square overflowed
    # (ops._undefined_where_overflowed turned the row's silent 0 into NaN).
    if spec.norm != "none" and largest > math.sqrt(limit):
        return NonFiniteError(f"{what} overflowed {dtype}: first in {where}, whose input peaked "
                              f"at |x| = {largest:.3g}, beyond {math.sqrt(limit):.3g}, the largest "
                              f"value whose square {dtype} holds (a norm would make the row 0: "
                              f"every hidden state alike, every logit equal){hint}")
    return NonFiniteError(f"{what} produced {kind} in {dtype}: first in {where}, whose input "
                          f"peaked at |x| = {largest:.3g} ({dtype} max {limit:.3g}){hint}")


def check_outputs(model: Model, out: ForwardOutput, tokens: Array,
                  decoder_tokens: Array | None = None, loss: float | None = None) -> None:
    """Raise the one-line error (see nonfinite_error) unless every output of `out` and the loss
    are finite."""
    outputs = (out.hidden, out.logits, out.encoder_hidden, out.pooled, out.scores)
    if all(is_finite(a) for a in outputs):
        if loss is None or math.isfinite(loss):
            return
        raise NonFiniteError(f"the loss is {loss} although the forward pass is finite: the "
                             "masked-LM pass (its own forward on masked tokens) overflowed "
                             f"{model.dtype}")
    raise nonfinite_error(model.spec, model.weights, model.dtype, model.origin, tokens,
                          decoder_tokens)


def check_step(model: Model, logits: Array, prompt: list[int], new_tokens: list[int]) -> None:
    """Raise the one-line error unless a generation step's logits (B, V) are finite; the pass
    is replayed uncached on the prompt and the `new_tokens` chosen before this step."""
    if is_finite(logits):
        return
    spec = model.spec
    if spec.family == "encoder-decoder":  # the source, and the decoder from its start token 0
        tokens, decoder = np.array([prompt]), np.array([[0, *new_tokens]])
    else:
        tokens, decoder = np.array([[*prompt, *new_tokens]]), None
    raise nonfinite_error(spec, model.weights, model.dtype, model.origin, tokens, decoder,
                          what=f"generation step {len(new_tokens)}")
