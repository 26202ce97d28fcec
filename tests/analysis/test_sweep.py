"""Sweeps: the comma lists parsed once and bounded, and each point exactly the builder's own
one-point result (the first client: trace's totals)."""

from __future__ import annotations

import pytest

from tfcli.analysis.sweep import (
    MAX_POINTS, Figure, SweepAxes, SweepPoint, parse_axis, run_sweep, sweep_axes, trace_sweep,
)
from tfcli.analysis.trace.build import build_trace
from tfcli.core.errors import BadInputError
from tfcli.sources import load_spec


def test_axes_keep_the_order_given_and_points_are_batch_major() -> None:
    axes = sweep_axes("8, 1", "64,16", default_seq_len=128)
    assert axes == SweepAxes((8, 1), (64, 16)) and axes.is_sweep
    assert axes.points == [SweepPoint(8, 64), SweepPoint(8, 16), SweepPoint(1, 64), SweepPoint(1, 16)]


def test_one_value_each_is_a_point_not_a_sweep() -> None:
    axes = sweep_axes("4", None, default_seq_len=128)
    assert axes.points == [SweepPoint(4, 128)] and not axes.is_sweep


@pytest.mark.parametrize("text, says", [
    ("0", "at least 1"), ("1,0,8", "at least 1"), ("", "is empty"), ("1,,2", "item 2 of 3"),
    ("a", "ASCII digits"), ("-1", "ASCII digits"), ("1_0", "ASCII digits"), ("１", "ASCII digits"),
    ("8,1,8", "repeats 8"), (",".join(map(str, range(1, MAX_POINTS + 2))), f"at most {MAX_POINTS}"),
    ("1" * 30, "digits"),
])
def test_a_bad_list_is_refused_naming_the_option(text: str, says: str) -> None:
    with pytest.raises(BadInputError, match="--batch") as err:
        parse_axis(text, "--batch")
    assert says in err.value.message


def test_too_many_points_in_all_names_both_options() -> None:
    with pytest.raises(BadInputError, match=r"--batch x --seq-len is 8 x 9 = 72 points"):
        sweep_axes("1,2,3,4,5,6,7,8", "1,2,3,4,5,6,7,8,9", default_seq_len=128)
    assert len(sweep_axes("1,2,3,4,5,6,7,8", "1,2,3,4,5,6,7,8", 128).points) == MAX_POINTS


def test_a_trace_sweep_is_the_trace_at_every_point() -> None:
    spec = load_spec("gpt2")
    result = trace_sweep(spec, sweep_axes("1,4", "16,64", default_seq_len=128))
    assert [p for p, _ in result.pairs] == result.axes.points
    for (point, report), row in zip(result.pairs, result.values):
        alone = build_trace(spec, batch=point.batch, seq_len=point.seq_len)
        assert report == alone
        assert row == (alone.total_flops, alone.flops_per_token, alone.total_act_bytes)


def test_flops_scale_with_batch_exactly() -> None:
    result = trace_sweep(load_spec("lesson-tiny"), sweep_axes("1,3", "8", default_seq_len=8))
    one, three = result.column("flops")
    assert three == 3 * one and result.column("flops_per_token")[0] == result.column("flops_per_token")[1]


def test_series_give_a_line_per_batch() -> None:
    result = trace_sweep(load_spec("lesson-tiny"), sweep_axes("1,2", "8,16", default_seq_len=8))
    lines = result.series("act_bytes")
    assert [(b, xs) for b, xs, _ in lines] == [(1, [8, 16]), (2, [8, 16])]
    assert lines[1][2] == [2 * v for v in lines[0][2]]  # op outputs scale with the batch


def test_csv_and_json_carry_every_point() -> None:
    result = trace_sweep(load_spec("lesson-tiny"), sweep_axes("1,2", "8", default_seq_len=8))
    header, rows = result.csv_rows()
    assert header == ["batch", "seq_len", "flops", "flops_per_token", "act_bytes"]
    assert [r[:2] for r in rows] == [[1, 8], [2, 8]]
    data = result.to_dict()
    assert data["command"] == "trace" and data["batches"] == [1, 2]
    assert data["points"][1]["result"]["batch"] == 2 and data["points"][1]["flops"] == rows[1][2]


def test_a_non_finite_or_missing_figure_is_none() -> None:
    figures = (Figure("x", "x", "", lambda r: float("inf")), Figure("y", "y", "", lambda r: None))
    result = run_sweep("t", "s", sweep_axes("1", "2,3", 2), lambda p: p, figures)
    assert result.values == ((None, None), (None, None))


def test_progress_counts_the_points() -> None:
    seen: list[tuple[int, int]] = []
    run_sweep("t", "s", sweep_axes("1,2", "3", 3), lambda p: p, (),
              progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]
