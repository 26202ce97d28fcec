"""MXFP4 (tfcli/checkpoints/mxfp4.py): gpt-oss's experts as stored - E2M1 nibbles, the low one
first, with an E8M0 scale per 32 - decoded as the OCP Microscaling spec defines them on
hand-made blocks, equal to transformers' own dequantisation on random ones, read by the loader
as the one tensor each `_blocks` / `_scales` pair stands for (a gpt-oss checkpoint's logits
then match transformers'), and a NaN scale refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tfcli.checkpoints import mxfp4


def test_hand_made_blocks_decode_as_the_spec_defines() -> None:
    # one row of two groups: group 0 every code 0..15 twice at scale 2^0, group 1 code 0x7 (6)
    # and 0x9 (-0.5) at scale 2^-3 (124) and 2^+2 (129) in the two rows
    codes = np.arange(16, dtype=np.uint8)
    group0 = (codes[0::2] | (codes[1::2] << 4)).repeat(2)  # 16 bytes: low nibble first
    group1 = np.full(16, 0x97, dtype=np.uint8)  # low 0x7 = 6.0, high 0x9 = -0.5
    blocks = np.stack([np.stack([group0, group1])] * 2)  # (rows 2, G 2, 16)
    scales = np.array([[127, 124], [127, 129]], dtype=np.uint8)  # (rows 2, G 2)
    out = mxfp4.dequantize(blocks, scales)  # (G * 32, rows) = (64, 2)
    assert out.shape == (64, 2)
    want0 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
    pairs = want0.reshape(8, 2)  # each byte: (low, high)
    np.testing.assert_array_equal(out[:32, 0], np.concatenate([pairs.repeat(2, axis=0).ravel()]))
    np.testing.assert_array_equal(out[32:, 0], np.tile([6 / 8, -0.5 / 8], 16))
    np.testing.assert_array_equal(out[32:, 1], np.tile([6 * 4, -0.5 * 4], 16))
    assert np.signbit(out[16, 0]) and out[16, 0] == 0  # code 8 (byte 8, its low nibble) is -0


def test_random_blocks_equal_transformers_dequantisation() -> None:
    import torch
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    rng = np.random.default_rng(0)
    blocks = rng.integers(0, 256, size=(3, 10, 4, 16), dtype=np.uint8)  # (E, rows, G, 16)
    scales = rng.integers(110, 140, size=(3, 10, 4), dtype=np.uint8)
    want = convert_moe_packed_tensors(torch.from_numpy(blocks), torch.from_numpy(scales),
                                      dtype=torch.float32).numpy()
    got = mxfp4.dequantize(blocks, scales)
    assert got.shape == want.shape == (3, 128, 10)
    np.testing.assert_array_equal(got, want)  # exact: E2M1 times a power of two


def _quantized_gpt_oss(path: Path) -> object:
    """A tiny gpt-oss whose experts are random MXFP4 blocks: transformers' model holds their
    dequantisation (its own function), the checkpoint the blocks and scales, as openai/gpt-oss
    stores them, with the config's quantization_config."""
    import torch
    from safetensors.numpy import load_file, save_file
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    from tests.parity.parity_families import gpt_oss
    from tests.parity.saved_models import save_random
    model = save_random(gpt_oss, path, std=0.15)  # d 64, d_ff 32, 4 experts
    tensors = load_file(str(path / "model.safetensors"))
    rng = np.random.default_rng(1)
    for i, layer in enumerate(model.model.layers):  # type: ignore[attr-defined]
        experts = layer.mlp.experts
        for proj, rows, width in (("gate_up_proj", 64, 64), ("down_proj", 64, 32)):
            blocks = rng.integers(0, 256, size=(4, rows, width // 32, 16), dtype=np.uint8)
            scales = rng.integers(122, 126, size=(4, rows, width // 32), dtype=np.uint8)
            dense = convert_moe_packed_tensors(torch.from_numpy(blocks),
                                               torch.from_numpy(scales), dtype=torch.float32)
            with torch.no_grad():
                getattr(experts, proj).copy_(dense)
            name = f"model.layers.{i}.mlp.experts.{proj}"
            del tensors[name]
            tensors |= {f"{name}_blocks": blocks, f"{name}_scales": scales}
    save_file(tensors, str(path / "model.safetensors"))
    config = json.loads((path / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    (path / "config.json").write_text(json.dumps(config))
    return model


def test_an_mxfp4_checkpoint_loads_and_matches_transformers(tmp_path: Path) -> None:
    from tests.parity.parity_families import right_padded, tokens
    from tests.parity.saved_models import real_logits
    from tests.parity.test_hf_parity import F32
    model = _quantized_gpt_oss(tmp_path)
    mask, _ = right_padded()
    got, want = real_logits(model, tmp_path, tokens(), mask)
    np.testing.assert_allclose(got, want, **F32)


def test_params_reports_the_packed_bytes(tmp_path: Path, invoke) -> None:  # noqa: ANN001
    """Each pair as the one tensor the loader reads: its weights, both parts' bytes, 4.25 bits
    a weight (4 + an 8-bit scale per 32), checked against the spec shape for shape."""
    _quantized_gpt_oss(tmp_path)
    result = invoke("params", str(tmp_path), "-f", "json")
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)["stored_weights"]
    assert stored["equal"] and stored["differences"] == [], stored["differences"]
    groups = {g["role"]: g for g in stored["groups"]}
    gate_up = groups["model.layers.*.mlp.experts.gate_up_proj"]
    weights = 3 * 4 * 64 * 64  # blocks x experts x (d, 2 d_ff)
    assert (gate_up["dtype"], gate_up["parameters"]) == ("MXFP4", weights)
    assert gate_up["bytes"] == weights // 2 + weights // 32  # the nibbles and one scale per 32
    assert gate_up["bits_per_weight"] == 4.25


def test_a_nan_scale_is_refused_by_name(tmp_path: Path, invoke) -> None:  # noqa: ANN001
    from safetensors.numpy import load_file, save_file
    _quantized_gpt_oss(tmp_path)
    tensors = load_file(str(tmp_path / "model.safetensors"))
    name = "model.layers.1.mlp.experts.down_proj_scales"
    tensors[name][0, 0, 0] = 0xFF
    save_file(tensors, str(tmp_path / "model.safetensors"))
    result = invoke("run", str(tmp_path), "--tokens", "1,2")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"'{name}': an E8M0 scale is 0xFF (NaN)" in result.stderr, result.stderr
