"""The perf formulas on hand-computed cases: one op on the roofline, decode bytes and time,
training FLOPs (exact vs 6N for gpt2, within the attention term), GPU-hours, and bad options.
Nothing here is timed: the accelerator is made up, so every figure is arithmetic."""

from __future__ import annotations

import math

import pytest

from tfcli.analysis.perf import estimate as perf
from tfcli.analysis.gpus.catalog import Accelerator, find_gpu
from tfcli.analysis.perf.estimate import PerfOptions, build_perf_estimate, matmul_params
from tfcli.analysis.trace.build import build_trace
from tfcli.analysis.trace.rows import TraceRow
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import inactive_expert_parameters, total_parameters
from tfcli.sources import load_spec

# 1 TFLOP/s in every dtype, 1 TB/s: seconds are FLOPs / 1e12 or bytes / 1e12
UNIT = Accelerator("unit", (), "test", 2**34, 1.0, 1.0, 1.0, 1.0, 1e12, "https://example.org")


@pytest.fixture
def unit_gpu(monkeypatch: pytest.MonkeyPatch) -> Accelerator:
    monkeypatch.setattr(perf, "find_gpu", lambda name, width=None: UNIT)
    return UNIT


def _row(op: str, flops: int, params: int = 0, inputs=((8, 16),), output=(8, 16)) -> TraceRow:
    return TraceRow("decoder.0.ffn", op, tuple(inputs), output, params, flops, 0)


def test_one_op_on_the_roofline_is_the_slower_of_compute_and_memory() -> None:
    compute = perf._op_time(_row("ffn_up", 2 * 10**12), 10**11, UNIT, UNIT.peak_flops("bfloat16"))
    memory = perf._op_time(_row("ffn_up", 10**9), 10**12, UNIT, UNIT.peak_flops("bfloat16"))
    assert (compute.seconds, compute.bound) == (pytest.approx(2.0), "compute")
    assert (memory.seconds, memory.bound) == (pytest.approx(1.0), "memory")


def test_an_op_moves_its_weights_inputs_and_output() -> None:
    row = _row("ffn_up", 0, params=16 * 64, inputs=((1, 8, 16),), output=(1, 8, 64))
    assert perf._row_bytes(load_spec("gpt2"), row, 2, 2) == 2 * 16 * 64 + 2 * (8 * 16 + 8 * 64)
    gather = TraceRow("embed", "token_embedding", ((1, 8),), (1, 8, 16), 256 * 16, 0, 0)
    assert perf._row_bytes(load_spec("gpt2"), gather, 2, 2) == 2 * (8 + 2 * 8 * 16)  # no table
    tied = TraceRow("head", "logits", ((1, 8, 768),), (1, 8, 50257), 0, 1, 0)
    gpt2 = load_spec("gpt2")
    assert perf._row_bytes(gpt2, tied, 2, 2) == 2 * 50257 * 768 + 2 * 8 * (768 + 50257)


def test_flash_attention_keeps_the_score_matrix_off_memory() -> None:
    spec = load_spec("gpt2")
    q, kv, scores = (1, 12, 64, 64), (1, 12, 64, 64), (1, 12, 64, 64)
    rows = {op: TraceRow("decoder.0.attn", op, inputs, out, 0, 1, 0) for op, inputs, out in (
        ("scores", (q, kv), scores), ("softmax", (scores,), scores),
        ("weighted_sum", (scores, kv), q))}
    n = 12 * 64 * 64
    flash = {op: perf._row_bytes(spec, r, 2, 2, "flash") for op, r in rows.items()}
    eager = {op: perf._row_bytes(spec, r, 2, 2, "eager") for op, r in rows.items()}
    assert flash == {"scores": 2 * 2 * n, "softmax": 0, "weighted_sum": 2 * 2 * n}
    assert eager == {"scores": 2 * 3 * n, "softmax": 2 * 2 * n, "weighted_sum": 2 * 3 * n}


def test_prefill_sums_the_roofline_and_takes_the_slower_estimate(unit_gpu) -> None:
    spec = load_spec("gpt2").with_layers(2)
    e = build_perf_estimate(spec, PerfOptions(gpu="unit", seq_len=64, mfu=0.25))
    trace = build_trace(spec, seq_len=64, dtype="bfloat16")
    assert e.prefill.flops == trace.total_flops
    assert e.prefill.compute_seconds == pytest.approx(trace.total_flops / 0.25e12)
    by_row = [max(r.flops, perf._row_bytes(spec, r, 2, 2)) / 1e12 for r in trace.rows]
    assert e.prefill.roofline_seconds == pytest.approx(sum(by_row))
    assert e.ttft_seconds == max(e.prefill.compute_seconds, e.prefill.roofline_seconds)


def test_decode_reads_the_weights_and_the_kv_cache(unit_gpu) -> None:
    spec = load_spec("gpt2").with_layers(2)
    e = build_perf_estimate(spec, PerfOptions(gpu="unit", batch=4, seq_len=100))
    d = e.decode
    weights = total_parameters(spec) - 1024 * 768  # the position table is gathered, not read
    assert d.weight_bytes == 2 * weights  # tied: the token table is read once, as the head
    assert d.kv_bytes == 2 * 100 * 2 * 768 * 4 * 2  # K and V, context, layers, d, batch, bytes
    assert d.memory_seconds == pytest.approx((d.weight_bytes + d.kv_bytes) / 1e12)
    assert d.tokens_per_s == pytest.approx(4 / max(d.memory_seconds, d.flops / 1e12))
    # the step's FLOPs: 4 tokens through every matmul, attention over 100 keys
    one = build_trace(spec, batch=4, seq_len=1)
    pairs = sum(r.flops for r in one.rows if r.op in perf.SCORE_OPS)
    assert d.flops == one.total_flops + 99 * pairs


def test_a_float8_cache_is_a_quarter_of_float32(unit_gpu) -> None:
    spec = load_spec("gpt2").with_layers(2)
    read = {kv: build_perf_estimate(spec, PerfOptions(gpu="unit", seq_len=100, kv_dtype=kv))
            .decode.kv_bytes for kv in ("float32", "float8")}
    assert read == {"float32": 100 * 2 * 2 * 768 * 4, "float8": 100 * 2 * 2 * 768}


def test_a_sliding_window_caps_the_decode_cache(unit_gpu) -> None:
    spec = load_spec("mistral-7b").with_layers(2)
    d = build_perf_estimate(spec, PerfOptions(gpu="unit", seq_len=8192)).decode
    assert d.kv_bytes == 2 * 4096 * 2 * 8 * 128 * 2  # the rolling window, not 8192 tokens


def test_moe_decode_reads_the_experts_its_tokens_use() -> None:
    spec = load_spec("mixtral-8x7b")
    inactive = inactive_expert_parameters(spec)
    table = spec.vocab_size * spec.d_model  # untied: the token table is gathered
    assert matmul_params(spec, 1) == total_parameters(spec) - table - inactive
    assert matmul_params(spec, 4) == total_parameters(spec) - table  # 4 x 2 experts: all 8


def test_gpt2_training_flops_are_6n_plus_the_attention_term(unit_gpu) -> None:
    """3 x forward = 6N + 12 L S d (QK^T and PV, every pair) + the elementwise ops and bias
    adds, which the stated constants put under 0.5% of the whole for gpt2 at 1024 (0.19%)."""
    spec = load_spec("gpt2")
    t = build_perf_estimate(spec, PerfOptions(gpu="unit", seq_len=1024, train=True)).training
    attention = 12 * 12 * 1024 * 768
    rest = t.flops_per_token - t.six_n - attention
    assert 0 < rest < 0.005 * t.flops_per_token
    assert t.matmul_params == total_parameters(spec) - 1024 * 768


def test_full_recomputation_runs_the_forward_twice(unit_gpu) -> None:
    spec = load_spec("gpt2").with_layers(2)
    plain = build_perf_estimate(spec, PerfOptions(gpu="unit", seq_len=64, train=True)).training
    full = build_perf_estimate(spec, PerfOptions(gpu="unit", seq_len=64, train=True,
                                                 recompute="full")).training
    assert full.flops_per_token == pytest.approx(plain.flops_per_token * 4 / 3)


def test_gpu_hours_follow_from_the_flops_and_the_mfu(unit_gpu) -> None:
    spec = load_spec("gpt2").with_layers(2)
    options = PerfOptions(gpu="unit", batch=2, seq_len=64, mfu=0.5, train=True, tokens=1e9, gpus=8)
    t = build_perf_estimate(spec, options).training
    assert t.gpu_hours == pytest.approx(1e9 * t.flops_per_token / 0.5e12 / 3600)
    assert t.step_tokens == 8 * 2 * 64
    assert t.step_seconds == pytest.approx(2 * 64 * t.flops_per_token / 0.5e12)


def test_an_encoder_has_no_decode_and_says_so() -> None:
    e = build_perf_estimate(load_spec("bert-base").with_layers(2), PerfOptions(gpu="h100"))
    assert e.decode is None and any("no decode estimate" in n for n in e.notes)
    assert e.dtype == "bfloat16" and e.seq_len == 512


@pytest.mark.parametrize(("changes", "message"), [
    ({"mfu": 0.0}, r"--mfu must be in \(0, 1\]"), ({"mfu": 1.01}, r"--mfu must be in \(0, 1\]"),
    ({"mfu": math.nan}, r"--mfu must be in \(0, 1\]"), ({"recompute": "some"}, "--recompute"),
    ({"tokens": -1.0}, "--train-tokens"), ({"attention": "sdpa"}, "--attention must be one of"), ({"dtype": "int4"}, "--dtype must be one of"),
    ({"dtype": "float8", "gpu": "a100"}, "--dtype float8: A100 SXM 80GB has no float8"),
    ({"gpu": "h1000"}, "did you mean 'h100'"),
])
def test_bad_options_are_one_message(changes: dict, message: str) -> None:
    options = PerfOptions(**{"gpu": "h100", **changes})
    with pytest.raises(BadInputError, match=message):
        build_perf_estimate(load_spec("gpt2").with_layers(1), options)


def test_mfu_one_is_allowed() -> None:
    e = build_perf_estimate(load_spec("gpt2").with_layers(1), PerfOptions(gpu="t4", mfu=1.0))
    assert e.dtype == "float16" and e.prefill.compute_seconds == pytest.approx(
        e.prefill.flops / find_gpu("t4").peak_flops("float16"))


# --- --expert-dtype: the routed experts as stored (gpt-oss's MXFP4) -------------------------


def test_mxfp4_experts_read_4_25_bits_a_weight_in_decode() -> None:
    """gpt-oss-20b, batch 1: 4 of 32 experts a block read, their three (2880, 2880) matrices
    at 4.25 bits a weight, every other matrix parameter (the embedding table is gathered) at
    bfloat16's 2 bytes."""
    spec = load_spec("gpt-oss-20b")
    plain = build_perf_estimate(spec, PerfOptions(gpu="h100", seq_len=1024))
    packed = build_perf_estimate(spec, PerfOptions(gpu="h100", seq_len=1024,
                                                   expert_dtype="mxfp4"))
    experts = 4 * 24 * 3 * 2880 * 2880
    assert plain.decode.weight_bytes == 2 * matmul_params(spec)
    assert packed.decode.weight_bytes == math.ceil(
        (matmul_params(spec) - experts) * 2 + experts * 4.25 / 8)
    # the prefill's experts rows read every expert at the packed size (biases at 2 bytes)
    assert packed.prefill.bytes < plain.prefill.bytes
    assert packed.decode.tokens_per_s > 1.9 * plain.decode.tokens_per_s


def test_expert_dtype_is_refused_where_it_means_nothing(invoke) -> None:  # noqa: ANN001
    result = invoke("perf", "gpt2", "--gpu", "h100", "--expert-dtype", "mxfp4")
    assert result.exit_code == 2 and "--expert-dtype: gpt2 has no experts" in result.stderr
    result = invoke("perf", "gpt-oss-20b", "--gpu", "h100", "--expert-dtype", "mxfp4",
                    "--train")
    assert result.exit_code == 2 and "--expert-dtype applies only without --train" in \
        result.stderr
