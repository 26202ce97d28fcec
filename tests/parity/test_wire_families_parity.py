"""OLMo 2 (norms on the sublayer outputs, full q/k RMSNorm) and Falcon (parallel attention with
one or two norms, fused query_key_value in its three layouts) against transformers: small random
models saved, loaded through tfcli, compared logit by logit on a batch right-padded and one
left-padded; greedy generation token for token; `tfcli generate --check-cache`.

Tolerances: float32 rtol = atol = 1e-4 (tests/parity/test_hf_parity.py's F32); float64 rtol
1e-10, atol 1e-12 with transformers' float32 islands (RMSNorm, the RoPE tables) swapped for the
same formulas in float64 and attention through "sdpa", as in test_hf_parity.py. Only the real
(unpadded) positions are compared.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.parity.greedy import hf_greedy, tfcli_greedy
from tests.parity.saved_models import assert_counts_match, save_random
from tests.parity.test_hf_parity import F32, F64, _rms_norm_f64, _rope_f64
from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.engine.model import ModelInput, forward

if TYPE_CHECKING:
    from transformers import PreTrainedModel

VOCAB, BATCH, LENGTH, NEW_TOKENS = 96, 2, 12, 10
PROMPTS = [[5, 17, 33, 2, 80], [9, 1, 4]]
SMALL_OLMO2 = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
               "intermediate_size": 128, "vocab_size": VOCAB, "max_position_embeddings": 64,
               "rope_theta": 1000.0, "pad_token_id": 0}


def _olmo2() -> PreTrainedModel:
    from transformers import Olmo2Config, Olmo2ForCausalLM
    return Olmo2ForCausalLM(Olmo2Config(**SMALL_OLMO2))


def _olmo2_gqa_bias() -> PreTrainedModel:
    """GQA (the full k norm is then n_kv_heads * d_head wide), biases on q, k, v, o, tied."""
    from transformers import Olmo2Config, Olmo2ForCausalLM
    return Olmo2ForCausalLM(Olmo2Config(**SMALL_OLMO2, num_key_value_heads=2, attention_bias=True,
                                        tie_word_embeddings=True))


SMALL_FALCON = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
                "vocab_size": VOCAB, "max_position_embeddings": 64, "rope_theta": 1000.0}


def _falcon_mqa() -> PreTrainedModel:
    """Falcon-7B's recipe: one key/value head, parallel attention from one norm; with biases."""
    from transformers import FalconConfig, FalconForCausalLM
    return FalconForCausalLM(FalconConfig(**SMALL_FALCON, bias=True))


def _falcon_new() -> PreTrainedModel:
    """Falcon-40B's: new_decoder_architecture, 2 key/value groups, ln_attn and ln_mlp, untied."""
    from transformers import FalconConfig, FalconForCausalLM
    return FalconForCausalLM(FalconConfig(**SMALL_FALCON, new_decoder_architecture=True,
                                          num_kv_heads=2, tie_word_embeddings=False))


def _falcon_new_one_norm() -> PreTrainedModel:
    """Falcon 2's: new_decoder_architecture with one shared norm; biases, a wider MLP."""
    from transformers import FalconConfig, FalconForCausalLM
    return FalconForCausalLM(FalconConfig(**SMALL_FALCON, new_decoder_architecture=True,
                                          num_kv_heads=2, num_ln_in_parallel_attn=1, bias=True,
                                          ffn_hidden_size=96))


def _falcon_sequential() -> PreTrainedModel:
    """parallel_attn false: the sequential block; every head its own key/value ((H, 3, dh))."""
    from transformers import FalconConfig, FalconForCausalLM
    return FalconForCausalLM(FalconConfig(**SMALL_FALCON, multi_query=False, parallel_attn=False,
                                          bias=True))


CASES: dict[str, Callable[[], PreTrainedModel]] = {
    "olmo2": _olmo2, "olmo2-gqa-bias": _olmo2_gqa_bias, "falcon-mqa": _falcon_mqa,
    "falcon-new": _falcon_new, "falcon-new-one-norm": _falcon_new_one_norm,
    "falcon-sequential": _falcon_sequential,
}
GREEDY = ["olmo2", "falcon-mqa", "falcon-new"]


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


def _tokens() -> np.ndarray:
    return np.random.default_rng(1).integers(1, VOCAB, size=(BATCH, LENGTH))


def _compare(model: PreTrainedModel, path: Path, mask: np.ndarray, positions: bool,
             dtype: type = np.float32) -> None:
    import torch
    tokens = _tokens()
    pos = np.maximum(np.cumsum(mask, axis=1) - 1, 0) if positions else None
    with torch.no_grad():
        want = model(input_ids=torch.from_numpy(tokens), attention_mask=torch.from_numpy(mask),
                     position_ids=None if pos is None else torch.from_numpy(pos)).logits.numpy()
    spec = spec_from_config_dir(path)
    got = forward(spec, load_weights(path, spec, dtype=dtype),
                  ModelInput(tokens, attention_mask=mask, positions=pos)).logits
    assert got.dtype == np.dtype(dtype)
    real = mask.astype(bool)
    np.testing.assert_allclose(got[real], want[real], **(F64 if dtype == np.float64 else F32))


def test_right_padded_batch_matches_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    mask = np.ones((BATCH, LENGTH), dtype=np.int64)
    mask[1, -4:] = 0  # the second sequence right-padded by 4
    _compare(*saved, mask, positions=False)


def test_left_padded_batch_matches_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    """The second sequence left-padded by 5: positions count real tokens only, on both sides."""
    mask = np.ones((BATCH, LENGTH), dtype=np.int64)
    mask[1, :5] = 0
    _compare(*saved, mask, positions=True)


@pytest.fixture
def float64_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers.models.falcon import modeling_falcon as falcon
    from transformers.models.olmo2 import modeling_olmo2 as olmo2
    monkeypatch.setattr(olmo2.Olmo2RMSNorm, "forward", _rms_norm_f64)
    for rope in (olmo2.Olmo2RotaryEmbedding, falcon.FalconRotaryEmbedding):
        monkeypatch.setattr(rope, "forward", _rope_f64)


def test_float64_logits_match_transformers(saved: tuple[PreTrainedModel, Path],
                                           float64_reference: None) -> None:
    model, path = saved
    model.double().set_attn_implementation("sdpa")
    mask = np.ones((BATCH, LENGTH), dtype=np.int64)
    mask[1, -4:] = 0
    try:
        _compare(model, path, mask, positions=False, dtype=np.float64)
    finally:
        model.float().set_attn_implementation("eager")


def test_parameter_count_matches_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    assert_counts_match(*saved)


@pytest.mark.parametrize("name", GREEDY)
def test_greedy_tokens_match_transformers(name: str, tmp_path: Path) -> None:
    model = _build(name, tmp_path, std=0.2)
    expected = [hf_greedy(model, p, NEW_TOKENS) for p in PROMPTS]
    assert tfcli_greedy(tmp_path, PROMPTS, NEW_TOKENS) == expected  # one left-padded batch
    assert [tfcli_greedy(tmp_path, [p], NEW_TOKENS)[0] for p in PROMPTS] == expected
    assert tfcli_greedy(tmp_path, PROMPTS[:1], NEW_TOKENS, use_cache=False) == expected[:1]


def test_check_cache_passes(saved: tuple[PreTrainedModel, Path], invoke) -> None:  # noqa: ANN001
    _, path = saved
    result = invoke("generate", str(path), "--tokens", ",".join(map(str, PROMPTS[0])),
                    "--max-new-tokens", "16", "--check-cache", "-f", "json")
    check = json.loads(result.stdout)["check"]
    assert result.exit_code == 0 and check["ok"], check
