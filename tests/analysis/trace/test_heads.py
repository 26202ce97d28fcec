"""Trace rows of the task heads (spec.head): each head's rows own its arrays, and
`trace --execute` observes the same ops and shapes in the engine's order."""

from __future__ import annotations

import pytest

from tfcli.analysis.trace.build import build_trace
from tfcli.analysis.trace.check import execute_check
from tfcli.spec.counts import total_parameters
from tfcli.spec.model import Spec

BASE = {"name": "t", "vocab_size": 60, "max_seq_len": 16, "d_model": 16, "n_heads": 2,
        "d_ff": 32, "n_layers": 2}
HEADS = {
    "masked_lm": {"family": "encoder", "head": "masked_lm", "embedding_norm": True,
                  "type_vocab_size": 2},
    "bert-classifier": {"family": "encoder", "head": "sequence_classification", "pooler": True,
                        "num_labels": 3},
    "encoder-first-token": {"family": "encoder", "head": "sequence_classification"},
    "token-classifier": {"family": "encoder", "head": "token_classification", "num_labels": 5},
    "reward-model": {"family": "decoder", "head": "sequence_classification", "num_labels": 1,
                     "norm": "rmsnorm", "activation": "swiglu", "bias": False,
                     "positions": "rope", "tie_embeddings": False},
    "electra-discriminator": {"family": "encoder", "head": "token_classification",
                              "num_labels": 1, "classifier_dense": True},
    "t5-qa": {"family": "encoder-decoder", "head": "token_classification", "num_labels": 2,
              "positions": "relative", "norm": "rmsnorm", "bias": False},
}


@pytest.mark.parametrize("name", sorted(HEADS))
def test_head_rows_own_the_head_and_match_the_engine(name: str) -> None:
    spec = Spec.model_validate(BASE | HEADS[name])
    report = build_trace(spec, batch=2, seq_len=6)
    assert report.total_params == total_parameters(spec)
    check = execute_check(spec, report)
    assert check.mismatches == () and check.ok, check.to_dict()
    head = [(r.op, r.output) for r in report.rows if r.path == "head"]
    labels = spec.num_labels
    expected = {
        "masked_lm": [("transform", (2, 6, 16)), ("transform_norm", (2, 6, 16)),
                      ("logits", (2, 6, 60))],
        "bert-classifier": [("pooler", (2, 16)), ("classifier", (2, labels))],
        "encoder-first-token": [("classifier", (2, labels))],
        "token-classifier": [("classifier", (2, 6, labels))],
        "reward-model": [("classifier", (2, labels))],
        "t5-qa": [("classifier", (2, 6, labels))],
        "electra-discriminator": [("classifier_dense", (2, 6, 16)), ("classifier", (2, 6, 1))],
    }[name]
    assert head == expected


def test_a_sequence_classifier_costs_one_row_per_sequence() -> None:
    spec = Spec.model_validate(BASE | HEADS["reward-model"])
    row = next(r for r in build_trace(spec, batch=3, seq_len=8).rows if r.op == "classifier")
    assert row.flops == 3 * 2 * 16 * 1 and row.params == 16  # no bias on a decoder's score
