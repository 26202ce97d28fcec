"""A learner's own arrays (tfcli/checkpoints/npz.py): the lesson's "Check it on arrays" script,
its arrays saved with np.savez, gives its printed norms through `tfcli run`; and every bad
file, key, shape and dtype is one clear line naming the file and the key."""

from __future__ import annotations

import contextlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tfcli.cli.app import app

SCRIPT = Path(__file__).parents[1] / "fixtures" / "lessons" / "check_it_on_arrays.py"
BLOCK = "decoder.blocks.*"


def _lesson(folder: Path) -> tuple[list[float], np.ndarray, Path, Path]:
    """Run the lesson's script as printed; save its X and weights as a learner would."""
    code = SCRIPT.read_text()
    setup, stack = code.split("# Stack 4 blocks")
    names: dict[str, object] = {}
    exec(setup, names)  # noqa: S102  (the lesson's own code)
    x, weights = np.array(names["X"]), {k: np.array(names[k]) for k in
                                         ("Wq", "Wk", "Wv", "Wo", "W1", "W2", "b1", "b2")}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(stack, names)  # noqa: S102
    line = next(s for s in printed.getvalue().splitlines() if s.startswith("output norm"))
    norms = [float(v) for v in line.split("[")[1].rstrip("]").replace("np.float64(", "")
             .replace(")", "").split(",")]
    np.savez(folder / "X.npz", embeddings=x)
    np.savez(folder / "W.npz", **{
        f"{BLOCK}.attn.wq": weights["Wq"], f"{BLOCK}.attn.wk": weights["Wk"],
        f"{BLOCK}.attn.wv": weights["Wv"], f"{BLOCK}.attn.wo": weights["Wo"],
        f"{BLOCK}.ffn.w_up": weights["W1"], f"{BLOCK}.ffn.w_down": weights["W2"],
        f"{BLOCK}.ffn.b_up": weights["b1"], f"{BLOCK}.ffn.b_down": weights["b2"]})
    return norms, np.array(names["X"]), folder / "W.npz", folder / "X.npz"


def _run(runner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["run", *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_lessons_printed_norms_through_tfcli_run(runner, tmp_path: Path) -> None:
    printed, final, weights, inputs = _lesson(tmp_path)
    code, out, err = _run(runner, "lesson-tiny", "--weights", str(weights), "--inputs",
                          str(inputs), "--dtype", "float64", "-f", "json")
    assert code == 0, err
    result = json.loads(out)
    norms = result["hidden_norms"][0]
    assert [round(v, 2) for v in norms] == printed == [5.7, 3.0, 4.57, 4.49, 4.78, 4.12, 5.41, 3.09]
    # beyond the printed digits: the script's own final X, to float64 rounding
    np.testing.assert_allclose(norms, np.linalg.norm(final, axis=-1), rtol=1e-12)
    assert result["input"] == "embeddings" and result["loss"] is None
    assert any("kept the spec's random draw: token_embedding" in n for n in result["notes"])


@pytest.mark.parametrize("fmt", ["table", "csv", "markdown"])
def test_every_format_shows_a_run_from_embeddings(runner, tmp_path: Path, fmt: str) -> None:
    _, _, weights, inputs = _lesson(tmp_path)
    result = runner.invoke(app, ["run", "lesson-tiny", "--weights", str(weights), "--inputs",
                                 str(inputs), "--dtype", "float64", "-f", fmt],
                           env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    if fmt == "table":  # the summary says what went in, not tokens that do not exist
        assert "embeddings: batch 1 × 8 positions" in result.stdout
    elif fmt == "markdown":  # one row per position, its token cell empty
        assert "| 0 | 0 |  | 5.70351 |" in result.stdout
    else:
        assert result.stdout.splitlines()[1].startswith("0,0,,5.7")


def test_tokens_from_an_inputs_file_match_tokens_given_inline(runner, tmp_path: Path) -> None:
    np.savez(tmp_path / "t.npz", tokens=np.array([[5, 6, 7]]))
    a = json.loads(_run(runner, "lesson-tiny", "--inputs", str(tmp_path / "t.npz"), "-f",
                        "json")[1])
    b = json.loads(_run(runner, "lesson-tiny", "--tokens", "5,6,7", "-f", "json")[1])
    assert a["hidden_norms"] == b["hidden_norms"] and a["loss"] == b["loss"]


def test_one_array_per_block_or_for_every_block(runner, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    wq = rng.normal(size=(16, 16))
    np.savez(tmp_path / "every.npz", **{f"{BLOCK}.attn.wq": wq})
    np.savez(tmp_path / "each.npz", **{f"decoder.blocks.{i}.attn.wq": wq for i in range(4)})
    a = _run(runner, "lesson-tiny", "--weights", str(tmp_path / "every.npz"), "--tokens", "1,2",
             "-f", "json")
    b = _run(runner, "lesson-tiny", "--weights", str(tmp_path / "each.npz"), "--tokens", "1,2",
             "-f", "json")
    assert a[0] == b[0] == 0
    assert json.loads(a[1])["hidden_norms"] == json.loads(b[1])["hidden_norms"]


def _zip_with(path: Path, name: str, data: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(name, data)
    return path


@pytest.mark.parametrize(("arrays", "expected"), [
    ({"decoder.blocks.0.attn.wqq": np.zeros((16, 16))}, "did you mean 'decoder.blocks.0.attn.wq'"),
    ({"decoder.blocks.0.attn.wq": np.zeros((16, 8))}, "has shape (16, 8); the spec's is (16, 16)"),
    ({"decoder.blocks.0.attn.wq": np.zeros((16, 16), complex)}, "weights must be real numbers"),
    ({f"{BLOCK}.attn.wq": np.zeros((16, 16)), "decoder.blocks.2.attn.wq": np.zeros((16, 16))},
     "is given twice"),
    ({}, "holds no arrays"),
])
def test_bad_weights_are_one_line(runner, tmp_path: Path, arrays: dict, expected: str) -> None:
    np.savez(tmp_path / "w.npz", **arrays)
    code, _, err = _run(runner, "lesson-tiny", "--weights", str(tmp_path / "w.npz"))
    assert code == 2 and expected in err and "w.npz" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("arrays", "expected"), [
    ({"embeddings": np.zeros((8, 12))}, "takes (B, N, 16) or (N, 16)"),
    ({"embeddings": np.zeros((8, 16), np.int64)}, "it must be float"),
    ({"tokens": np.array([[1, 300]])}, "outside lesson-tiny's vocabulary"),
    ({"tokens": np.zeros((2, 2), np.float32)}, "token ids are integers"),
    ({"embedding": np.zeros((8, 16))}, "did you mean 'embeddings'"),
    ({"tokens": np.zeros((1, 2), int), "embeddings": np.zeros((2, 16))}, "one of embeddings or tokens"),
])
def test_bad_inputs_are_one_line(runner, tmp_path: Path, arrays: dict, expected: str) -> None:
    np.savez(tmp_path / "x.npz", **arrays)
    code, _, err = _run(runner, "lesson-tiny", "--inputs", str(tmp_path / "x.npz"))
    assert code == 2 and expected in err and "x.npz" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_hostile_files_are_refused_before_reading_data(runner, tmp_path: Path) -> None:
    not_zip = tmp_path / "a.npz"
    not_zip.write_bytes(b"\x93NUMPY not a zip")
    pickled = tmp_path / "p.npz"
    np.savez(pickled, embeddings=np.array([object()], dtype=object))
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (2**40, 16)})
    huge = _zip_with(tmp_path / "h.npz", "embeddings.npy", header.getvalue())
    truncated = tmp_path / "t.npz"
    np.savez(truncated, **{f"{BLOCK}.attn.wq": np.zeros((16, 16))})
    truncated.write_bytes(truncated.read_bytes()[:200])
    cases = [("--inputs", not_zip, "not an .npz file"), ("--inputs", pickled, "Python objects"),
             ("--inputs", huge, "past 268,435,456 elements"), ("--weights", truncated, "t.npz"),
             ("--inputs", tmp_path / "missing.npz", "no such file")]
    for option, path, expected in cases:
        code, _, err = _run(runner, "lesson-tiny", option, str(path))
        assert code == 2 and expected in err, (path, err)
        assert "Traceback" not in err


def test_options_that_shape_other_inputs_are_refused_by_name(runner, tmp_path: Path) -> None:
    np.savez(tmp_path / "x.npz", tokens=np.array([[1, 2]]))
    code, _, err = _run(runner, "lesson-tiny", "--inputs", str(tmp_path / "x.npz"), "--tokens",
                        "1,2", "--seq-len", "4")
    assert code == 2 and "--tokens, --seq-len do not apply" in err
