"""`tfcli depth-sweep` through the CLI: the lesson's figures, JSON, CSV, errors."""

from __future__ import annotations

import csv
import io
import json

LESSON = ["depth-sweep", "--sublayer", "linear", "--share-weights", "--d-model", "16",
          "--seq-len", "6", "--weight-scale", "0.3", "--depths", "20", "--seed", "0"]


def test_lesson_figures_in_the_table(invoke) -> None:
    result = invoke(*LESSON)
    assert result.exit_code == 0, result.output
    assert "103.043" in result.stdout and "5.58357" in result.stdout


def test_lesson_figures_in_json_and_the_lessons_assertions(invoke) -> None:
    data = json.loads(invoke(*LESSON, "--format", "json").stdout)
    by_variant = {p["variant"]: p for p in data["points"] if p["depth"] == 20}
    residual, plain = by_variant["pre"]["norm_mean"], by_variant["plain"]["norm_mean"]
    assert round(residual, 3) == 103.043 and round(plain, 4) == 5.5836
    assert 0.5 * data["input_norm"] < residual  # the lesson's first assertion
    assert plain < 0.1 * residual  # and its second


def test_spec_sweep_json_and_csv(invoke) -> None:
    args = ["depth-sweep", "lesson-tiny", "--depths", "1,4,16", "--variants", "pre,plain",
            "--seq-len", "5"]
    data = json.loads(invoke(*args, "-f", "json").stdout)
    assert data["depths"] == [1, 4, 16]
    assert {(p["depth"], p["variant"]) for p in data["points"]} == {
        (d, v) for d in (1, 4, 16) for v in ("pre", "plain")}
    rows = list(csv.DictReader(io.StringIO(invoke(*args, "-f", "csv").stdout)))
    assert len(rows) == 6 and rows[0]["variant"] in ("pre", "plain")


def test_errors(invoke, tmp_path) -> None:
    cases = [
        (["depth-sweep", "--sublayer", "attention", "--d-model", "0"], "d_model"),
        (["depth-sweep", "lesson-tiny", "--variants", "sideways"], "sideways"),
        (["depth-sweep", "lesson-tiny", "--depths", "a,b"], "--depths"),
        (["depth-sweep", "lesson-tiny", "--depths", "1,,4"], "--depths"),
        (["depth-sweep", "lesson-tiny", "--sublayer", "moe"], "moe"),
        (["depth-sweep", "--sublayer", "linear", "--plot", str(tmp_path / "no" / "x.png")], "--plot"),
        (["depth-sweep", "--sublayer", "linear", "--depths", "0"], "--depths"),
        (["depth-sweep", "lesson-tiny", "--d-ff", "0"], "d_ff"),
    ]
    for args, expected in cases:
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert expected in result.stderr, (args, result.stderr)
        # checked before the progress bar starts: the message is all there is on stderr
        assert result.stderr.startswith("tfcli: error:"), (args, result.stderr)
        assert "Traceback" not in result.output
