"""Qwen2 / Qwen2.5 (q, k, v biases without an output bias) and Qwen3 (per-head q/k RMSNorm)
against transformers: small random models saved, loaded through tfcli, compared logit by logit
(float32 as shipped; float64 with transformers' float32 islands swapped for float64 formulas,
as in test_hf_parity.py), batched with right padding, and greedy generation token for token.

Tolerances: those of test_hf_parity.py (float32 rtol = atol = 1e-4; float64 rtol 1e-10,
atol 1e-12). Only the real (unpadded) positions are compared.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.parity.family_checks import (assert_float64_logits_match, layers, saved_rows,
                                        switch_test)
from tests.parity.parity_families import qwen2_sliding, qwen3_sliding
from tests.parity.test_hf_parity import F32, F64, _rms_norm_f64, _rope_f64
from tests.parity.test_hf_rope_scaling_parity import _rope_f64 as _scaled_rope_f64
from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.engine.model import ModelInput, forward
from tests.parity.greedy import hf_greedy, tfcli_greedy
from tests.parity.saved_models import assert_counts_match, save_random

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

VOCAB, BATCH, LENGTH, NEW_TOKENS = 96, 2, 12, 10
SMALL = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
         "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": VOCAB,
         "max_position_embeddings": 64, "rope_theta": 1000.0}
PROMPTS = [[5, 17, 33, 2, 80], [9, 1, 4]]


def _qwen2() -> PreTrainedModel:
    from transformers import Qwen2Config, Qwen2ForCausalLM
    return Qwen2ForCausalLM(Qwen2Config(**SMALL))


def _qwen2_tied() -> PreTrainedModel:
    """Qwen2.5-0.5B's recipe: tied embeddings."""
    from transformers import Qwen2Config, Qwen2ForCausalLM
    return Qwen2ForCausalLM(Qwen2Config(**SMALL, tie_word_embeddings=True))


def _qwen3() -> PreTrainedModel:
    """head_dim 8 != hidden / heads (16), as Qwen3's 128 differs from 4096 / 32 at some sizes."""
    from transformers import Qwen3Config, Qwen3ForCausalLM
    return Qwen3ForCausalLM(Qwen3Config(**SMALL, head_dim=8))


def _qwen3_bias() -> PreTrainedModel:
    """Qwen3 with attention_bias: biases on all four projections, o included."""
    from transformers import Qwen3Config, Qwen3ForCausalLM
    return Qwen3ForCausalLM(Qwen3Config(**SMALL, head_dim=16, attention_bias=True))


def _qwen3_yarn() -> PreTrainedModel:
    """Qwen3 with YaRN scaling from an 8-token original context (Qwen's long-context recipe):
    the 12 tokens reach past it, so the q/k norms meet the scaled rotation."""
    from transformers import Qwen3Config, Qwen3ForCausalLM
    small = {k: v for k, v in SMALL.items() if k != "rope_theta"}
    return Qwen3ForCausalLM(Qwen3Config(**small, head_dim=8, rope_parameters={
        "rope_type": "yarn", "rope_theta": 1000.0, "factor": 4.0,
        "original_max_position_embeddings": 8}))


CASES: dict[str, Callable[[], PreTrainedModel]] = {
    "qwen2": _qwen2, "qwen2-tied": _qwen2_tied, "qwen3": _qwen3, "qwen3-bias": _qwen3_bias,
    "qwen3-yarn": _qwen3_yarn,
}


def _build(name: str, path: Path, std: float | None = None) -> PreTrainedModel:
    """The case's model with non-trivial norm weights and biases (their initial ones / zeros
    would hide a missing or misplaced one), saved as safetensors. `std` redraws the matrices
    (generation: logits far from ties, see test_generate_parity.py)."""
    return save_random(CASES[name], path, std)


@pytest.fixture(scope="module", params=list(CASES))
def saved(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[PreTrainedModel, Path]:
    path = tmp_path_factory.mktemp(request.param)
    return _build(request.param, path), path


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    tokens = np.random.default_rng(1).integers(1, VOCAB, size=(BATCH, LENGTH))
    mask = np.ones((BATCH, LENGTH), dtype=np.int64)
    mask[1, -4:] = 0  # the second sequence right-padded by 4
    return tokens, mask


def _compare(model: PreTrainedModel, path: Path, dtype: type, tolerance: dict[str, float]) -> None:
    import torch
    tokens, mask = _inputs()
    with torch.no_grad():
        want = model(input_ids=torch.from_numpy(tokens),
                     attention_mask=torch.from_numpy(mask)).logits.numpy()
    spec = spec_from_config_dir(path)
    weights = load_weights(path, spec, dtype=dtype)
    got = forward(spec, weights, ModelInput(tokens, attention_mask=mask)).logits
    assert got.dtype == np.dtype(dtype)
    real = mask.astype(bool)
    np.testing.assert_allclose(got[real], want[real], **tolerance)


def test_float32_logits_match_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    _compare(*saved, np.float32, F32)


@pytest.fixture
def float64_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers.models.qwen2 import modeling_qwen2 as qwen2
    from transformers.models.qwen3 import modeling_qwen3 as qwen3
    for norm in (qwen2.Qwen2RMSNorm, qwen3.Qwen3RMSNorm):
        monkeypatch.setattr(norm, "forward", _rms_norm_f64)
    for rope in (qwen2.Qwen2RotaryEmbedding, qwen3.Qwen3RotaryEmbedding):
        monkeypatch.setattr(rope, "forward", _rope_any_f64)


def _rope_any_f64(self: torch.nn.Module, x: torch.Tensor, position_ids: torch.Tensor) -> tuple:
    scaled = self.config.rope_parameters.get("rope_type", "default") != "default"
    return (_scaled_rope_f64 if scaled else _rope_f64)(self, x, position_ids)


def test_float64_logits_match_transformers(saved: tuple[PreTrainedModel, Path],
                                           float64_reference: None) -> None:
    model, path = saved
    model.double().set_attn_implementation("sdpa")
    try:
        _compare(model, path, np.float64, F64)
    finally:
        model.float().set_attn_implementation("eager")


def test_parameter_count_matches_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    assert_counts_match(*saved)


def _hf_greedy(model: PreTrainedModel, prompt: list[int]) -> list[int]:
    return hf_greedy(model, prompt, NEW_TOKENS)


def _tfcli_greedy(path: Path, prompts: list[list[int]], use_cache: bool = True) -> list[list[int]]:
    return tfcli_greedy(path, prompts, NEW_TOKENS, use_cache)


@pytest.mark.parametrize("name", ["qwen2", "qwen3"])
def test_greedy_tokens_match_transformers(name: str, tmp_path: Path) -> None:
    model = _build(name, tmp_path, std=0.2)
    expected = [_hf_greedy(model, p) for p in PROMPTS]
    assert _tfcli_greedy(tmp_path, PROMPTS) == expected  # one left-padded batch
    assert [_tfcli_greedy(tmp_path, [p])[0] for p in PROMPTS] == expected
    assert _tfcli_greedy(tmp_path, PROMPTS[:1], use_cache=False) == expected[:1]


def test_left_padded_batch_matches_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    """The second sequence left-padded by 5: positions count real tokens only, on both sides."""
    import torch
    model, path = saved
    tokens, _ = _inputs()
    mask = np.ones_like(tokens)
    mask[1, :5] = 0
    positions = np.maximum(np.cumsum(mask, axis=1) - 1, 0)
    with torch.no_grad():
        want = model(input_ids=torch.from_numpy(tokens), attention_mask=torch.from_numpy(mask),
                     position_ids=torch.from_numpy(positions)).logits.numpy()
    spec = spec_from_config_dir(path)
    got = forward(spec, load_weights(path, spec),
                  ModelInput(tokens, attention_mask=mask, positions=positions)).logits
    real = mask.astype(bool)
    np.testing.assert_allclose(got[real], want[real], **F32)


def test_loaded_checkpoints_are_laid_out_for_decoding(saved: tuple[PreTrainedModel, Path]) -> None:
    """Q/K/V (and Qwen2's q/k/v biases) load fused; o and down projections Fortran-ordered."""
    from tfcli.engine.layout import fused_projection

    _, path = saved
    spec = spec_from_config_dir(path)
    for block in load_weights(path, spec).decoder.blocks:
        fused = fused_projection(block.attn, ("wq", "wk", "wv"), ("bq", "bk", "bv"))
        assert fused is not None and (fused[1] is not None) == bool(spec.attention_bias)
        assert block.attn.wo.flags.f_contiguous and block.ffn.w_down.flags.f_contiguous


# --- use_sliding_window (the qwen2-sliding / qwen3-sliding rows of parity_families.py) -------

sliding = saved_rows({"qwen2-sliding": qwen2_sliding, "qwen3-sliding": qwen3_sliding})


def _no_window(model: PreTrainedModel) -> None:
    """Every layer full attention, as without use_sliding_window."""
    model.config.layer_types = ["full_attention"] * model.config.num_hidden_layers
    for layer in layers(model):
        layer.self_attn.sliding_window = None


test_the_sliding_window_moves_the_logits = switch_test({"sliding window": _no_window},
                                                       fixture="sliding")


def test_sliding_float64_logits_match(sliding: tuple[PreTrainedModel, Path],
                                      float64_reference: None) -> None:
    assert_float64_logits_match(*sliding)
