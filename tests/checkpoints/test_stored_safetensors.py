"""`tfcli params DIR` beside the spec's count: what the safetensors headers store, and a
tensor-by-tensor verdict (no tensor data read)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from safetensors.numpy import load_file, save_file

from tests.cli.guarded import run_in_memory

SAVED = 7_888  # LlamaForCausalLM of the config below: transformers' num_parameters()


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory: pytest.TempPathFactory, transformers: ModuleType) -> Path:
    folder = tmp_path_factory.mktemp("tiny-llama")
    config = transformers.LlamaConfig(vocab_size=100, hidden_size=16, intermediate_size=32,
                                      num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=64)
    model = transformers.LlamaForCausalLM(config)
    assert model.num_parameters() == SAVED
    model.save_pretrained(folder)
    return folder


def _stored(folder: Path) -> dict[str, object]:
    code, out, err = run_in_memory("params", str(folder), "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    return report["stored_weights"] | {"total": report["total"]}


def _copy(source: Path, target: Path, drop: str = "", config: dict[str, object] | None = None) -> Path:
    target.mkdir()
    tensors = load_file(str(source / "model.safetensors"))
    tensors.pop(drop, None)
    save_file(tensors, str(target / "model.safetensors"))
    base = json.loads((source / "config.json").read_text())
    (target / "config.json").write_text(json.dumps(base | (config or {})))
    return target


def test_headers_equal_the_spec(llama_dir: Path) -> None:
    stored = _stored(llama_dir)
    assert stored["equal"] is True and stored["parameters"] == stored["total"] == SAVED
    assert stored["bytes"] == 4 * SAVED and stored["format"] == "safetensors"
    assert {g["dtype"] for g in stored["groups"]} == {"F32"}


def test_a_removed_tensor_is_named(llama_dir: Path, tmp_path: Path) -> None:
    cut = _copy(llama_dir, tmp_path / "cut", drop="model.layers.1.self_attn.q_proj.weight")
    stored = _stored(cut)
    assert stored["equal"] is False
    assert stored["differences"] == ["missing model.layers.1.self_attn.q_proj.weight [16, 16]"]
    code, out, _ = run_in_memory("params", str(cut))
    assert "checkpoint vs spec: differs: missing model.layers.1.self_attn.q_proj.weight" in out


def test_a_quantised_checkpoint_says_so(llama_dir: Path, tmp_path: Path) -> None:
    quant = _copy(llama_dir, tmp_path / "q", config={"quantization_config": {"quant_method": "gptq"}})
    stored = _stored(quant)
    assert stored["quantized"] == "gptq" and stored["equal"] is False
    assert stored["bytes"] == 4 * SAVED and stored["differences"] == []
    code, out, _ = run_in_memory("params", str(quant))
    assert "gptq-quantised: the linear layers are stored packed" in out.replace("\n", " ")


def test_an_unreadable_checkpoint_leaves_the_count(llama_dir: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text((llama_dir / "config.json").read_text())
    (broken / "model.safetensors").write_bytes(b"\xff" * 16)
    stored = _stored(broken)
    assert stored["total"] == SAVED and stored["equal"] is False
    assert "the checkpoint cannot be read" in stored["differences"][0]


def test_a_config_alone_has_no_stored_section(tmp_path: Path, llama_dir: Path) -> None:
    (tmp_path / "config.json").write_text((llama_dir / "config.json").read_text())
    code, out, _ = run_in_memory("params", str(tmp_path), "--format", "json")
    assert code == 0 and json.loads(out)["stored_weights"] is None
