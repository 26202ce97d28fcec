"""FLOP conventions recount the trace's rows: MACs are FLOPs / 2 in matmul rows, causal halving
halves exactly QK^T and PV of causal self-attention, a sliding window keeps the band of keys it
covers (hand-computed for mistral-7b and gemma-2-9b), matmuls-only zeroes the rest."""

from __future__ import annotations

import pytest

from tfcli.analysis.trace.conventions import (
    MATMUL_OPS, PAIR_OPS, FlopConvention, apply_convention, pair_fraction,
)
from tfcli.analysis.trace.build import build_trace
from tfcli.sources import load_spec



def _both(name: str, convention: FlopConvention, seq_len: int = 64, layers: int = 2):
    spec = load_spec(name).with_layers(layers)
    report = build_trace(spec, seq_len=seq_len)
    return spec, report, apply_convention(report, spec, convention)


def test_the_default_convention_changes_nothing() -> None:
    spec = load_spec("gpt2").with_layers(2)
    report = build_trace(spec, seq_len=32)
    assert apply_convention(report, spec, FlopConvention()) is report
    assert "(the trace's default)" in FlopConvention().describe()


def test_macs_are_half_the_flops_of_every_matmul_row() -> None:
    _, report, macs = _both("llama-3.2-1b", FlopConvention(macs=True))  # no biases: exact halves
    for before, after in zip(report.rows, macs.rows):
        if before.op in MATMUL_OPS:
            assert 2 * after.flops == before.flops, before
        else:
            assert after.flops == before.flops, before
    assert "MACs" in macs.convention and macs.total_params == report.total_params


def test_a_bias_add_counts_half_a_mac() -> None:
    _, report, macs = _both("gpt2", FlopConvention(macs=True))
    q = next(i for i, r in enumerate(report.rows) if r.op == "q_proj")
    assert report.rows[q].flops % 2 == 0  # 64 tokens x 768 bias adds: even, so exactly half
    assert macs.rows[q].flops * 2 == report.rows[q].flops


def test_causal_halving_halves_exactly_scores_and_weighted_sum() -> None:
    _, report, half = _both("gpt2", FlopConvention(causal_half=True))
    pairs = sum(r.flops for r in report.rows if r.op in PAIR_OPS)
    assert pairs > 0
    assert report.total_flops - half.total_flops == pairs // 2
    for before, after in zip(report.rows, half.rows):
        want = before.flops // 2 if before.op in PAIR_OPS else before.flops
        assert after.flops == want, before


def test_causal_halving_leaves_encoders_and_cross_attention_alone() -> None:
    _, bert, bert_half = _both("bert-base", FlopConvention(causal_half=True))
    assert bert_half.total_flops == bert.total_flops
    _, t5, t5_half = _both("t5-small", FlopConvention(causal_half=True))
    for before, after in zip(t5.rows, t5_half.rows):
        halved = before.op in PAIR_OPS and before.path.startswith("decoder.") \
            and before.path.endswith(".attn")
        assert after.flops == (before.flops // 2 if halved else before.flops), before


def test_a_sliding_window_keeps_its_band_of_keys() -> None:
    # mistral-7b: w = 4096 at T = S = 8192; every layer local.
    T, w = 8192, 4096
    _, report, windowed = _both("mistral-7b", FlopConvention(window=True), seq_len=T)
    _, _, both = _both("mistral-7b", FlopConvention(window=True, causal_half=True), seq_len=T)
    for before, win, band in zip(report.rows, windowed.rows, both.rows):
        if before.op in PAIR_OPS:
            assert win.flops == before.flops * w // T  # T min(w, S) of T S pairs
            assert band.flops == before.flops * (T * w - w * w // 2) // (T * T)  # 0.375
        else:
            assert win.flops == band.flops == before.flops


def test_a_window_applies_to_local_layers_only() -> None:
    spec = load_spec("gemma-2-9b").with_layers(2)  # [local, global]
    fractions = [pair_fraction(spec, f"decoder.{i}.attn", 8192, 8192, FlopConvention(window=True))
                 for i in (0, 1)]
    assert fractions == [0.5, 1.0]
    # a window at least as long as the keys hides nothing; one decode query sees every key
    assert pair_fraction(spec, "decoder.0.attn", 100, 100, FlopConvention(window=True)) == 1.0
    assert pair_fraction(spec, "decoder.1.attn", 1, 100, FlopConvention(causal_half=True)) == 1.0
    assert pair_fraction(spec, "decoder.0.cross_attn", 64, 64, FlopConvention(causal_half=True)) == 1.0


def test_matmuls_only_zeroes_every_elementwise_row() -> None:
    _, report, matmuls = _both("gpt2", FlopConvention(matmuls_only=True))
    assert matmuls.total_flops == sum(r.flops for r in report.rows if r.op in MATMUL_OPS)
    assert all(a.flops == 0 for a in matmuls.rows if a.op not in MATMUL_OPS)
    assert matmuls.total_flops < report.total_flops


@pytest.mark.parametrize("convention", [FlopConvention(macs=True, matmuls_only=True),
                                        FlopConvention(causal_half=True, window=True)])
def test_the_convention_line_says_what_was_recounted(convention: FlopConvention) -> None:
    _, _, recounted = _both("gpt2", convention)
    assert recounted.convention.startswith(f"Recounted: {convention.describe()}; from")
    assert convention.to_dict()["text"] == convention.describe()
