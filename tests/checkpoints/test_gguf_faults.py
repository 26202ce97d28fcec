"""GGUF files whose header parses but whose tensors cannot be computed with as stated (issue 28,
classes 4 and 5): a tensor laid over another's bytes or off general.alignment is refused where
the header is read (layout.py), and a ggml type the dequantiser lacks is a difference in
`params` and refused by `run` before any tensor is dequantised. Each case is one line on
stderr naming the file, exit 2, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import gguf
import numpy as np
import pytest

from tests.checkpoints.gguf_files import llama_metadata, llama_tensors, patch_tensor, write_gguf
from tests.cli.guarded import run_in_memory
from tfcli.checkpoints.gguf.file import DEQUANTISABLE, GGML_TYPES, read_gguf, type_id
from tfcli.checkpoints.layout import Span, layout_problem

COMMANDS = {"params": ("params",), "run": ("run", "--tokens", "1"),
            "import-config": ("import-config",)}


def _one_line(code: int, out: str, err: str, path: Path) -> str:
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"tfcli: error: {path}: "), err
    return err


def _tiny(tmp_path: Path, alignment: int | None = None) -> Path:
    return write_gguf(tmp_path / "m.gguf", "llama", llama_metadata(), llama_tensors(),
                      alignment=alignment)


# --- class 5: one layout rule ------------------------------------------------------------------

Q, K = "blk.0.attn_q.weight", "blk.0.attn_k.weight"


def _offsets(path: Path) -> dict[str, int]:
    return {t.name: t.offset for t in read_gguf(path).tensors}


# case -> (alignment written, k's new offset from the offsets, what the message says)
LAYOUTS: dict[str, tuple[int | None, Callable[[dict[str, int]], int], tuple[str, ...]]] = {
    "k inside q": (None, lambda o: o[Q] + 32, ("overlap", Q, K)),
    "k at q's start": (None, lambda o: o[Q], ("overlap", Q, K)),
    "k inside the next tensor": (None, lambda o: o[K] + 64, ("overlap", K)),
    "k misaligned": (None, lambda o: o[K] + 4, (K, "alignment 32")),
    "k off general.alignment 64": (64, lambda o: o[K] + 32, (K, "alignment 64")),
    "k past the end": (None, lambda o: 2**40, (K, "past the end")),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(LAYOUTS))
def test_a_broken_layout_is_refused_at_parse(case: str, command: str, tmp_path: Path) -> None:
    alignment, offset, expected = LAYOUTS[case]
    path = _tiny(tmp_path, alignment)
    patch_tensor(path, K, offset=offset(_offsets(path)))
    args = COMMANDS[command]
    err = _one_line(*run_in_memory(args[0], str(path), *args[1:]), path)
    assert all(word in err for word in expected), err


def test_general_alignment_is_honoured_when_the_layout_is_sound(tmp_path: Path) -> None:
    path = _tiny(tmp_path, alignment=64)
    assert all(o % 64 == 0 for o in _offsets(path).values())
    code, out, err = run_in_memory("params", str(path), "-f", "json")
    assert code == 0 and json.loads(out)["stored_weights"]["equal"] is True, err


SPANS = {  # (spans, data size, alignment, covered) -> the problem's first words, None: sound
    "disjoint": (([("a", 0, 8), ("b", 8, 8)], 16, 1, True), None),
    "gap allowed": (([("a", 0, 8), ("b", 32, 8)], 40, 32, False), None),
    "gap refused": (([("a", 0, 8), ("b", 32, 8)], 40, 1, True), "tensor 'b' starts at data byte 32, after"),
    "tail refused": (([("a", 0, 8)], 16, 1, True), "8 bytes after the last tensor"),
    "overlap": (([("b", 4, 8), ("a", 0, 8)], 16, 1, False), "tensor 'b' starts at data byte 4, inside"),
    "misaligned": (([("a", 0, 8), ("b", 8, 8)], 16, 16, False), "tensor 'b' (data bytes 8-16) does not"),
    "past the end": (([("a", 0, 32)], 16, 1, False), "tensor 'a' (data bytes 0-32) ends past"),
}


@pytest.mark.parametrize("case", sorted(SPANS))
def test_layout_rule(case: str) -> None:
    (spans, size, alignment, covered), expected = SPANS[case]
    problem = layout_problem([Span(*s) for s in spans], size, alignment, covered)
    assert (problem is None) if expected is None else problem.startswith(expected), problem


# --- class 4: a ggml type the header allows but the dequantiser lacks --------------------------


def test_dequantisable_is_what_the_installed_gguf_dequantises() -> None:
    """One zero block of every type the header reader allows through gguf.quants.dequantize."""
    works = set()
    for name, _, _ in GGML_TYPES.values():
        kind = gguf.GGMLQuantizationType[name]
        _, block_bytes = gguf.GGML_QUANT_SIZES[kind]
        try:
            gguf.quants.dequantize(np.zeros((1, block_bytes), dtype=np.uint8), kind)
        except NotImplementedError:
            continue
        works.add(name)
    assert works == DEQUANTISABLE


D = 256  # a norm of 256 elements is whole blocks of every type (Q8_K's are 256)
NORM = "blk.0.attn_norm.weight"


def _retyped(tmp_path: Path, ggml_type: str) -> Path:
    """A one-layer llama whose attention norm is stored as `ggml_type`: written so by gguf's
    writer where it can (integers, F64), else an F32 norm's type id rewritten (a smaller type
    reads fewer of the same bytes)."""
    tensors = llama_tensors(layers=1, d=D, ff=32)
    numpy_types = {"I8": np.int8, "I16": np.int16, "I32": np.int32, "I64": np.int64,
                   "F64": np.float64}
    if ggml_type in numpy_types:
        tensors[NORM] = tensors[NORM].astype(numpy_types[ggml_type])
    path = write_gguf(tmp_path / f"{ggml_type}.gguf", "llama", llama_metadata(layers=1, d=D, ff=32),
                      tensors)
    if ggml_type not in numpy_types:
        patch_tensor(path, NORM, ggml_type=type_id(ggml_type))
    return path


UNSUPPORTED = sorted({name for name, _, _ in GGML_TYPES.values()} - DEQUANTISABLE)


def test_the_unsupported_types_are_the_ones_the_cases_cover() -> None:
    assert UNSUPPORTED == ["F64", "I16", "I32", "I64", "I8", "Q8_1", "Q8_K"]


@pytest.mark.parametrize("ggml_type", UNSUPPORTED)
def test_params_lists_an_undequantisable_tensor_as_a_difference(ggml_type: str,
                                                                tmp_path: Path) -> None:
    path = _retyped(tmp_path, ggml_type)
    code, out, err = run_in_memory("params", str(path), "-f", "json")
    assert code == 0, err
    stored = json.loads(out)["stored_weights"]
    assert stored["equal"] is False
    assert stored["differences"] == [f"tensor '{NORM}' is stored as {ggml_type}, a ggml type "
                                     "tfcli cannot dequantise"]
    code, out, err = run_in_memory("params", str(path))
    assert code == 0 and "equal" not in out and ggml_type in out, out


@pytest.mark.parametrize("command", ["run", "generate"])
@pytest.mark.parametrize("ggml_type", UNSUPPORTED)
def test_run_refuses_an_undequantisable_tensor(ggml_type: str, command: str,
                                               tmp_path: Path) -> None:
    path = _retyped(tmp_path, ggml_type)
    args = ("--tokens", "1") if command == "run" else ("--tokens", "1", "--max-new-tokens", "1")
    err = _one_line(*run_in_memory(command, str(path), *args), path)
    assert f"tensor '{NORM}' is stored as {ggml_type}" in err and "cannot be run" in err, err


def test_a_dequantiser_failure_is_one_line_naming_the_tensor(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever gguf raises while dequantising goes through deps.calling."""
    path = _tiny(tmp_path)

    def broken(raw: np.ndarray, kind: object) -> np.ndarray:
        raise ValueError("cannot reshape array\nsecond line")

    monkeypatch.setattr(gguf.quants, "dequantize", broken)
    err = _one_line(*run_in_memory("run", str(path), "--tokens", "1"), path)
    assert "gguf failed dequantising tensor" in err and "ValueError: cannot reshape" in err, err
