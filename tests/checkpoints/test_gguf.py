"""GGUF files as SPEC arguments: the header reader, metadata -> spec, the stored-weights verdict
(tensor by tensor), and hostile headers (one message, exit 2, never a traceback)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from tests.checkpoints.gguf_files import llama_metadata, llama_tensors, write_gguf
from tests.cli.guarded import run_in_memory
from tfcli.checkpoints.gguf.file import read_gguf
from tfcli.checkpoints.gguf.spec import spec_from_gguf_file
from tfcli.spec.counts import total_parameters


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    return write_gguf(tmp_path / "tiny.gguf", "llama", llama_metadata(), llama_tensors())


def _params_json(path: Path) -> dict[str, object]:
    code, out, err = run_in_memory("params", str(path), "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_header_is_read_without_tensor_data(tiny: Path) -> None:
    g = read_gguf(tiny)
    assert g.metadata["general.architecture"] == "llama"
    assert g.tensor("blk.1.attn_k.weight").shape == (8, 16)  # (kv * dh, d): PyTorch's order
    assert g.tensor("blk.0.ffn_up.weight").ggml_type == "F32"
    assert sum(t.n_elements for t in g.tensors) == sum(a.size for a in llama_tensors().values())


def test_spec_from_metadata_and_tensor_names(tiny: Path) -> None:
    spec = spec_from_gguf_file(str(tiny))
    assert (spec.n_layers, spec.d_model, spec.n_heads, spec.kv_heads, spec.d_ff) == (2, 16, 4, 2, 24)
    assert spec.tie_embeddings  # no output.weight
    assert spec.norm == "rmsnorm" and spec.activation == "swiglu" and spec.norm_eps == pytest.approx(1e-5)
    assert total_parameters(spec) == sum(a.size for a in llama_tensors().values())


def test_untied_qwen2_biases_and_qwen3_norms(tmp_path: Path) -> None:
    tensors = llama_tensors() | {"output.weight": np.zeros((64, 16), np.float32)}
    meta = {k.replace("llama.", "qwen2."): v for k, v in llama_metadata().items()}
    for i in range(2):
        tensors |= {f"blk.{i}.attn_{x}.bias": np.zeros(w, np.float32)
                    for x, w in (("q", 16), ("k", 8), ("v", 8))}
    qwen2 = spec_from_gguf_file(str(write_gguf(tmp_path / "q2.gguf", "qwen2", meta, tensors)))
    assert not qwen2.tie_embeddings
    assert qwen2.attention_bias and not qwen2.attention_out_bias
    norms = llama_tensors() | {f"blk.{i}.attn_{x}_norm.weight": np.ones(4, np.float32)
                               for i in range(2) for x in "qk"}
    meta3 = {k.replace("llama.", "qwen3."): v for k, v in llama_metadata().items()}
    qwen3 = spec_from_gguf_file(str(write_gguf(tmp_path / "q3.gguf", "qwen3", meta3, norms)))
    assert qwen3.qk_norm == "per_head"
    assert _params_json(tmp_path / "q3.gguf")["stored_weights"]["equal"] is True


def test_params_reports_storage_and_an_equal_verdict(tiny: Path) -> None:
    report = _params_json(tiny)
    stored = report["stored_weights"]
    assert stored["equal"] is True and stored["differences"] == []
    assert stored["parameters"] == report["total"]
    assert {g["dtype"] for g in stored["groups"]} == {"F32"}
    assert all(g["bits_per_weight"] == 32 for g in stored["groups"])
    code, out, _ = run_in_memory("params", str(tiny))
    assert code == 0 and "checkpoint vs spec: equal" in out


def test_a_removed_tensor_is_named(tmp_path: Path) -> None:
    tensors = llama_tensors()
    del tensors["blk.1.attn_q.weight"]
    path = write_gguf(tmp_path / "cut.gguf", "llama", llama_metadata(), tensors)
    stored = _params_json(path)["stored_weights"]
    assert stored["equal"] is False
    assert stored["differences"] == ["missing blk.1.attn_q.weight [16, 16]"]
    code, _, err = run_in_memory("run", str(path), "--tokens", "1,2")
    assert code == 2 and "blk.1.attn_q.weight" in err and "Traceback" not in err


def test_an_extra_or_misshaped_tensor_is_named(tmp_path: Path) -> None:
    tensors = llama_tensors() | {"blk.0.mystery.weight": np.zeros(3, np.float32)}
    tensors["blk.0.ffn_up.weight"] = np.zeros((20, 16), np.float32)
    meta = llama_metadata()
    path = write_gguf(tmp_path / "odd.gguf", "llama", meta, tensors)
    differences = _params_json(path)["stored_weights"]["differences"]
    assert "unexpected blk.0.mystery.weight [3]" in differences
    assert "blk.0.ffn_up.weight is [20, 16], the spec's is [24, 16]" in differences


def test_import_config_prints_the_spec(tiny: Path, tmp_path: Path) -> None:
    code, out, err = run_in_memory("import-config", str(tiny))
    assert code == 0, err
    (tmp_path / "tiny.yaml").write_text(out)
    code, out2, _ = run_in_memory("params", str(tmp_path / "tiny.yaml"), "--format", "json")
    assert json.loads(out2)["total"] == _params_json(tiny)["total"]


def test_run_dequantises_and_matches_the_f32_weights(tiny: Path) -> None:
    """F32 tensors load exactly; q/k rows come back un-permuted (llama.cpp's llama layout)."""
    from tfcli.checkpoints.gguf.weights import load_gguf_weights, unpermute

    spec = spec_from_gguf_file(str(tiny))
    weights = load_gguf_weights(tiny, spec)
    stored = llama_tensors()
    np.testing.assert_array_equal(weights.decoder.blocks[0].ffn.w_down, stored["blk.0.ffn_down.weight"].T)
    wq = np.asarray(weights.decoder.blocks[1].attn.wq)
    np.testing.assert_array_equal(wq, unpermute(stored["blk.1.attn_q.weight"], 4).T)


def test_unpermute_inverts_llama_cpp_permute() -> None:
    """llama.cpp's convert_hf_to_gguf.py LlamaModel.permute, written out, then undone."""
    heads, rows, cols = 3, 12, 5
    hf = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols)
    permuted = hf.reshape(heads, 2, rows // heads // 2, cols).swapaxes(1, 2).reshape(rows, cols)
    from tfcli.checkpoints.gguf.weights import unpermute

    np.testing.assert_array_equal(unpermute(permuted, heads), hf)


# --- hostile headers ---------------------------------------------------------------------------


def _fail(path: Path, *args: str) -> str:
    code, out, err = run_in_memory(*(args or ("params",)), str(path))
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_every_truncation_of_a_header_is_one_clear_message(tiny: Path, tmp_path: Path) -> None:
    data = tiny.read_bytes()
    header_end = read_gguf(tiny).data_offset
    cut = tmp_path / "cut.gguf"
    for length in sorted({*range(4, 64), *range(64, header_end + 64, 7)}):
        cut.write_bytes(data[:length])
        err = _fail(cut)
        assert str(cut) in err


def _header(n_tensors: int, n_keys: int, version: int = 3) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_keys)


def _key(name: str, kind: int, payload: bytes) -> bytes:
    raw = name.encode()
    return struct.pack("<Q", len(raw)) + raw + struct.pack("<I", kind) + payload


def _string(text: str) -> bytes:
    return struct.pack("<Q", len(text.encode())) + text.encode()


ARCH = _key("general.architecture", 8, _string("llama"))
HOSTILE = {
    "version": (_header(0, 0, version=99), "version 99"),
    "tensor count": (_header(2**60, 0), "tensor count"),
    "key count": (_header(0, 2**40), "key count"),
    "huge key": (_header(0, 1) + struct.pack("<Q", 2**62), "a string of"),
    "huge value": (_header(0, 1) + _key("x", 8, struct.pack("<Q", 2**62)), "needs"),
    "value type": (_header(0, 1) + _key("x", 77, b""), "unknown metadata value type 77"),
    "array length": (_header(0, 1) + _key("x", 9, struct.pack("<IQ", 4, 2**50)), "array length"),
    "nested array": (_header(0, 1) + _key("x", 9, struct.pack("<IQ", 9, 1)), "nested arrays"),
    "bad utf-8": (_header(0, 1) + _key("x", 8, struct.pack("<Q", 2) + b"\xff\xfe"), "not UTF-8"),
    "duplicate key": (_header(0, 2) + ARCH + ARCH, "appears twice"),
    "architecture": (_header(0, 1) + _key("general.architecture", 8, _string("mamba9")),
                     "not supported"),
    "architecture type": (_header(0, 1) + _key("general.architecture", 4, struct.pack("<I", 7)),
                          "must be a string"),
    "alignment": (_header(0, 2) + ARCH + _key("general.alignment", 4, struct.pack("<I", 3)),
                  "power of two"),
    "missing key": (_header(0, 1) + ARCH, "metadata key 'llama.embedding_length' is missing"),
    "tensor past the end": (_header(1, 1) + ARCH + _string("token_embd.weight")
                            + struct.pack("<I", 2) + struct.pack("<QQ", 16, 2**40)
                            + struct.pack("<IQ", 0, 0), "past the end"),
    "tensor type": (_header(1, 1) + ARCH + _string("t") + struct.pack("<IQIQ", 1, 4, 99, 0),
                    "unknown ggml type 99"),
    "tensor dims": (_header(1, 1) + ARCH + _string("t") + struct.pack("<I", 40), "dimensions"),
    "partial block": (_header(1, 1) + ARCH + _string("t") + struct.pack("<IQIQ", 1, 31, 2, 0),
                      "whole Q4_0 blocks"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("command", ["params", "run", "import-config"])
def test_hostile_header(case: str, command: str, tmp_path: Path) -> None:
    data, expected = HOSTILE[case]
    path = tmp_path / "hostile.gguf"
    path.write_bytes(data + b"\0" * 64)
    args = (command, "--tokens", "1") if command == "run" else (command,)
    code, out, err = run_in_memory(*args[:1], str(path), *args[1:])
    assert code == 2, (code, out, err)
    assert expected in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_a_file_named_gguf_that_is_not_one_is_read_as_yaml(tmp_path: Path) -> None:
    path = tmp_path / "fake.gguf"
    path.write_text("name: [unclosed\n")
    code, _, err = run_in_memory("params", str(path))
    assert code == 2 and "Traceback" not in err


def test_markup_in_a_gguf_name_is_shown_as_text(tmp_path: Path) -> None:
    meta = llama_metadata() | {"general.name": "[bold red]x[/]"}
    path = write_gguf(tmp_path / "[red]m.gguf", "llama", meta, llama_tensors())
    code, out, err = run_in_memory("params", str(path))
    assert code == 0, err
    assert "[bold red]x[/]" in out and "[red]m.gguf" in out
