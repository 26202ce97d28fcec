"""The encoder bodies through the CLI: the bundled roberta-base and distilbert-base-uncased
traced and executed at two layers (and the factorised / shared ones), import-config of the
published configs equal to the bundled specs, params naming the shared block and the
projection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.guarded import json_output as _json
from tests.parity.encoder_configs import (
    ALBERT_BASE_V2,
    DISTILBERT_BASE_UNCASED,
    ELECTRA_SMALL_DISCRIMINATOR,
    ROBERTA_BASE,
    XLM_ROBERTA_LARGE,
)
from tfcli.spec.load import parse_spec_text
from tfcli.sources import load_spec

BODIES = {  # bundled spec -> (published config.json, its body class)
    "roberta-base": (ROBERTA_BASE, "RobertaModel"),
    "xlm-roberta-large": (XLM_ROBERTA_LARGE, "XLMRobertaModel"),
    "distilbert-base-uncased": (DISTILBERT_BASE_UNCASED, "DistilBertModel"),
    "electra-small-discriminator": (ELECTRA_SMALL_DISCRIMINATOR, "ElectraModel"),
    "albert-base-v2": (ALBERT_BASE_V2, "AlbertModel"),
}


@pytest.mark.parametrize("name", ["roberta-base", "distilbert-base-uncased"])
def test_bundled_trace_execute_at_two_layers(invoke, name: str) -> None:  # noqa: ANN001
    data = _json(invoke, "trace", name, "--execute", "--layers", "2", "--seq-len", "16")
    assert data["execute"]["ok"], data["execute"]


@pytest.mark.parametrize("name", ["electra-small-discriminator", "albert-base-v2"])
def test_factorised_and_shared_specs_execute_whole(invoke, name: str) -> None:  # noqa: ANN001
    data = _json(invoke, "trace", name, "--execute", "--seq-len", "8")
    assert data["execute"]["ok"], data["execute"]
    ops = [(r["path"], r["op"]) for r in data["rows"]]
    assert ("embed", "embedding_project") in ops


def test_albert_trace_shows_every_block_and_block_0_owns_the_weights(invoke) -> None:  # noqa: ANN001
    rows = _json(invoke, "trace", "albert-base-v2", "--seq-len", "8", "--depth", "1")["rows"]
    blocks = [r for r in rows if r["path"].startswith("encoder.")]
    assert [r["path"] for r in blocks] == [f"encoder.{i}" for i in range(12)]
    assert blocks[0]["params"] == 7_087_872 and all(r["params"] == 0 for r in blocks[1:])
    assert len({r["flops"] for r in blocks}) == 1 and blocks[0]["flops"] > 0


@pytest.mark.parametrize("name", sorted(BODIES))
def test_import_config_of_the_published_config_is_the_bundled_spec(
        invoke, tmp_path: Path, name: str) -> None:  # noqa: ANN001
    config, body = BODIES[name]
    (tmp_path / "config.json").write_text(json.dumps(config | {"architectures": [body]}))
    result = invoke("import-config", str(tmp_path))
    assert result.exit_code == 0, result.output
    imported, bundled = parse_spec_text(result.stdout), load_spec(name)
    skip = {"name", "description", "source"}
    assert imported.model_dump(exclude=skip) == bundled.model_dump(exclude=skip)


def test_params_names_the_shared_block_and_the_projection(invoke) -> None:  # noqa: ANN001
    report = _json(invoke, "params", "albert-base-v2")
    rows = {r["name"]: r for r in report["components"]}
    # one block held: its rows count 1 block, per block = the whole row
    assert (rows["encoder.block.ffn.up"]["blocks"], rows["encoder.block.ffn.up"]["per_block"]) \
        == (1, 768 * 3072 + 3072)
    assert any("run by all 12 encoder layers" in note for note in report["notes"])
    assert rows["encoder.block.attn.q"]["paths"] == ["encoder.blocks.0.attn.wq",
                                                     "encoder.blocks.0.attn.bq"]
    assert "shared by all 12 blocks" in json.dumps(rows["encoder.block.attn.q"])
    assert rows["embed.project"]["paths"] == ["embedding_project", "embedding_project_bias"]
