"""The task heads on top of the last stack (spec.head, tfcli/spec/head.py): masked_lm's transform
before the vocabulary logits, and the classifiers of sequence and token classification.

Probes (path `head`, in order): `transform` (B, T, d) and `transform_norm` (B, T, d) for
masked_lm, before `logits`; `mean_pool` (B, d) with classifier_pooling mean; `classifier_dense`
(B, [T,] d) with classifier_dense, `classifier_norm` (B, [T,] d) with classifier_norm, then
`classifier` (B, num_labels) or (B, T, num_labels) last.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.inputs import Probe
from tfcli.engine.ops import activation_fn, apply_norm
from tfcli.engine.parallel import linear, rowwise
from tfcli.engine.shaped import is_shaped
from tfcli.engine.weights import Weights
from tfcli.spec.model import Spec


def mlm_transform(spec: Spec, weights: Weights, hidden: Array, probe: Probe) -> Array:
    """BERT's prediction-head transform: norm(act(h @ W + b)). (B, T, d) -> (B, T, d)."""
    h = linear(hidden, weights.head_dense)  # (B, T, d) @ (d, d)
    if weights.head_dense_bias is not None:
        h += weights.head_dense_bias
    h = activation_fn(spec.head_activation or spec.activation)(h)
    probe("transform", h.shape, (hidden,), (weights.head_dense, weights.head_dense_bias))
    normed = _head_norm(spec, weights, h)
    probe("transform_norm", normed.shape, (h,), (weights.head_norm,))
    return normed


def _head_norm(spec: Spec, weights: Weights, x: Array) -> Array:
    """The spec's norm with the head's own weights (head_norm), over the last axis."""
    return rowwise(lambda rows: apply_norm(spec.norm, weights.head_norm, rows, spec.norm_eps,
                                           spec.norm_unit_offset), x)


def pooler_activation(spec: Spec) -> Callable[[Array], Array]:
    """The pooler's elementwise function: tanh (BERT, RoBERTa's classifier.dense), or an FFN
    activation (ELECTRA gelu, DistilBERT relu)."""
    return np.tanh if spec.pooler_activation == "tanh" else activation_fn(spec.pooler_activation)


def last_real_token(spec: Spec, tokens: Array | None, mask: Array | None,
                    shape: tuple[int, int] | None = None) -> Array:
    """Each row's last real position (B,): with pad_token_id, transformers' rule - the rightmost
    token that is not the pad id (left or right padding; a row of pads reads position 0) -
    among the positions the attention mask keeps (a batch tfcli padded itself may pad with
    another id); without one, the last position the mask keeps (the last without a mask).
    Without tokens (embeddings given instead), the mask's rule over `shape` (B, T)."""
    B, T = tokens.shape if tokens is not None else shape  # type: ignore[misc]
    positions = np.arange(T)
    keep = np.ones((B, T), bool) if mask is None else mask.astype(bool)
    if spec.pad_token_id is not None and tokens is not None:
        keep = keep & (tokens != spec.pad_token_id)  # (B, T)
    elif mask is None:
        return np.full(B, T - 1)
    return (positions * keep).argmax(axis=-1)  # (B,): argmax of 0s is 0, as transformers'


def mean_over_real(hidden: Array, mask: Array | None) -> Array:
    """The mean of hidden (B, T, d) over each row's real tokens (mask (B, T), None: all),
    (B, d) in hidden's dtype: ModernBERT's classifier_pooling mean, sum(h * m) / sum(m)."""
    if mask is None:
        return hidden.mean(axis=1)
    keep = mask.astype(hidden.dtype)[..., None]  # (B, T, 1)
    return (hidden * keep).sum(axis=1) / keep.sum(axis=1)  # (B, d)


def classifier_input(spec: Spec, hidden: Array, pooled: Array | None, tokens: Array | None,
                     mask: Array | None, probe: Probe) -> Array:
    """What the classifier reads: every token (B, T, d) for token_classification; for
    sequence_classification (B, d), the pooler's output, else a decoder's last real token,
    else an encoder's first token or (classifier_pooling mean) its real tokens' mean."""
    if spec.head == "token_classification":
        return hidden
    if pooled is not None:
        return pooled
    if spec.family == "decoder":
        if is_shaped(hidden):  # which token is each row's last real one is data
            return hidden[:, -1]  # (B, d)
        last = last_real_token(spec, tokens, mask, hidden.shape[:2])  # (B,)
        return hidden[np.arange(hidden.shape[0]), last]
    if spec.classifier_pooling == "mean":
        mean = mean_over_real(hidden, mask)
        probe("mean_pool", mean.shape, (hidden,))
        return mean
    return hidden[:, 0]


def classify(spec: Spec, weights: Weights, x: Array, probe: Probe) -> Array:
    """Classification logits of classifier_input's x: (B, [T,] d) -> (B, [T,] num_labels),
    through classifier_dense's act(x @ W + b) first when the spec has it."""
    if spec.classifier_dense:
        dense = linear(x, weights.head_dense, weights.head_dense_bias)  # (..., d) @ (d, d)
        dense = activation_fn(spec.head_activation or spec.activation)(dense)
        probe("classifier_dense", dense.shape, (x,), (weights.head_dense, weights.head_dense_bias))
        x = dense
    if spec.classifier_norm:  # ModernBERT's prediction head: dense, activation, norm
        normed = _head_norm(spec, weights, x)
        probe("classifier_norm", normed.shape, (x,), (weights.head_norm,))
        x = normed
    scores = linear(x, weights.classifier)  # (..., d) @ (d, L)
    if weights.classifier_bias is not None:
        scores += weights.classifier_bias
    probe("classifier", scores.shape, (x,), (weights.classifier, weights.classifier_bias))
    return scores
