"""`tfcli diff`: each side's figures are the single-spec commands' own, aligned by component;
the GQA and sliding-window differences of llama-2-7b vs mistral-7b derived by hand."""

from __future__ import annotations

import pytest

from tfcli.analysis.diff import (
    ARCHITECTURE, FLOPS, INFERENCE, KV_CACHE, MEMORY, PARAMETERS, SECTIONS, TOTALS,
    build_spec_diff,
)
from tfcli.analysis.params_report import build_params_report
from tfcli.analysis.trace.build import build_trace
from tfcli.sources import load_spec

LAYERS, D, D_HEAD, F32 = 32, 4096, 128, 4  # llama-2-7b and mistral-7b share these


@pytest.fixture(scope="module")
def llama_mistral():
    return build_spec_diff(load_spec("llama-2-7b"), load_spec("mistral-7b"))


def test_sections_come_in_order(llama_mistral) -> None:
    seen = list(dict.fromkeys(r.section for r in llama_mistral.rows))
    assert seen == list(SECTIONS)


@pytest.mark.parametrize("a, b", [("llama-2-7b", "mistral-7b"), ("gpt2", "gpt2-medium"),
                                  ("gpt2", "bert-base"), ("t5-small", "bart-base")])
def test_each_side_is_what_params_and_trace_report(a: str, b: str) -> None:
    sa, sb = load_spec(a), load_spec(b)
    diff = build_spec_diff(sa, sb)
    seq = min(sa.max_seq_len, sb.max_seq_len)
    for spec, side in ((sa, "a"), (sb, "b")):
        report = build_params_report(spec, context=seq)
        assert getattr(diff.row(TOTALS, "total"), side) == report.total
        assert getattr(diff.row(TOTALS, "non-embedding"), side) == report.non_embedding
        counts = {r.name: r.count for r in report.rows}
        assert {r.name: getattr(r, side) for r in diff.section(PARAMETERS)
                if getattr(r, side) is not None} == counts
        assert getattr(diff.row(FLOPS, f"forward, {seq} tokens"), side) == \
            build_trace(spec, seq_len=seq).flops_per_token
        assert getattr(diff.row(MEMORY, "bfloat16"), side) == 2 * report.total


def test_the_components_sum_to_the_totals_difference() -> None:
    diff = build_spec_diff(load_spec("gpt2"), load_spec("bert-base"))
    assert sum(r.difference for r in diff.section(PARAMETERS)) == diff.row(TOTALS, "total").difference


def test_gqa_keys_and_values_are_a_quarter(llama_mistral) -> None:
    k = llama_mistral.row(PARAMETERS, "decoder.block.attn.k")
    assert (k.a, k.b) == (LAYERS * D * D, LAYERS * D * 8 * D_HEAD)  # 32 vs 8 key/value heads
    assert k.ratio == 0.25 and llama_mistral.row(PARAMETERS, "decoder.block.attn.v").ratio == 0.25
    assert llama_mistral.row(ARCHITECTURE, "n_kv_heads").ratio == 0.25


def test_kv_cache_per_token_is_one_to_four(llama_mistral) -> None:
    per_token = llama_mistral.row(KV_CACHE, "per token (float32)")
    # K and V, every layer, every key/value head: 2 x 32 x heads x 128 values of 4 bytes
    assert per_token.a == 2 * LAYERS * 32 * D_HEAD * F32 == 1_048_576
    assert per_token.b == 2 * LAYERS * 8 * D_HEAD * F32 == 262_144
    assert per_token.ratio == 0.25 and per_token.difference == -786_432


def test_the_ffn_widths_differ_as_d_ff(llama_mistral) -> None:
    ffn = llama_mistral.row(TOTALS, "FFN")
    assert (ffn.a, ffn.b) == (3 * LAYERS * D * 11008, 3 * LAYERS * D * 14336)


def test_a_sliding_window_caps_the_kv_cache_past_it() -> None:
    diff = build_spec_diff(load_spec("llama-2-7b"), load_spec("mistral-7b"), seq_len=8192)
    kept = diff.row(KV_CACHE, "8192 tokens × batch 1, every token kept")
    windowed = diff.row(KV_CACHE, "8192 tokens × batch 1, sliding windows honoured")
    assert (kept.a, kept.b) == (8192 * 1_048_576, 8192 * 262_144)
    assert (windowed.a, windowed.b) == (8192 * 1_048_576, 4096 * 262_144)  # the last 4096 only
    assert windowed.ratio == 1 / 8


def test_no_window_row_within_the_window(llama_mistral) -> None:
    assert [r.name for r in llama_mistral.section(KV_CACHE)] == [
        "per token (float32)", "4096 tokens × batch 1, every token kept"]


def test_gpt2_against_gpt2_medium() -> None:
    diff = build_spec_diff(load_spec("gpt2"), load_spec("gpt2-medium"))
    total = diff.row(TOTALS, "total")
    assert (total.a, total.b, total.difference) == (124_439_808, 354_823_168, 230_383_360)
    assert diff.row(ARCHITECTURE, "decoder_layers").ratio == 2.0
    assert diff.seq_len == 1024 and all(r.present == "both" for r in diff.rows)
    kv = diff.row(KV_CACHE, "per token (float32)")
    assert (kv.a, kv.b) == (2 * 12 * 768 * F32, 2 * 24 * 1024 * F32)


def test_a_component_on_one_side_only() -> None:
    diff = build_spec_diff(load_spec("gpt2"), load_spec("bert-base"))
    pooler = diff.row(PARAMETERS, "pooler")
    assert (pooler.a, pooler.present, pooler.difference, pooler.ratio) == (None, "B", 768 * 768 + 768, None)
    q = diff.row(PARAMETERS, "decoder.block.attn.q")
    assert (q.b, q.present, q.difference) == (None, "A", -q.a)
    assert any(n.startswith("only B (bert-base) has embed.token_type") for n in diff.notes)


def test_batch_and_kv_dtype_reach_the_kv_rows() -> None:
    diff = build_spec_diff(load_spec("gpt2"), load_spec("gpt2-medium"), seq_len=100, batch=3,
                           kv_dtype="bfloat16")
    row = diff.row(KV_CACHE, "100 tokens × batch 3, every token kept")
    assert row.a == 100 * 3 * 2 * 12 * 768 * 2


def test_the_inference_section_is_tfcli_memorys_plan(llama_mistral) -> None:
    from tfcli.analysis.memory.plan import MemoryOptions, build_memory_plan

    for spec_name, side in (("llama-2-7b", "a"), ("mistral-7b", "b")):
        plan = build_memory_plan(load_spec(spec_name), MemoryOptions(seq_len=4096, kv_dtype="float32"))
        rows = {r.name: getattr(r, side) for r in llama_mistral.section(INFERENCE)}
        assert rows["total (4096 tokens × batch 1, bfloat16, sdpa)"] == plan.total
        assert rows["weights"] == getattr(llama_mistral.row(MEMORY, "bfloat16"), side)
        assert rows["KV cache"] == getattr(
            llama_mistral.row(KV_CACHE, "4096 tokens × batch 1, every token kept"), side)


def test_inference_memory_is_left_out_with_a_note_where_it_is_not_modelled() -> None:
    # a decoder-only model with a relative position bias: still refused by the planner (every
    # bundled spec now plans; deberta-v3-base's disentangled attention is modelled)
    from tests.engine.engine_specs import make_spec

    diff = build_spec_diff(make_spec("relative_decoder"), load_spec("gpt2"))
    assert diff.section(INFERENCE) == []
    assert any(n.startswith("inference memory left out: relative_decoder:") for n in diff.notes)


def test_deberta_v3_base_inference_memory_is_planned() -> None:
    from tfcli.analysis.memory.plan import MemoryOptions, build_memory_plan

    diff = build_spec_diff(load_spec("deberta-v3-base"), load_spec("bert-base"))
    plan = build_memory_plan(load_spec("deberta-v3-base"), MemoryOptions(seq_len=512))
    rows = {r.name: r.a for r in diff.section(INFERENCE)}
    assert rows["activations"] == plan.part("activations") > 0
