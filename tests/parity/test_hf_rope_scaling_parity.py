"""RoPE scaling (llama3, linear, yarn) against transformers, never skipped: a small random
LlamaForCausalLM per type, saved as safetensors and loaded through tfcli's own loader.

The sequences (40 tokens) run well past each case's original context (16), where the scaled
frequencies differ most from plain RoPE. Checked: logits in float32 (rtol = atol = 1e-4) on a
batch whose second row is right-padded; logits in float64 (rtol 1e-10) against transformers with
its RoPE table evaluated in float64 (transformers builds inv_freq in float32: `torch.float` is
read when the table is built, so building it with torch.float set to float64 gives transformers'
own formula at float64); greedy tokens equal to `model.generate(do_sample=False)` for a
left-padded batch and each prompt alone; `tfcli generate --check-cache` passes; and without its
scaling the same checkpoint drifts (the cases do not pass by accident).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.engine.model import ModelInput, forward
from tests.parity.greedy import hf_greedy, tfcli_greedy

if TYPE_CHECKING:
    import torch
    from transformers import LlamaConfig, PreTrainedModel

VOCAB, LENGTH, NEW_TOKENS = 96, 40, 12
F32 = {"rtol": 1e-4, "atol": 1e-4}
F64 = {"rtol": 1e-10, "atol": 1e-12}
DECODER = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
           "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": VOCAB,
           "max_position_embeddings": 64, "initializer_range": 0.2}
CASES = {
    "llama3": {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
               "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 16},
    "linear": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0},
    "yarn": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
             "original_max_position_embeddings": 16},
    # dynamic reads its original length from max_position_embeddings (set to 16 below)
    "dynamic": {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 4.0},
    "longrope": {"rope_type": "longrope", "rope_theta": 10000.0, "factor": 4.0,
                 "original_max_position_embeddings": 16, "attention_factor": 1.1,
                 "short_factor": [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0],
                 "long_factor": [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0]},
}
# the sequence-dependent types: a cached key keeps the table of the step that rotated it
SEQUENCE_DEPENDENT = {"dynamic"}
PROMPTS = [[5, 17, 33, 2, 80, 7, 9, 11, 3, 60, 44, 21, 8, 19, 70, 31, 6, 2],
           [9, 1, 4, 50, 61, 12, 33, 40, 2, 7, 8, 90, 13, 14, 15, 16, 17, 18, 19, 20]]


def _config(case: str) -> LlamaConfig:
    from transformers import LlamaConfig
    context = {"max_position_embeddings": 16} if case == "dynamic" else {}
    return LlamaConfig(**DECODER | context, rope_parameters=CASES[case])


def _fresh(path: Path) -> PreTrainedModel:
    """The saved model reloaded: transformers' dynamic and longrope tables are state that an
    earlier call leaves behind; tfcli's are a function of the call's positions."""
    from transformers import LlamaForCausalLM
    model = LlamaForCausalLM.from_pretrained(path, attn_implementation="eager")
    return model.eval()


@pytest.fixture(scope="module", params=sorted(CASES))
def saved(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[PreTrainedModel, Path]:
    import torch
    from transformers import LlamaForCausalLM
    torch.manual_seed(0)
    model = LlamaForCausalLM(_config(request.param))
    model.set_attn_implementation("eager")
    model.eval()
    path = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(path, safe_serialization=True)
    return model, path


def _tokens() -> tuple[np.ndarray, np.ndarray]:
    tokens = np.random.default_rng(1).integers(1, VOCAB, size=(2, LENGTH))
    mask = np.ones_like(tokens)
    mask[1, -9:] = 0  # the second sequence is 31 real tokens, right-padded
    return tokens, mask


def _hf_logits(model: PreTrainedModel, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    import torch
    with torch.no_grad():
        return model(input_ids=torch.from_numpy(tokens),
                     attention_mask=torch.from_numpy(mask)).logits.numpy()


def _tfcli_logits(path: Path, dtype: type, tokens: np.ndarray, mask: np.ndarray,
                  scaled: bool = True) -> np.ndarray:
    spec = spec_from_config_dir(path)
    assert spec.rope_scaling is not None
    weights = load_weights(path, spec, dtype=dtype)
    if not scaled:
        spec = spec.replace(rope_scaling=None)
    return forward(spec, weights, ModelInput(tokens, attention_mask=mask)).logits


def _real(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return logits[mask.astype(bool)]  # (real tokens, vocab): padded positions are unspecified


def test_float32_logits_match_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    model, path = saved
    tokens, mask = _tokens()
    want = _hf_logits(model, tokens, mask)
    got = _tfcli_logits(path, np.float32, tokens, mask)
    assert got.dtype == np.float32
    np.testing.assert_allclose(_real(got, mask), _real(want, mask), **F32)


def _inv_freq_f64(config: LlamaConfig, seq_len: int) -> tuple[torch.Tensor, float]:
    """transformers' own table function, evaluated with torch.float meaning float64."""
    import torch
    from transformers import modeling_rope_utils as rope_utils
    kind, params = config.rope_parameters["rope_type"], config.rope_parameters
    if kind == "longrope":  # transformers builds its factor lists in float32 explicitly
        key = "long_factor" if seq_len > params["original_max_position_embeddings"] else "short_factor"
        dim = 2 * len(params[key])
        shape = torch.arange(0, dim, 2, dtype=torch.float64) / dim
        inv_freq = 1.0 / (torch.tensor(params[key], dtype=torch.float64)
                          * params["rope_theta"] ** shape)
        return inv_freq, float(params["attention_factor"])
    float32 = torch.float
    try:
        torch.float = torch.float64  # type: ignore[misc]
        inv_freq, factor = rope_utils.ROPE_INIT_FUNCTIONS[kind](config, "cpu", seq_len=seq_len)
    finally:
        torch.float = float32  # type: ignore[misc]
    assert inv_freq.dtype == torch.float64
    return inv_freq, float(factor)


def _rope_f64(self: torch.nn.Module, x: torch.Tensor, position_ids: torch.Tensor) -> tuple:
    import torch
    inv_freq, factor = _inv_freq_f64(self.config, int(position_ids.max()) + 1)
    angles = position_ids[..., None].double() * inv_freq  # (B, T, dim/2)
    angles = torch.cat((angles, angles), dim=-1)
    return (angles.cos() * factor).to(x.dtype), (angles.sin() * factor).to(x.dtype)


def _rms_norm_f64(self: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    import torch
    variance = x.pow(2).mean(-1, keepdim=True)
    return self.weight * (x * torch.rsqrt(variance + self.variance_epsilon))


def test_float64_logits_match_transformers(saved: tuple[PreTrainedModel, Path],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers.models.llama import modeling_llama as llama
    model, path = saved
    monkeypatch.setattr(llama.LlamaRotaryEmbedding, "forward", _rope_f64)
    monkeypatch.setattr(llama.LlamaRMSNorm, "forward", _rms_norm_f64)
    tokens, mask = _tokens()
    model.double().set_attn_implementation("sdpa")
    try:
        want = _hf_logits(model, tokens, mask)
    finally:
        model.float().set_attn_implementation("eager")
    got = _tfcli_logits(path, np.float64, tokens, mask)
    np.testing.assert_allclose(_real(got, mask), _real(want, mask), **F64)


def test_without_scaling_the_logits_drift(saved: tuple[PreTrainedModel, Path]) -> None:
    """Plain RoPE on the same weights: past the original context the logits leave transformers'."""
    model, path = saved
    tokens, mask = np.random.default_rng(1).integers(1, VOCAB, size=(1, LENGTH)), None
    ones = np.ones_like(tokens)
    want = _hf_logits(model, tokens, ones)
    drift = np.abs(_tfcli_logits(path, np.float32, tokens, mask, scaled=False) - want)
    assert drift.max() > 100 * F32["atol"], drift.max()


def _hf_greedy(model: PreTrainedModel, prompt: list[int]) -> list[int]:
    return hf_greedy(model, prompt, NEW_TOKENS)


def _tfcli_greedy(path: Path, prompts: list[list[int]], use_cache: bool = True) -> list[list[int]]:
    return tfcli_greedy(path, prompts, NEW_TOKENS, use_cache)


def test_greedy_tokens_match_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    """Prompts of 18 and 20 tokens plus 12 new: generation crosses the original context (16)."""
    _, path = saved
    expected = [_hf_greedy(_fresh(path), p) for p in PROMPTS]
    assert [_tfcli_greedy(path, [p])[0] for p in PROMPTS] == expected
    if _case(path) in SEQUENCE_DEPENDENT:
        return  # a batch shares one table (its longest row decides), as transformers' does
    assert _tfcli_greedy(path, PROMPTS) == expected  # one left-padded batch
    assert _tfcli_greedy(path, PROMPTS[:1], use_cache=False) == expected[:1]


@pytest.mark.parametrize("saved", ["dynamic"], indirect=True)
def test_dynamic_generation_goes_past_the_scaled_context(
        saved: tuple[PreTrainedModel, Path]) -> None:
    """Dynamic NTK has no last position: 20 prompt tokens + 50 new run past max_seq_len (16 x 4
    = 64, as the reader sets it), token for token as transformers generates them."""
    _, path = saved
    assert spec_from_config_dir(path).max_seq_len == 64
    expected = hf_greedy(_fresh(path), PROMPTS[1], 50)
    assert tfcli_greedy(path, PROMPTS[1:], 50) == [expected]


def _case(path: Path) -> str:
    return path.name.rstrip("0123456789")  # tmp_path_factory numbers the folder


def _check_cache(invoke, path: Path, prompt: list[int], new: int) -> dict:  # noqa: ANN001
    result = invoke("generate", str(path), "--tokens", ",".join(map(str, prompt)),
                    "--max-new-tokens", str(new), "--check-cache", "-f", "json")
    return {"exit_code": result.exit_code, **json.loads(result.stdout)["check"]}


def test_check_cache_passes(saved: tuple[PreTrainedModel, Path], invoke) -> None:  # noqa: ANN001
    _, path = saved
    if _case(path) in SEQUENCE_DEPENDENT:
        # within the original 16 positions the table never changes: cached == uncached
        assert _check_cache(invoke, path, PROMPTS[1][:5], 10)["ok"]
        # past it every step grows the base, and the cache holds keys rotated under the
        # earlier bases (what transformers generates, above); recomputing them all differs
        check = _check_cache(invoke, path, PROMPTS[1], 24)
        assert not check["ok"] and check["exit_code"] != 0
        return
    check = _check_cache(invoke, path, PROMPTS[1], 24)
    assert check["exit_code"] == 0 and check["ok"], check
