"""`tfcli params` and `tfcli trace` on multi-head latent attention through the CLI: the tiny
DeepSeek-shaped fixture, DeepSeek-V3's KV cache at 32,768 tokens in bfloat16 (issue 15,
acceptance 3) and the bundled DeepSeek specs' traces at a few blocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.guarded import json_output as _json
from tfcli.spec.counts import ROUTER_BIAS_NOTE, total_parameters
from tfcli.sources import load_spec

FIXTURE = str(Path(__file__).parents[1] / "fixtures" / "tiny-mla.yaml")


def test_params_shows_the_latent_cache_and_full_multi_head_kv(invoke) -> None:
    args = ["params", "deepseek-v3", "--context", "32768", "--kv-dtype", "bfloat16"]
    table = invoke(*args)
    assert table.exit_code == 0, table.output
    for text in ("KV cache, MLA latent", "1,152 B", "full multi-head K/V", "81,920 B",
                 "71.1×", "2.14 GiB"):
        assert text in table.stdout, text
    kv = _json(invoke, *args)["kv_cache"]
    assert (kv["per_layer_token_bytes"], kv["expanded_per_layer_token_bytes"]) == (1152, 81920)
    assert kv["total_bytes"] == 61 * 32768 * 1152 and kv["latent"] is True
    assert kv["expanded_total_bytes"] == 61 * 32768 * 81920


def test_params_shows_the_router_bias_buffer_with_its_note(invoke) -> None:
    table = invoke("params", FIXTURE)
    assert table.exit_code == 0, table.output
    for text in ("router.bias (buffer, MoE × 2)",
                 "note: decoder.block.router.bias: buffer, not a parameter: chooses experts "
                 "only; 16 values, in no count",
                 "ffn.up (dense × 1)", "47,288", "MoE: 2 of 8 routed experts per MoE block"):
        assert text in table.stdout, text
    data = _json(invoke, "params", FIXTURE)
    bias = next(c for c in data["components"] if c["name"] == "decoder.block.router.bias")
    assert (bias["count"], bias["buffer_values"], bias["note"]) == (0, 16, ROUTER_BIAS_NOTE)
    assert data["block_subtotals"]["decoder"] == {"per_block": None, "n_layers": 3,
                                                  "total": 47_288}


def test_trace_execute_on_the_tiny_latent_spec(invoke) -> None:
    result = invoke("trace", FIXTURE, "--execute", "--seq-len", "6", "--batch", "2")
    assert result.exit_code == 0, result.output
    assert "execute check: shapes match — 55/55" in result.stdout
    assert "Latent attention (MLA)" in result.stdout


@pytest.mark.parametrize(("name", "layers"), [("deepseek-v3", 4), ("deepseek-v2-lite", 2)])
def test_trace_of_the_bundled_deepseek_specs(invoke, name: str, layers: int) -> None:
    data = _json(invoke, "trace", name, "--layers", str(layers), "--seq-len", "16")
    assert data["total_params"] == total_parameters(load_spec(name).with_layers(layers))
    ops = {(r["path"], r["op"]) for r in data["rows"]}
    last = f"decoder.{layers - 1}"
    assert {(f"{last}.attn", "kv_b_proj"), (f"{last}.ffn", "router"),
            (f"{last}.ffn", "shared_experts"), ("decoder.0.ffn", "ffn_up")} <= ops
