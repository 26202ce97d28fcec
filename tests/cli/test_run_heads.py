"""`tfcli run` and `tfcli trace --execute` on task heads: classification logits in the table,
JSON and --save-npz; masked-LM logits as the run's vocabulary logits; the trace's head rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

SPEC = """name: {name}
family: {family}
vocab_size: 80
max_seq_len: 16
d_model: 16
n_heads: 2
d_ff: 32
n_layers: 2
head: {head}
"""


def _spec(tmp_path: Path, head: str, family: str = "encoder", extra: str = "") -> Path:
    path = tmp_path / f"{head}.yaml"
    path.write_text(SPEC.format(name=f"tiny-{head}", family=family, head=head) + extra)
    return path


def test_sequence_classification_scores_in_table_json_and_npz(invoke, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "sequence_classification", "decoder", "num_labels: 3\npad_token_id: 0\n")
    table = invoke("run", str(spec), "--tokens", "5,6,7")
    assert table.exit_code == 0, table.output
    assert "sequence classification logits (3 labels)" in table.stdout
    data = json.loads(invoke("run", str(spec), "--batch", "2", "--seq-len", "5", "-f", "json").stdout)
    scores = data["scores"]
    assert scores["head"] == "sequence_classification" and len(scores["scores"]) == 2
    assert all(len(row) == 3 for row in scores["scores"])
    assert scores["predicted"] == [int(np.argmax(row)) for row in scores["scores"]]
    assert data["logits_shape"] is None  # no vocabulary head
    out = tmp_path / "out.npz"
    assert invoke("run", str(spec), "--tokens", "5,6,7", "--save-npz", str(out)).exit_code == 0
    assert np.load(out)["scores"].shape == (1, 3)


def test_token_classification_labels_every_position(invoke, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "token_classification", extra="num_labels: 4\n")
    data = json.loads(invoke("run", str(spec), "--tokens", "5,6,7,8", "-f", "json").stdout)
    assert len(data["scores"]["scores"][0]) == 4 and len(data["scores"]["predicted"][0]) == 4
    table = invoke("run", str(spec), "--tokens", "5,6,7,8").stdout
    assert "token classification logits (4 labels)" in table


def test_masked_lm_runs_its_vocabulary_logits_and_loss(invoke, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "masked_lm")
    data = json.loads(invoke("run", str(spec), "--tokens", "5,6,7,8", "-f", "json").stdout)
    assert data["logits_shape"] == [1, 4, 80] and data["scores"] is None
    assert data["loss_kind"].startswith("masked-LM")


@pytest.mark.parametrize("head", ["masked_lm", "sequence_classification", "token_classification"])
def test_trace_execute_matches_each_head(invoke, tmp_path: Path, head: str) -> None:
    result = invoke("trace", str(_spec(tmp_path, head)), "--execute", "--seq-len", "6", "-f", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    check = data["execute"]
    assert check["ok"] and check["mismatches"] == [] and check["matches"] == len(data["rows"])
    params = invoke("params", str(_spec(tmp_path, head)), "-f", "json")
    assert any(c["name"].startswith("head.") for c in json.loads(params.stdout)["components"])
