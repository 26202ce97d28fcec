"""The task heads of the engine (tfcli/engine/heads.py): which token a decoder's sequence
classifier reads, and that every head's arrays are what params counts."""

from __future__ import annotations

import numpy as np
import pytest

from tfcli.engine.heads import last_real_token
from tfcli.engine.init import init_weights
from tfcli.engine.model import ModelInput, forward
from tfcli.engine.weights import count_parameters
from tfcli.spec.counts import total_parameters
from tfcli.spec.model import Spec

BASE = {"name": "t", "vocab_size": 40, "max_seq_len": 16, "d_model": 16, "n_heads": 2,
        "d_ff": 32, "n_layers": 2}


def _spec(**fields: object) -> Spec:
    return Spec.model_validate(BASE | {"family": "decoder"} | fields)


def test_the_last_token_that_is_not_the_pad_id_is_read_left_or_right_padded() -> None:
    spec = _spec(head="sequence_classification", pad_token_id=0)
    tokens = np.array([[5, 6, 7, 0, 0], [0, 0, 5, 6, 7], [5, 0, 6, 0, 0], [0, 0, 0, 0, 0]])
    # transformers' rule: the rightmost non-pad position; a row of pads reads position 0
    assert last_real_token(spec, tokens, None).tolist() == [2, 4, 2, 0]


def test_the_mask_also_hides_padding_written_with_another_id() -> None:
    """`tfcli run` pads several texts with id 0 whatever the model's pad id: the mask decides."""
    spec = _spec(head="sequence_classification", pad_token_id=5)
    tokens = np.array([[7, 8, 9, 0, 0], [7, 8, 9, 10, 5]])
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]], bool)
    assert last_real_token(spec, tokens, mask).tolist() == [2, 3]


def test_without_a_pad_id_the_attention_mask_decides_and_without_one_the_last_token() -> None:
    spec = _spec(head="sequence_classification")
    tokens = np.array([[5, 6, 7, 0], [5, 6, 7, 8]])
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], bool)
    assert last_real_token(spec, tokens, mask).tolist() == [1, 3]
    assert last_real_token(spec, tokens, None).tolist() == [3, 3]


def test_a_sequence_score_is_the_score_of_its_last_real_token() -> None:
    """Right padding after a causal body leaves the real positions as they were alone: the
    score is the classifier on the unpadded run's last hidden state."""
    spec = _spec(head="sequence_classification", num_labels=3, pad_token_id=0)
    weights = init_weights(spec, seed=1)
    tokens = np.array([[5, 6, 7, 0, 0]])
    got = forward(spec, weights, ModelInput(tokens, attention_mask=tokens != 0)).scores
    alone = forward(spec, weights, np.array([[5, 6, 7]]))
    assert got is not None and got.shape == (1, 3)
    want = alone.hidden[:, -1] @ weights.classifier  # (1, d) @ (d, 3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fields", [
    {"family": "encoder", "head": "masked_lm"},
    {"family": "encoder", "head": "masked_lm", "tie_embeddings": False, "bias": False},
    {"family": "encoder", "head": "sequence_classification", "pooler": True, "num_labels": 4},
    {"family": "encoder", "head": "sequence_classification"},
    {"family": "encoder", "head": "token_classification", "num_labels": 5},
    {"family": "decoder", "head": "sequence_classification", "num_labels": 1},
    {"family": "decoder", "head": "token_classification", "classifier_bias": False},
    {"family": "encoder-decoder", "head": "token_classification", "num_labels": 2},
])
def test_every_head_allocates_what_params_counts_and_runs(fields: dict) -> None:
    spec = Spec.model_validate(BASE | fields)
    weights = init_weights(spec)
    assert count_parameters(weights, spec) == total_parameters(spec)
    out = forward(spec, weights, np.array([[1, 2, 3, 4], [5, 6, 7, 8]]))
    if spec.head == "masked_lm":
        assert out.logits is not None and out.logits.shape == (2, 4, 40) and out.scores is None
    else:
        per_token = spec.head == "token_classification"
        shape = (2, 4 if spec.family != "encoder-decoder" else 1, spec.num_labels)
        assert out.logits is None and out.scores is not None
        assert out.scores.shape == (shape if per_token else (2, spec.num_labels))


@pytest.mark.parametrize(("act", "fn"), [("tanh", np.tanh), ("relu", lambda x: np.maximum(x, 0))])
def test_the_pooler_applies_its_activation_to_the_first_token(act: str, fn) -> None:
    """tanh: BERT's pooler, RoBERTa's classifier.dense; relu: DistilBERT's pre_classifier."""
    spec = Spec.model_validate(BASE | {"family": "encoder", "head": "sequence_classification",
                                       "pooler": True, "pooler_activation": act})
    weights = init_weights(spec, seed=2)
    weights.pooler_b = weights.pooler_b + 0.05  # a bias that moves some units past relu's 0
    out = forward(spec, weights, np.array([[1, 2, 3], [4, 5, 6]]))
    pooled = fn(out.hidden[:, 0] @ weights.pooler_w + weights.pooler_b)  # (B, d)
    np.testing.assert_allclose(out.pooled, pooled, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.scores, pooled @ weights.classifier + weights.classifier_bias,
                               rtol=1e-5, atol=1e-6)


def test_pooler_activation_needs_a_pooler() -> None:
    from tfcli.core.errors import SpecConsistencyError
    with pytest.raises(SpecConsistencyError, match="pooler_activation"):
        Spec.model_validate(BASE | {"family": "encoder", "pooler_activation": "relu"})


def test_classifier_dense_runs_before_the_classifier_on_every_token() -> None:
    """ELECTRA's discriminator: act(h W + b) on each token, then a (d, 1) classifier."""
    spec = Spec.model_validate(BASE | {"family": "encoder", "head": "token_classification",
                                       "num_labels": 1, "classifier_dense": True,
                                       "head_activation": "relu"})
    weights = init_weights(spec, seed=3)
    weights.head_dense_bias = weights.head_dense_bias + 0.05
    assert count_parameters(weights, spec) == total_parameters(spec)
    out = forward(spec, weights, np.array([[1, 2, 3, 4]]))
    dense = np.maximum(out.hidden @ weights.head_dense + weights.head_dense_bias, 0)  # (1, T, d)
    np.testing.assert_allclose(out.scores, dense @ weights.classifier + weights.classifier_bias,
                               rtol=1e-5, atol=1e-6)


def test_classifier_dense_needs_a_classifier() -> None:
    from tfcli.core.errors import SpecConsistencyError
    with pytest.raises(SpecConsistencyError, match="classifier_dense"):
        Spec.model_validate(BASE | {"family": "encoder", "head": "masked_lm",
                                    "classifier_dense": True})
