"""JSON output is always strict JSON: non-finite floats are written as null, never NaN/Infinity."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from tfcli.render import output
from tfcli.render.output import OutputFormat, emit, json_safe, to_json


def _strict_loads(text: str) -> Any:
    # json.loads accepts NaN / Infinity by default; real JSON parsers (jq, browsers) do not.
    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


class _Result:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        return self.data

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        return ["x"], [[1]]


NON_FINITE = {
    "nan": math.nan,
    "inf": [math.inf, -math.inf, 1.5],
    "np32": np.float32("nan"),
    "np64": np.float64("inf"),
    "array": np.array([[1.0, np.nan], [np.inf, 2.0]]),
    "nested": {"deeper": ({"x": -math.inf, "n": np.int64(3), "ok": np.bool_(True)},)},
    "plain": {"s": "NaN", "i": 7, "none": None},
}
EXPECTED = {
    "nan": None,
    "inf": [None, None, 1.5],
    "np32": None,
    "np64": None,
    "array": [[1.0, None], [None, 2.0]],
    "nested": {"deeper": [{"x": None, "n": 3, "ok": True}]},
    "plain": {"s": "NaN", "i": 7, "none": None},
}


def test_emit_json_writes_non_finite_floats_as_null(capsys: pytest.CaptureFixture[str]) -> None:
    emit(_Result(NON_FINITE), OutputFormat.json, lambda: "")
    out = capsys.readouterr().out
    assert "NaN" not in out.replace('"NaN"', "") and "Infinity" not in out
    assert _strict_loads(out) == EXPECTED


def test_json_safe_gives_plain_python_values() -> None:
    safe = json_safe({"f": np.float32(0.5), "a": np.arange(2)})
    assert safe == {"f": 0.5, "a": [0, 1]}
    assert isinstance(safe, dict)
    assert type(safe["f"]) is float and [type(v) for v in safe["a"]] == [int, int]


def test_an_unconverted_non_finite_float_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    # The allow_nan=False safety net: if conversion ever misses a float, no invalid JSON is written.
    monkeypatch.setattr(output, "json_safe", lambda value: value)
    with pytest.raises(ValueError):
        to_json({"x": math.nan})


class _FullDisk:
    """A stdout whose device is full: every write fails as /dev/full's does."""

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("fmt", [OutputFormat.json, OutputFormat.csv])
def test_a_full_stdout_is_one_output_error(fmt: OutputFormat, monkeypatch) -> None:
    from tfcli.core.errors import EXIT_OUTPUT_FAILED, OutputError

    class Rows(_Result):
        def csv_rows(self) -> tuple[list[str], list[list[object]]]:
            return ["a"], [[1]]

    monkeypatch.setattr("sys.stdout", _FullDisk())
    with pytest.raises(OutputError, match="cannot write the output: No space left") as err:
        emit(Rows({"a": 1}), fmt, lambda: "table")
    assert err.value.exit_code == EXIT_OUTPUT_FAILED


def test_a_closed_pipe_is_left_to_click(monkeypatch) -> None:
    """click turns EPIPE into a quiet exit; emit must not rename it."""
    class ClosedPipe(_FullDisk):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("sys.stdout", ClosedPipe())
    with pytest.raises(BrokenPipeError):
        emit(_Result({"a": 1}), OutputFormat.json, lambda: "table")
