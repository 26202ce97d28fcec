"""The Transformer lesson's "Check it on arrays" (../shared/seeds/transformer-lesson-a.txt),
reproduced through the engine: its printed norms are the expected values."""

from __future__ import annotations

import numpy as np

from tfcli.engine.inputs import StackInput
from tfcli.engine.model import block_forward, forward_hidden
from tfcli.engine.init import init_weights
from tfcli.engine.weights import AttentionWeights, BlockWeights, FFNWeights, NormWeights
from tfcli.sources import load_spec

N, D, H, D_FF = 8, 16, 4, 64
LESSON_NORMS = [5.7, 3.0, 4.57, 4.49, 4.78, 4.12, 5.41, 3.09]


# --- the lesson's code, verbatim in substance -----------------------------------------------

def _softmax(z, axis):
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def _layer_norm(x, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps)


def _mha(X, Wq, Wk, Wv, Wo, H):
    N, d = X.shape
    d_k = d // H
    Q = (X @ Wq).reshape(N, H, d_k).transpose(1, 0, 2)
    K = (X @ Wk).reshape(N, H, d_k).transpose(1, 0, 2)
    V = (X @ Wv).reshape(N, H, d_k).transpose(1, 0, 2)
    scores = Q @ K.transpose(0, 2, 1) / np.sqrt(d_k)
    mask = np.triu(np.ones((N, N)), k=1).astype(bool)
    scores = np.where(mask, -np.inf, scores)
    out = _softmax(scores, axis=-1) @ V
    return out.transpose(1, 0, 2).reshape(N, H * d_k) @ Wo


def _lesson_block(X, Wq, Wk, Wv, Wo, W1, W2, b1, b2):
    X = X + _mha(_layer_norm(X), Wq, Wk, Wv, Wo, H)
    return X + (_gelu(_layer_norm(X) @ W1 + b1) @ W2 + b2)


# --- fixtures --------------------------------------------------------------------------------

def _lesson_arrays():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D))  # drawn first, as in the lesson
    Wq, Wk, Wv, Wo = (rng.normal(scale=0.1, size=(D, D)) for _ in range(4))
    W1 = rng.normal(scale=0.1, size=(D, D_FF))
    W2 = rng.normal(scale=0.1, size=(D_FF, D))
    return X, (Wq, Wk, Wv, Wo, W1, W2, np.zeros(D_FF), np.zeros(D))


def _lesson_block_weights(params) -> BlockWeights:
    Wq, Wk, Wv, Wo, W1, W2, b1, b2 = params
    return BlockWeights(
        NormWeights(None, None), AttentionWeights(Wq, Wk, Wv, Wo),
        NormWeights(None, None), FFNWeights(W1, W2, b_up=b1, b_down=b2),
    )


def test_lesson_tiny_reproduces_the_printed_norms():
    spec = load_spec("lesson-tiny")
    X, params = _lesson_arrays()
    weights = init_weights(spec, 0, np.float64)
    weights.decoder.blocks = [_lesson_block_weights(params)] * 4  # one block, shared 4 times
    out = forward_hidden(spec, weights.decoder, X[None], StackInput.over(N, True))[0]  # (8, 16)
    assert out.shape == (N, D) and out.dtype == np.float64
    assert [round(float(np.linalg.norm(row)), 2) for row in out] == LESSON_NORMS


def test_block_forward_equals_the_lesson_block():
    spec = load_spec("lesson-tiny")
    X, params = _lesson_arrays()
    expected = _lesson_block(X, *params)
    got = block_forward(spec, _lesson_block_weights(params), X[None], StackInput.over(N, True))[0]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
