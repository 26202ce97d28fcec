"""`tfcli gpus` and `tfcli perf` tables on narrow terminals: every line fits COLUMNS=40, 60
and 80, and no number is cut (the helpers of tests/render/test_narrow.py)."""

from __future__ import annotations

import pytest

from tests.render.test_narrow import WIDTHS, assert_fits, table_and_json, whole


@pytest.mark.parametrize("width", WIDTHS)
def test_gpus(width: int) -> None:
    text, data = table_and_json(["gpus"], width)
    assert_fits(text, width)
    for entry in data["accelerators"]:
        assert whole(text, f"{entry['bandwidth_bytes_per_s'] / 1e9:,.0f}"), entry["name"]


@pytest.mark.parametrize("width", WIDTHS)
def test_perf(width: int) -> None:
    args = ["perf", "llama-2-7b", "--gpu", "a100", "--layers", "2", "--seq-len", "512",
            "--train", "--train-tokens", "1e9", "--gpus", "4"]
    text, data = table_and_json(args, width)
    assert_fits(text, width)
    assert whole(text, f"{data['decode']['tokens_per_s']:,.0f}")
    assert whole(text, f"{data['training']['tokens_per_s']:,.0f}")
    for label in ("time to first token", "decode tokens/s", "GPU-hours"):
        assert label in " ".join(text.split())
