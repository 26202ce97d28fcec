"""The helpers that replaced duplicated code (issue 12, item 5): one dtype table and message,
one shape formatter, one model-directory test, one softmax in `tfcli run`."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.tolerance import assert_close
from tfcli.core import dtypes
from tfcli.analysis.run.forward import _neg_log_likelihood, _top_next
from tfcli.cli.app import app
from tfcli.core.shapes import TABLE_TIMES, shape_text, shapes_text
from tfcli.sources import is_model_dir

# (command line, option, the dtypes it takes): every dtype option of every command
DTYPE_OPTIONS = [
    (["params", "gpt2", "--kv-dtype", "int3"], "--kv-dtype", dtypes.KV_DTYPES),
    (["trace", "gpt2", "--dtype", "int3"], "--dtype", dtypes.ACTIVATION_DTYPES),
    (["run", "lesson-tiny", "--tokens", "1", "--dtype", "int3"], "--dtype", dtypes.ENGINE_DTYPES),
    (["generate", "lesson-tiny", "--tokens", "1", "--dtype", "int3"], "--dtype",
     dtypes.ENGINE_DTYPES),
    (["depth-sweep", "--sublayer", "linear", "--depths", "2", "--dtype", "int3"], "--dtype",
     dtypes.SWEEP_DTYPES),
    (["diff", "gpt2", "gpt2-medium", "--kv-dtype", "int3"], "--kv-dtype", dtypes.KV_DTYPES),
    (["memory", "gpt2", "--dtype", "int3"], "--dtype", dtypes.MEMORY_DTYPES),
    (["memory", "gpt2", "--kv-dtype", "int3"], "--kv-dtype", dtypes.KV_DTYPES),
]


@pytest.mark.parametrize(("args", "option", "allowed"), DTYPE_OPTIONS, ids=lambda v: str(v)[:30])
def test_every_dtype_option_refuses_with_the_one_message(args: list[str], option: str,
                                                         allowed: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    listed = ", ".join(repr(name) for name in allowed)
    expected = f"{option}: 'int3' is not one of {listed}"
    assert expected in result.stderr and f"(see tfcli {args[0]} --help)" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.output


def test_dtype_table_covers_every_option() -> None:
    """Each option's names have a size: no option takes a dtype the table does not know."""
    options = (dtypes.WEIGHT_DTYPES, dtypes.KV_DTYPES, dtypes.ACTIVATION_DTYPES,
               dtypes.ENGINE_DTYPES, dtypes.SWEEP_DTYPES)
    assert {name for option in options for name in option} <= set(dtypes.DTYPE_BYTES)
    for name in dtypes.ENGINE_DTYPES:  # what the engine computes in is a NumPy float
        assert np.dtype(name).itemsize == dtypes.DTYPE_BYTES[name]


def test_check_dtype_echoes_a_hostile_value_bounded() -> None:
    with pytest.raises(Exception) as caught:
        dtypes.check_dtype("--dtype", "\x1b[31m" + "x" * 5000, dtypes.ENGINE_DTYPES)
    message = str(caught.value)
    assert "\x1b" not in message and len(message) < 200
    assert dtypes.check_dtype("--dtype", "float64", dtypes.ENGINE_DTYPES) == "float64"


@pytest.mark.parametrize(("shape", "times", "grouped", "text"), [
    ((1, 128, 768), "x", False, "1x128x768"),
    ((1, 128, 768), TABLE_TIMES, False, "1×128×768"),
    ((50257, 768), TABLE_TIMES, True, "50,257×768"),
    ((), "x", False, ""),
    (None, "x", False, ""),
])
def test_shape_text(shape: tuple[int, ...] | None, times: str, grouped: bool, text: str) -> None:
    assert shape_text(shape, times, grouped) == text


def test_shapes_text_joins_a_components_arrays() -> None:
    assert shapes_text([(768, 2304), (2304,)]) == "768x2304 + 2304"
    assert shapes_text([(768, 2304), (2304,)], TABLE_TIMES, grouped=True) == "768×2,304 + 2,304"


def test_is_model_dir(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    assert not is_model_dir(model)  # a folder without config.json
    (model / "config.json").write_text("{}")
    assert is_model_dir(model) and is_model_dir(str(model))
    assert not is_model_dir(model / "config.json")  # the file itself is no directory
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "config.json").mkdir()  # a folder named config.json is no config
    assert not is_model_dir(tmp_path / "odd")
    assert not is_model_dir(tmp_path / ("n" * 5000))  # ENAMETOOLONG: not one, no OSError


def _reference_log_softmax(logits: np.ndarray) -> np.ndarray:
    wide = logits.astype(np.float64)
    top = wide.max(axis=-1, keepdims=True)
    return wide - top - np.log(np.exp(wide - top).sum(axis=-1, keepdims=True))


def test_run_loss_and_top5_are_one_softmax() -> None:
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal((2, 3, 97)) * 8).astype(np.float32)  # (B, T, V)
    targets = rng.integers(0, 97, (2, 3))
    log_p = _reference_log_softmax(logits)  # (B, T, V) float64
    picked = np.take_along_axis(log_p, targets[..., None], axis=-1)
    expected_loss = -float(picked.sum())
    # a sum of 6 terms, each a log of a 97-term sum: a few hundred roundings at most
    assert_close(_neg_log_likelihood(logits.reshape(-1, 97), targets.reshape(-1)),
                 expected_loss, ops=4 * 97, dtype=np.float64)
    top = _top_next(logits, None)
    last = np.exp(log_p[:, -1])  # (B, V)
    for row, probs in zip(top, last):
        assert [t.token for t in row] == list(np.argsort(-probs)[:5])
        assert_close([t.prob for t in row], probs[[t.token for t in row]], ops=2 * 97,
                     dtype=np.float64)
    assert math.isclose(sum(float(p) for p in last[0]), 1.0, rel_tol=1e-12)


def test_no_module_writes_its_own_copy_of_the_helpers() -> None:
    """The replaced copies stay gone: a literal dtype list or shape join outside the helpers."""
    root = Path(__file__).resolve().parents[1] / "tfcli"
    pattern = re.compile(r'"[x×]"\.join\(|\("float32", "float64"\)|\("float64", "float32"\)')
    found = [str(p.relative_to(root)) for p in root.rglob("*.py")
             if p.name not in ("dtypes.py", "shapes.py") and pattern.search(p.read_text())]
    assert found == []
