"""The 12·L·d² estimate is compared like with like: with the non-embedding count it estimates
(the active one for MoE), and says what it leaves out."""

from __future__ import annotations

import json

import pytest

from tfcli.analysis.params_report import build_params_report
from tfcli.sources import load_spec


def test_gpt2_estimate_is_within_a_fraction_of_a_percent_of_non_embedding() -> None:
    report = build_params_report(load_spec("gpt2"))
    assert report.estimate_compared_with == "non-embedding"
    assert report.estimate_reference == report.non_embedding == 85_056_000
    # (84,934,656 - 85,056,000) / 85,056,000; against the total it would be -31.7%
    assert report.estimate_rel_error == pytest.approx(-121_344 / 85_056_000, rel=1e-12)
    assert report.estimate_leaves_out == "" and not any("12·L·d²" in n for n in report.notes)


def test_moe_estimate_is_compared_with_active_non_embedding_and_says_why() -> None:
    report = build_params_report(load_spec("mixtral-8x7b"))
    inactive = report.total - report.active
    assert inactive > 0 and report.estimate_reference == report.non_embedding - inactive
    assert report.estimate_compared_with == "active non-embedding"
    assert any("routed experts" in n and "one dense 4d FFN" in n for n in report.notes)


def test_encoder_decoder_estimate_names_cross_attention() -> None:
    report = build_params_report(load_spec("t5-small"))
    assert "cross-attention" in report.estimate_leaves_out
    assert any("cross-attention" in n for n in report.notes)


def test_every_format_shows_the_like_for_like_comparison(invoke) -> None:
    table = invoke("params", "gpt2")
    assert table.exit_code == 0 and "-0.14% vs exact non-embedding" in table.stdout
    assert "vs exact total" not in table.stdout
    data = json.loads(invoke("params", "gpt2", "-f", "json").stdout)
    assert data["estimate_compared_with"] == "non_embedding"
    assert data["estimate_reference"] == data["non_embedding"]
    assert data["estimate_rel_error"] == pytest.approx(
        (data["estimate_12ld2"] - data["non_embedding"]) / data["non_embedding"], rel=1e-12)
