"""deberta-v3-base through the CLI: traced and executed at two layers, the trace's position rows
(the relative table once per stack, the c2p / p2c terms of every block) and their owners, and
params naming the relative table and its norm."""

from __future__ import annotations

from tests.cli.guarded import json_output as _json
from tfcli.spec.counts import total_parameters
from tfcli.sources import load_spec


def test_bundled_trace_execute_at_two_layers(invoke) -> None:  # noqa: ANN001
    data = _json(invoke, "trace", "deberta-v3-base", "--execute", "--layers", "2",
                 "--seq-len", "16")
    assert data["execute"]["ok"], data["execute"]


def test_trace_rows_of_the_position_terms(invoke) -> None:  # noqa: ANN001
    data = _json(invoke, "trace", "deberta-v3-base", "--seq-len", "16")
    rows = {(r["path"], r["op"]): r for r in data["rows"]}
    table = rows[("encoder.relative_embedding", "relative_embedding")]
    assert (table["output"], table["params"]) == ([512, 768], 512 * 768)
    assert rows[("encoder.relative_embedding", "norm")]["params"] == 2 * 768
    # share_att_key: the table goes through each block's own k / q projections, owning nothing
    keys = rows[("encoder.11.attn", "pos_key_proj")]
    assert keys["output"] == [12, 512, 64] and keys["params"] == 0
    assert keys["flops"] == 512 * (2 * 768 * 768 + 768)
    c2p = rows[("encoder.0.attn", "c2p")]  # every query against all 512 rows, then gathered
    assert c2p["output"] == [1, 12, 16, 16]
    assert c2p["flops"] == 2 * 12 * 16 * 512 * 64 + 12 * 16 * 16
    order = [r["op"] for r in data["rows"] if r["path"] == "encoder.3.attn"]
    assert order[:8] == ["q_proj", "k_proj", "v_proj", "pos_key_proj", "pos_query_proj", "c2p",
                         "p2c", "scores"]
    assert data["total_params"] == total_parameters(load_spec("deberta-v3-base"))


def test_params_names_the_relative_table_and_its_norm(invoke) -> None:  # noqa: ANN001
    report = _json(invoke, "params", "deberta-v3-base")
    rows = {r["name"]: r for r in report["components"]}
    assert rows["encoder.relative_embedding"]["paths"] == ["encoder.relative_embedding"]
    assert rows["encoder.relative_embedding_norm"]["paths"] == [
        "encoder.relative_embedding_norm.scale", "encoder.relative_embedding_norm.bias"]
    assert report["total"] == 183_831_552
