"""The bundled modernbert-base through the CLI: trace --execute at three layers (one global, two
local), its rows (no norm before block 0's attention; the masked-LM head), the local layers'
score FLOPs under --window (a bidirectional window of 2 x 65 - 1 keys), and params counting
block 0 without attn_norm (the table's block header still every block) and the decoder's bias
on a row of its own."""

from __future__ import annotations

from tests.cli.guarded import json_output as _json


def test_trace_execute_at_three_layers(invoke) -> None:  # noqa: ANN001
    data = _json(invoke, "trace", "modernbert-base", "--execute", "--layers", "3",
                 "--seq-len", "16")
    assert data["execute"]["ok"], data["execute"]
    ops = [(r["path"], r["op"]) for r in data["rows"]]
    assert ("encoder.0.attn", "norm") not in ops and ("encoder.1.attn", "norm") in ops
    assert ops[-3:] == [("head", "transform"), ("head", "transform_norm"), ("head", "logits")]
    assert "bidirectional sliding window (|i - j| < 65) of the local layers (2 of 3)" \
        in data["convention"]


def test_local_layers_count_their_window_under_the_window_convention(invoke) -> None:  # noqa: ANN001
    rows = _json(invoke, "trace", "modernbert-base", "--layers", "3", "--seq-len", "512",
                 "--window")["rows"]
    scores = {r["path"]: r["flops"] for r in rows if r["op"] == "scores"}
    full = 2 * 12 * 512 * 512 * 64  # B H T S d_head, the global layer's every pair
    assert scores == {"encoder.0.attn": full, "encoder.1.attn": full * 129 // 512,
                      "encoder.2.attn": full * 129 // 512}


def test_params_count_block_0_without_attn_norm(invoke) -> None:  # noqa: ANN001
    report = _json(invoke, "params", "modernbert-base")
    rows = {r["name"]: r for r in report["components"]}
    assert (rows["encoder.block.attn_norm"]["blocks"], rows["encoder.block.attn_norm"]["count"]) \
        == (21, 21 * 768)
    assert rows["encoder.block.ffn_norm"]["blocks"] == 22
    assert rows["lm_head.bias"]["count"] == 50_368  # its own row beside the tied decoder's 0
    assert report["total"] == 149_655_232


def test_the_params_table_heads_the_block_with_every_block(invoke) -> None:  # noqa: ANN001
    result = invoke("params", "modernbert-base")
    assert result.exit_code == 0, result.output
    assert "encoder block (× 22)" in result.stdout and "subtotal × 22" in result.stdout
