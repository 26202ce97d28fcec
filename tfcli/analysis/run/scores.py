"""`tfcli run` on a classification head (spec.head): the scores the head gives, per sequence
or per token, with each one's highest-scoring label. Masked-LM logits need nothing here: they
are the run's vocabulary logits (shape, statistics, the masked-LM loss)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.model import ForwardOutput
from tfcli.spec.model import Spec


@dataclass(frozen=True)
class HeadScores:
    """A classification head's logits: (B, num_labels) or, per token, (B, T, num_labels)."""

    head: str  # spec.head: sequence_classification or token_classification
    num_labels: int
    scores: list[list[float]] | list[list[list[float]]]  # per token: real positions only
    predicted: list[int] | list[list[int]]  # argmax label per sequence, or per real token

    def to_dict(self) -> dict[str, Any]:
        return {"head": self.head, "num_labels": self.num_labels, "scores": self.scores,
                "predicted": self.predicted}


def head_scores(spec: Spec, out: ForwardOutput, mask: Array | None) -> HeadScores | None:
    """The scores of `out`, None without a classification head; per-token scores are kept
    at the real positions of each row (padding's scores are not the model's output)."""
    if out.scores is None or spec.num_labels is None:
        return None
    scores = out.scores.astype(np.float64)
    if spec.head != "token_classification":  # (B, L)
        return HeadScores(spec.head or "", spec.num_labels, scores.tolist(),
                          scores.argmax(axis=-1).tolist())
    keep = np.ones(scores.shape[:2], bool) if mask is None or spec.family == "encoder-decoder" \
        else mask.astype(bool)
    rows = [row[k] for row, k in zip(scores, keep)]  # each (T_b, L)
    return HeadScores(spec.head, spec.num_labels, [r.tolist() for r in rows],
                      [r.argmax(axis=-1).tolist() for r in rows])
