"""GPT-NeoX, GPT-J, Phi and StableLM against transformers: small random models with every
variant their family uses switched on (partial rotary, GPT-J's interleaved pairs, parallel
residuals from one or two norms, projection and head biases, GQA, a scaled partial rotation),
saved, loaded through tfcli, compared logit by logit (float32 as shipped; float64 with
transformers' float32 RoPE tables swapped for float64 ones), batched with right and left
padding, and greedy generation token for token.

Tolerances: those of test_hf_parity.py (float32 rtol = atol = 1e-4; float64 rtol 1e-10,
atol 1e-12). Only the real (unpadded) positions are compared.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.parity.greedy import hf_greedy, tfcli_greedy
from tests.parity.saved_models import assert_counts_match, save_random
from tests.parity.test_hf_parity import F32, F64
from tests.parity.test_hf_rope_scaling_parity import _rope_f64 as _scaled_rope_f64
from tests.parity.test_hf_parity import _rope_f64
from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.engine.model import ModelInput, forward

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

VOCAB, BATCH, LENGTH, NEW_TOKENS = 96, 2, 12, 10
# d_model 64, 4 heads of 16
SMALL = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
         "intermediate_size": 128, "vocab_size": VOCAB, "max_position_embeddings": 64,
         "bos_token_id": 0, "eos_token_id": 0}
PROMPTS = [[5, 17, 33, 2, 80], [9, 1, 4]]


def _neox() -> PreTrainedModel:
    """Pythia's recipe: rotary_pct 0.25 (4 of 16 dims), two-norm parallel residual, biases."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
    return GPTNeoXForCausalLM(GPTNeoXConfig(**SMALL, rotary_pct=0.25, rotary_emb_base=500))


def _neox_sequential() -> PreTrainedModel:
    """use_parallel_residual false and no attention biases (the MLP keeps its own)."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
    return GPTNeoXForCausalLM(GPTNeoXConfig(**SMALL, rotary_pct=0.5, use_parallel_residual=False,
                                            attention_bias=False))


def _neox_linear() -> PreTrainedModel:
    """Partial rotary meets rope_scaling: linear interpolation over the 8 rotated dims."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
    return GPTNeoXForCausalLM(GPTNeoXConfig(**SMALL, rope_parameters={
        "rope_type": "linear", "factor": 2.0, "rope_theta": 1000.0,
        "partial_rotary_factor": 0.5}))


def _gptj() -> PreTrainedModel:
    """rotary_dim 8 of 16 in interleaved pairs, one shared norm, a biased head."""
    from transformers import GPTJConfig, GPTJForCausalLM
    return GPTJForCausalLM(GPTJConfig(vocab_size=VOCAB, n_positions=64, n_embd=64, n_head=4,
                                      n_layer=2, rotary_dim=8, bos_token_id=0, eos_token_id=0))


def _phi() -> PreTrainedModel:
    """Phi-2's recipe at 40% of each head (int(6.4) = 6 dims), with GQA."""
    from transformers import PhiConfig, PhiForCausalLM
    return PhiForCausalLM(PhiConfig(**SMALL, num_key_value_heads=2, partial_rotary_factor=0.4))


def _stablelm() -> PreTrainedModel:
    """StableLM 2 1.6B's recipe: q/k/v biases, sequential, 25% rotary; GQA."""
    from transformers import StableLmConfig, StableLmForCausalLM
    return StableLmForCausalLM(StableLmConfig(**SMALL, num_key_value_heads=2, use_qkv_bias=True))


def _stablelm_parallel() -> PreTrainedModel:
    """use_parallel_residual: attention and FFN from the one input norm."""
    from transformers import StableLmConfig, StableLmForCausalLM
    return StableLmForCausalLM(StableLmConfig(**SMALL, num_key_value_heads=4,
                                              use_parallel_residual=True,
                                              partial_rotary_factor=0.5))


CASES: dict[str, Callable[[], PreTrainedModel]] = {
    "neox": _neox, "neox-sequential": _neox_sequential, "neox-linear": _neox_linear,
    "gptj": _gptj, "phi": _phi, "stablelm": _stablelm, "stablelm-parallel": _stablelm_parallel,
}


def _build(name: str, path: Path, std: float | None = None) -> PreTrainedModel:
    """The case's model with non-trivial norm weights and biases (their initial ones / zeros
    would hide a missing or misplaced one), saved as safetensors. `std` redraws the matrices
    (generation: logits far from ties)."""
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


def _rope_any_f64(self: torch.nn.Module, x: torch.Tensor, position_ids: torch.Tensor) -> tuple:
    scaled = self.config.rope_parameters.get("rope_type", "default") != "default"
    return (_scaled_rope_f64 if scaled else _rope_f64)(self, x, position_ids)


def _gptj_rope_f64(self: torch.nn.Module, x: torch.Tensor, position_ids: torch.Tensor) -> tuple:
    """create_sinusoidal_positions in float64 (transformers builds it in float32)."""
    import torch
    dim = self.pos_embd_dim
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    angles = position_ids[..., None].double() * inv_freq  # (B, T, dim/2)
    return angles.sin().to(x.dtype), angles.cos().to(x.dtype)


@pytest.fixture
def float64_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers.models.gpt_neox import modeling_gpt_neox as neox
    from transformers.models.gptj import modeling_gptj as gptj
    from transformers.models.phi import modeling_phi as phi
    from transformers.models.stablelm import modeling_stablelm as stablelm
    for rope in (neox.GPTNeoXRotaryEmbedding, phi.PhiRotaryEmbedding,
                 stablelm.StableLmRotaryEmbedding):
        monkeypatch.setattr(rope, "forward", _rope_any_f64)
    monkeypatch.setattr(gptj.GPTJRotaryEmbedding, "forward", _gptj_rope_f64)


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


@pytest.mark.parametrize("name", list(CASES))
def test_greedy_tokens_match_transformers(name: str, tmp_path: Path) -> None:
    model = _build(name, tmp_path, std=0.2)
    expected = [hf_greedy(model, p, NEW_TOKENS) for p in PROMPTS]
    assert tfcli_greedy(tmp_path, PROMPTS, NEW_TOKENS) == expected  # one left-padded batch
    assert [tfcli_greedy(tmp_path, [p], NEW_TOKENS)[0] for p in PROMPTS] == expected
    assert tfcli_greedy(tmp_path, PROMPTS[:1], NEW_TOKENS, use_cache=False) == expected[:1]
