"""params and trace for the Gemma fields: the hybrid local/global KV cache (local layers hold
min(context, sliding_window) tokens), soft-capping and embedding-scale rows with their FLOPs,
and trace --execute agreeing with a real forward pass."""

from __future__ import annotations

import math

import pytest

from tests.engine.engine_specs import make_spec
from tfcli.analysis.params_report import build_params_report
from tfcli.analysis.trace.build import ACTIVATION_FLOPS, build_trace
from tfcli.analysis.trace.check import execute_check
from tfcli.spec.counts import kv_cache_bytes, kv_cache_window_bytes
from tfcli.spec.model import Spec

# Gemma 2 9B's attention shape: 42 layers alternating local (4,096) / global, 8 KV heads of 256
GEMMA2_9B = Spec(name="g2", family="decoder", vocab_size=256000, max_seq_len=8192, d_model=3584,
                 n_heads=16, n_kv_heads=8, d_head=256, n_layers=42, d_ff=14336,
                 activation="geglu_tanh", norm="rmsnorm", positions="rope", bias=False,
                 sliding_window=4096, layer_pattern=["local", "global"])


def test_hybrid_kv_cache_keeps_the_window_on_local_layers_only() -> None:
    per_layer_token = 2 * 8 * 256 * 4  # K and V, float32
    full = kv_cache_bytes(GEMMA2_9B, 8192)
    assert full == 42 * 8192 * per_layer_token  # the engine's cache: every token, every layer
    # 21 local layers hold the last 4,096 tokens, 21 global ones all 8,192
    assert kv_cache_window_bytes(GEMMA2_9B, 8192) == (21 * 4096 + 21 * 8192) * per_layer_token
    # a context within the window: nothing to save
    assert kv_cache_window_bytes(GEMMA2_9B, 4096) is None
    # without a pattern (Mistral) every layer is local
    mistral = GEMMA2_9B.replace(layer_pattern=None)
    assert kv_cache_window_bytes(mistral, 8192, batch=2) == 2 * 42 * 4096 * per_layer_token


def test_params_report_shows_the_hybrid_cache() -> None:
    kv = build_params_report(GEMMA2_9B, context=8192, kv_dtype="bfloat16").kv_cache
    assert (kv.window, kv.local_layers, kv.layers) == (4096, 21, 42)
    assert kv.window_bytes == (21 * 4096 + 21 * 8192) * 2 * 8 * 256 * 2


def test_params_cli_prints_the_windowed_local_layers(invoke, write_spec) -> None:
    path = write_spec("name: g\nfamily: decoder\nvocab_size: 64\nmax_seq_len: 64\nd_model: 16\n"
                      "n_heads: 4\nn_layers: 6\nd_ff: 32\npositions: rope\nsliding_window: 8\n"
                      "layer_pattern: [local, local, global]\n")
    result = invoke("params", str(path), "--context", "32")
    assert result.exit_code == 0, result.output
    assert "KV cache, windowed local layers" in result.output
    assert "4 local layers × the last 8 tokens + 2 global × 32" in result.output


def test_trace_rows_for_softcaps_and_embedding_scale() -> None:
    spec = make_spec("gemma_hybrid")
    report = build_trace(spec, batch=2, seq_len=9)
    rows = {(r.path, r.op): r for r in report.rows}
    scores = (2, spec.n_heads, 9, 9)
    cap = rows[("decoder.0.attn", "softcap")]
    assert cap.output == scores and cap.flops == ACTIVATION_FLOPS * math.prod(scores)
    ops = [r.op for r in report.rows if r.path == "decoder.0.attn"]
    assert ops.index("softcap") == ops.index("scores") + 1  # before the mask and softmax
    logits = rows[("head", "softcap")]
    assert logits.output == (2, 9, spec.vocab_size)
    assert logits.flops == ACTIVATION_FLOPS * 2 * 9 * spec.vocab_size
    assert rows[("embed", "embed_scale")].flops == 2 * 9 * spec.d_model
    assert "Soft-capping" in report.convention and "local layers (1 of 2)" in report.convention


@pytest.mark.parametrize("seq_len", [2, 9])  # within and past the 3-token window
def test_trace_execute_matches_a_hybrid_forward(seq_len: int) -> None:
    spec = make_spec("gemma_hybrid", n_layers=3)
    check = execute_check(spec, build_trace(spec, batch=2, seq_len=seq_len))
    assert check.ok, check.mismatches


def test_plain_specs_have_no_new_rows() -> None:
    report = build_trace(make_spec("llama_gqa"), seq_len=5)
    assert not {"softcap", "embed_scale"} & {r.op for r in report.rows}
    assert "Soft-capping" not in report.convention


def test_the_staged_replay_runs_each_block_as_its_kind() -> None:
    """finite.py replays a pass block by block (to name the first non-finite stage): on a
    hybrid stack its output equals the forward pass's, the global block unwindowed."""
    import numpy as np

    from tfcli.analysis.run.finite import _stages
    from tfcli.engine.init import init_weights
    from tfcli.engine.model import forward

    spec = make_spec("gemma_hybrid", n_layers=3)
    weights = init_weights(spec, seed=2, dtype=np.float64)
    tokens = np.random.default_rng(0).integers(0, spec.vocab_size, size=(2, 9))
    *_, (where, logits) = _stages(spec, weights, tokens, None)
    assert where == "the output logits"
    np.testing.assert_allclose(logits, forward(spec, weights, tokens).logits, rtol=1e-12, atol=1e-12)
