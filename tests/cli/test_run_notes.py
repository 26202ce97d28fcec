"""`tfcli run` says what its figures are: a body-only checkpoint, and huge magnitudes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tfcli.cli.app import app
from tfcli.render.run import _fixed


@pytest.fixture(scope="module")
def seq_cls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import LlamaConfig, LlamaForSequenceClassification

    config = LlamaConfig(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, num_labels=1, pad_token_id=0)
    folder = tmp_path_factory.mktemp("seqcls")
    LlamaForSequenceClassification(config).save_pretrained(folder)
    return folder


def test_a_classifier_checkpoint_runs_its_head(seq_cls_dir: Path) -> None:
    """The reward model's score head is built: one score per sequence, no vocabulary logits."""
    result = CliRunner().invoke(app, ["run", str(seq_cls_dir), "--tokens", "1,2,3", "-f", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["logits_shape"] is None and not any("body only" in n for n in data["notes"])
    assert data["scores"]["head"] == "sequence_classification"
    assert len(data["scores"]["scores"]) == 1 and len(data["scores"]["scores"][0]) == 1


def test_a_body_only_spec_runs_with_a_note(tmp_path: Path) -> None:
    """A spec written before heads were built, marked body_only, still says so."""
    spec = tmp_path / "body.yaml"
    spec.write_text("name: body\nfamily: decoder\nvocab_size: 40\nmax_seq_len: 8\nd_model: 8\n"
                    "n_heads: 2\nd_ff: 16\nn_layers: 1\nlm_head: false\n"
                    "body_only: LlamaForSequenceClassification (score head not built)\n")
    result = CliRunner().invoke(app, ["run", str(spec), "--tokens", "1,2,3", "-f", "json"])
    assert result.exit_code == 0, result.output
    notes = json.loads(result.stdout)["notes"]
    assert any("body only: LlamaForSequenceClassification" in note for note in notes)


def test_huge_statistics_print_in_scientific_notation() -> None:
    assert _fixed(0.01234567, 4) == "0.0123"
    assert _fixed(-714849245703.67, 3) == "-7.148e+11"


def test_a_large_batch_lists_sixteen_sequences_and_says_how_many_more() -> None:
    """A table row per sequence made --batch 100000 take minutes to lay out; JSON keeps all."""
    runner = CliRunner()
    table = runner.invoke(app, ["run", "lesson-tiny", "--batch", "20", "--seq-len", "4"],
                          env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert table.stdout.count("… 4 more sequences (--format json has all)") == 1  # the top-5 (norms: one summary row)
    assert "│  16 │" not in table.stdout and "│  15 │" in table.stdout
    data = json.loads(runner.invoke(app, ["run", "lesson-tiny", "--batch", "20", "--seq-len", "4",
                                          "-f", "json"]).stdout)
    assert len(data["hidden_norms"]) == 20
