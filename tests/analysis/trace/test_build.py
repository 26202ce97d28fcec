"""Analytic trace: parameters sum to the exact totals, hand-checked FLOPs, Kaplan's closed form,
folding, row order, input errors, and shapes equal to a real forward pass (--execute)."""

from __future__ import annotations

import json
import math
import tracemalloc

import pytest

from tfcli.spec.counts import total_parameters
from tfcli.analysis.trace.build import TraceReport, build_trace
from tfcli.analysis.trace.check import compare, execute_bytes, execute_check
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec
from tfcli.spec.load import bundled_spec_names
from tfcli.sources import load_spec

BUNDLED = bundled_spec_names()
BIG = {"llama-2-7b", "llama-3-8b", "llama-3.1-8b", "llama-3.2-1b", "mistral-7b", "mixtral-8x7b"}  # > 1 GB per block + tables
HUGE = {"llama-2-70b"}  # 3.4 GB per block
BIG |= {"qwen2.5-7b", "qwen3-8b"}
BIG |= {"phi-3-mini"}
BIG |= {"pythia-1.4b", "gpt-j-6b", "phi-2", "stablelm-2-1.6b"}
BIG |= {"olmo-2-7b", "falcon-7b"}
BIG |= {"gemma-2b", "gemma-2-9b", "gemma-3-1b"}  # 256k-262k vocabularies: 0.3-0.9 G floats
BIG |= {"mt5-small", "umt5-small"}  # 250k-256k vocabularies, head untied: 0.26 G floats
BIG |= {"xlm-roberta-large"}  # 250k vocabulary: 0.26 G floats
MOE = {"qwen1.5-moe-a2.7b", "qwen3-30b-a3b"}  # 60 / 128 experts per block: their widths shrink too
MOE |= {"gpt-oss-20b", "gpt-oss-120b", "granite-3.1-3b-a800m", "olmoe-1b-7b"}
BIG |= {"command-r7b", "glm-4-9b", "starcoder2-3b", "smollm3-3b"}
# 256 / 64 experts, 128 / 16 heads of 192 + 128 dims: d_model and the latent ranks shrink too
# (heads, head widths, experts, groups and the dense first blocks kept); 9 GiB for one V3 block
DEEPSEEK = {"deepseek-v3": 4, "deepseek-v2-lite": 2}
MOE |= {"llama-4-scout"}  # 16 experts and a shared one in each of 48 blocks
MOE |= {"ernie-4.5-21b-a3b"}  # 64 experts, 2 shared, a dense first block
MOE |= {"glm-4.5-air"}  # 128 experts, a dense first block: both run (2 blocks)  # blocks run: the dense ones and one MoE

# B=2, T=3, d=8, H=2, Hkv=1 (GQA), dh=4, d_ff=16, V=11, biases, learned positions, tied head.
TINY = Spec(name="tiny", family="decoder", vocab_size=11, max_seq_len=16, d_model=8, n_heads=2,
            n_kv_heads=1, n_layers=2, d_ff=16, activation="gelu", norm="layernorm")


def _row(report: TraceReport, path: str, op: str) -> tuple[tuple[int, ...], int, int]:
    (row,) = [r for r in report.rows if (r.path, r.op) == (path, op)]
    return row.output, row.params, row.flops


# --- parameters -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", BUNDLED)
def test_row_params_sum_to_total_parameters(name: str) -> None:
    spec = load_spec(name)
    assert build_trace(spec, seq_len=4).total_params == total_parameters(spec)


def test_relative_bias_belongs_to_first_block_scores() -> None:
    report = build_trace(load_spec("t5-small"), seq_len=4)
    assert _row(report, "encoder.0.attn", "scores")[1] == 32 * 8  # buckets x heads
    assert _row(report, "decoder.0.attn", "scores")[1] == 32 * 8
    assert _row(report, "encoder.1.attn", "scores")[1] == 0
    assert _row(report, "decoder.0.cross_attn", "scores")[1] == 0


def test_shared_tables_owned_once_in_encoder_decoder() -> None:
    report = build_trace(load_spec("t5-small"), seq_len=4)
    embeds = [r.params for r in report.rows if r.op == "token_embedding"]
    assert embeds == [32128 * 512, 0]
    assert _row(report, "head", "logits")[1] == 0  # tied


# --- FLOPs ------------------------------------------------------------------------------------


def test_tiny_spec_ops_hand_checked() -> None:
    r = build_trace(TINY, batch=2, seq_len=3)
    a, f = "decoder.0.attn", "decoder.0.ffn"
    # q_proj: 2*B*T*d*(H*dh) + bias B*T*H*dh = 2*6*8*8 + 6*8
    assert _row(r, a, "q_proj") == ((2, 2, 3, 4), 8 * 8 + 8, 816)
    assert _row(r, a, "k_proj") == ((2, 1, 3, 4), 8 * 4 + 4, 2 * 6 * 8 * 4 + 6 * 4)
    assert _row(r, a, "scores") == ((2, 2, 3, 3), 0, 2 * 2 * 2 * 3 * 3 * 4)  # 2*B*H*T*S*dh
    assert _row(r, a, "softmax") == ((2, 2, 3, 3), 0, 3 * 36)
    assert _row(r, a, "weighted_sum") == ((2, 2, 3, 4), 0, 288)
    assert _row(r, a, "out_proj") == ((2, 3, 8), 72, 816)
    assert _row(r, a, "norm") == ((2, 3, 8), 16, 5 * 48)
    assert _row(r, a, "residual_add") == ((2, 3, 8), 0, 48)
    assert _row(r, f, "ffn_up") == ((2, 3, 16), 8 * 16 + 16, 2 * 6 * 8 * 16 + 6 * 16)
    assert _row(r, f, "activation") == ((2, 3, 16), 0, 4 * 96)
    assert _row(r, f, "ffn_down") == ((2, 3, 8), 16 * 8 + 8, 2 * 6 * 16 * 8 + 48)
    assert _row(r, "embed", "token_embedding") == ((2, 3, 8), 11 * 8, 0)
    assert _row(r, "embed", "position_embedding") == ((2, 3, 8), 16 * 8, 48)
    assert _row(r, "head", "logits") == ((2, 3, 11), 0, 2 * 6 * 8 * 11)
    assert r.tokens == 6 and r.flops_per_token == r.total_flops / 6


def test_moe_counts_routed_experts_only() -> None:
    spec = TINY.replace(activation="swiglu", bias=False, n_experts=4, experts_per_token=2)
    r = build_trace(spec, batch=2, seq_len=3)
    assert _row(r, "decoder.0.ffn", "router") == ((2, 3, 4), 8 * 4, 2 * 6 * 8 * 4)
    per_token = 2 * (2 * 8 * 16) + (4 + 1) * 16 + 2 * 16 * 8  # up + gate, gated activation, down
    assert _row(r, "decoder.0.ffn", "experts") == ((2, 3, 8), 4 * 3 * 8 * 16, 6 * 2 * per_token)


def test_gpt2_per_token_flops_match_kaplan_closed_form() -> None:
    # Kaplan et al. 2020, Table 1: 2N + 2 n_layer n_ctx d_attn (scores), doubled here for the
    # weighted sum, plus the de-embedding 2 d_model n_vocab; N = non-embedding parameters.
    spec, n_ctx = load_spec("gpt2"), 1024
    report = build_trace(spec, seq_len=n_ctx)
    non_embedding = total_parameters(spec) - (spec.vocab_size + spec.max_seq_len) * spec.d_model
    closed = (2 * non_embedding + 2 * spec.n_layers * n_ctx * spec.d_model * 2
              + 2 * spec.d_model * spec.vocab_size)
    assert closed < report.flops_per_token < 1.01 * closed  # the rest: elementwise ops


def test_causal_attention_not_halved() -> None:
    r = build_trace(TINY, seq_len=8)
    assert _row(r, "decoder.0.attn", "scores")[2] == 2 * 2 * 8 * 8 * 4  # all T*T pairs
    assert "NOT halved" in r.convention


def test_activation_bytes_follow_dtype() -> None:
    fp32 = build_trace(TINY, seq_len=3)
    bf16 = build_trace(TINY, seq_len=3, dtype="bfloat16")
    assert all(r.act_bytes == 4 * math.prod(r.output) for r in fp32.rows)
    assert bf16.total_act_bytes * 2 == fp32.total_act_bytes
    assert "2 bytes (bfloat16)" in bf16.convention


# --- folding and output forms ------------------------------------------------------------------


@pytest.mark.parametrize("name", BUNDLED)
def test_fold_keeps_totals(name: str) -> None:
    report = build_trace(load_spec(name), seq_len=4)
    for depth in (1, 2, 3):
        rows = report.fold(depth)
        assert sum(r.params for r in rows) == report.total_params
        assert sum(r.flops for r in rows) == report.total_flops
        assert sum(r.act_bytes for r in rows) == report.total_act_bytes


def test_fold_paths_per_depth() -> None:
    report = build_trace(load_spec("gpt2").with_layers(2), seq_len=4)
    assert [r.path for r in report.fold(1)] == [
        "embed", "decoder.0", "decoder.1", "decoder.final_norm", "head"]
    assert [r.path for r in report.fold(2)][:4] == [
        "embed", "decoder.0.attn", "decoder.0.ffn", "decoder.1.attn"]
    block = report.fold(1)[1]
    assert (block.op, block.inputs, block.output) == ("14 ops", ((1, 4, 768),), (1, 4, 768))
    with pytest.raises(BadInputError, match="depth"):
        report.fold(4)


def test_to_dict_and_csv_rows() -> None:
    report = build_trace(load_spec("gpt2").with_layers(2), seq_len=4).at_depth(2)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["total_params"] == report.total_params and data["depth"] == 2
    assert data["total_flops"] == sum(r["flops"] for r in data["rows"])
    assert data["rows"][1]["path"] == "decoder.0.attn" and "convention" in data
    header, rows = report.csv_rows()
    assert header == ["path", "op", "inputs", "output", "params", "flops", "act_bytes"]
    assert len(rows) == len(report.fold(2)) and rows[0][3] == "1x4x768"


# --- order and shapes ---------------------------------------------------------------------------


def test_encoder_decoder_row_order() -> None:
    spec = load_spec("transformer-base").with_layers(2)
    report = build_trace(spec, batch=2, src_len=5, tgt_len=3)
    assert [r.path for r in report.fold(2)] == [
        "embed", "encoder.0.attn", "encoder.0.ffn", "encoder.1.attn", "encoder.1.ffn",
        "embed", "decoder.0.attn", "decoder.0.cross_attn", "decoder.0.ffn",
        "decoder.1.attn", "decoder.1.cross_attn", "decoder.1.ffn", "head",
    ]  # post-LN: no final norms
    cross = [r for r in report.rows if r.path == "decoder.0.cross_attn"]
    assert [r.op for r in cross] == ["q_proj", "k_proj", "v_proj", "scores", "softmax",
                                     "weighted_sum", "out_proj", "residual_add", "norm"]
    assert cross[1].inputs == ((2, 5, 512),) and cross[1].output == (2, 8, 5, 64)
    assert cross[3].output == (2, 8, 3, 5)  # (B, H, tgt, src)
    assert report.tokens == 2 * (5 + 3)


def test_llama_2_70b_trace_is_analytic() -> None:
    spec = load_spec("llama-2-70b")
    tracemalloc.start()
    report = build_trace(spec, seq_len=4096)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 20_000_000  # bytes: rows only, no weight or activation arrays
    assert report.total_params == 68_976_648_192  # Llama-2-70b-hf


def test_default_lengths() -> None:
    assert build_trace(load_spec("lesson-tiny")).seq_len == 64  # max_seq_len < 128
    t5 = build_trace(load_spec("t5-small"), seq_len=20, tgt_len=4)
    assert (t5.seq_len, t5.src_len, t5.tgt_len) == (20, 20, 4)


@pytest.mark.parametrize("kwargs, match", [
    ({"seq_len": 1025}, "max_seq_len 1024"),
    ({"batch": 0}, "--batch"),
    ({"src_len": 4}, "encoder-decoder"),
    ({"dtype": "int3"}, "--dtype"),
])
def test_bad_inputs(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(BadInputError, match=match):
        build_trace(load_spec("gpt2"), **kwargs)  # type: ignore[arg-type]


def test_long_rope_sequence_allowed_learned_target_checked() -> None:
    build_trace(load_spec("lesson-tiny"), seq_len=1000)  # no position table to run past
    with pytest.raises(BadInputError, match="--tgt-len 513"):
        build_trace(load_spec("transformer-base").replace(positions="learned"), tgt_len=513)


# --- execute check ------------------------------------------------------------------------------


def _runnable(name: str) -> Spec:
    """The bundled spec cut to 2 blocks; the 7B-class ones also shrink vocab and d_ff (which
    change no op, only two sizes) so CI allocates ~100 MB rather than 2-7 GB per spec; the 70B
    one also narrows d_model to 1024, keeping its 64 query and 8 key/value heads."""
    spec = load_spec(name)
    if name in HUGE:
        return spec.replace(vocab_size=512, d_ff=256, d_model=1024).with_layers(1)
    if name in BIG:
        return spec.replace(vocab_size=512, d_ff=256).with_layers(1)
    if name in MOE:
        shared = {"shared_expert_d_ff": 64} if spec.n_shared_experts else {}
        return spec.replace(vocab_size=512, d_ff=256, expert_d_ff=32, **shared).with_layers(1)
    if name in DEEPSEEK:
        q_lora = {"q_lora_rank": 64} if spec.q_lora_rank is not None else {}
        return spec.replace(vocab_size=512, d_ff=256, d_model=256, expert_d_ff=32,
                            kv_lora_rank=32, **q_lora).with_layers(DEEPSEEK[name])
    return spec.with_layers(min(2, spec.n_layers))


@pytest.mark.parametrize("name", BUNDLED)
def test_execute_check_matches_every_bundled_spec(name: str) -> None:
    spec = _runnable(name)
    tgt_len = 4 if spec.family == "encoder-decoder" else None  # source 6, target 4
    report = build_trace(spec, batch=2, seq_len=6, tgt_len=tgt_len)
    check = execute_check(spec, report, seed=0)
    assert check.mismatches == () and check.ok, check.to_dict()
    assert check.matches == len(report.rows) == check.observed


def test_execute_check_truncates_to_fit_the_budget() -> None:
    spec = load_spec("lesson-tiny")
    report = build_trace(spec, seq_len=5)
    budget = execute_bytes(spec.with_layers(2), report)
    check = execute_check(spec, report, budget_bytes=budget)
    assert (check.layers, check.spec_layers, check.truncated, check.ok) == (2, 4, True, True)
    assert check.to_dict()["truncated"] is True
    with pytest.raises(BadInputError, match="GiB"):
        execute_check(spec, report, budget_bytes=1)


def test_compare_reports_missing_extra_and_shape() -> None:
    rows = build_trace(TINY, seq_len=3).rows[:4]  # token, position, norm, q_proj
    seen = [(r.path, r.op, r.output) for r in rows]
    seen[1] = ("embed", "surprise", (1,))  # position_embedding replaced
    seen[3] = (*seen[3][:2], (9, 9))  # q_proj shape differs
    matches, mismatches = compare(rows, seen)
    assert matches == 2
    assert sorted((m.kind, m.op) for m in mismatches) == [
        ("extra", "surprise"), ("missing", "position_embedding"), ("shape", "q_proj")]
