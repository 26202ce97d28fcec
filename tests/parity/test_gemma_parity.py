"""Gemma 1 / 2 / 3 against transformers: small random models with every variant the family
uses switched on (scaled embeddings, (1 + weight) RMSNorms, GeGLU tanh, query_pre_attn_scalar,
sandwich norms, soft-capped scores and logits, local / global layers with a sliding window
shorter than the inputs, Gemma 3's q/k norms, local RoPE base and scaled global RoPE), saved,
loaded through tfcli, compared logit by logit on a batch right-padded and one left-padded;
greedy generation token for token; `tfcli generate --check-cache`.

Tolerance: float32 rtol = atol = 1e-4 (tests/parity/test_hf_parity.py's F32). Only the real
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
from tests.parity.saved_models import assert_counts_match, real_logits, save_random
from tests.parity.test_hf_parity import F32
from tfcli.checkpoints import spec_from_config_dir

if TYPE_CHECKING:
    from transformers import PreTrainedModel

VOCAB, BATCH, LENGTH, NEW_TOKENS = 96, 2, 12, 10
WINDOW = 4  # shorter than the 12-token inputs and the prompts plus their new tokens
PROMPTS = [[5, 17, 33, 2, 80, 41], [9, 1, 4]]
SMALL = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
         "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": VOCAB,
         "max_position_embeddings": 64, "pad_token_id": 0}


def _gemma() -> PreTrainedModel:
    """Gemma 1 (multi-query as Gemma 2B) with the legacy hidden_act 'gelu' (read as tanh)."""
    from transformers import GemmaConfig, GemmaForCausalLM
    small = SMALL | {"num_key_value_heads": 1}
    return GemmaForCausalLM(GemmaConfig(**small, hidden_act="gelu", rope_theta=1000.0))


def _gemma2() -> PreTrainedModel:
    """Gemma 2: 4 alternating layers, window 4, caps low enough to bite (scores of random
    weights are small), query_pre_attn_scalar unlike head_dim (Gemma 2 27B's shape)."""
    from transformers import Gemma2Config, Gemma2ForCausalLM
    return Gemma2ForCausalLM(Gemma2Config(
        **SMALL | {"num_hidden_layers": 4}, sliding_window=WINDOW, query_pre_attn_scalar=24,
        attn_logit_softcapping=0.5, final_logit_softcapping=2.0, rope_theta=1000.0))


def _gemma3() -> PreTrainedModel:
    """Gemma 3: 5 local : 1 global over 7 layers (the pattern wraps), q/k norms, a local base of
    its own and linear scaling on the global layers (Gemma 3 4B+), a final cap, untied."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig
    return Gemma3ForCausalLM(Gemma3TextConfig(
        **SMALL | {"num_hidden_layers": 7}, sliding_window=WINDOW, query_pre_attn_scalar=16,
        final_logit_softcapping=3.0, tie_word_embeddings=False,
        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 4.0,
                                            "rope_theta": 5000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 100.0}}))


def _gemma3_layer_types() -> PreTrainedModel:
    """Gemma 3 with an explicit layer_types list (newer configs) and attention biases."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig
    types = ["sliding_attention", "full_attention", "sliding_attention"]
    return Gemma3ForCausalLM(Gemma3TextConfig(
        **SMALL | {"num_hidden_layers": 3}, sliding_window=WINDOW, layer_types=types,
        attention_bias=True))


CASES: dict[str, Callable[[], PreTrainedModel]] = {
    "gemma": _gemma, "gemma2": _gemma2, "gemma3": _gemma3, "gemma3-layer-types": _gemma3_layer_types,
}


def _build(name: str, path: Path, std: float | None = None) -> PreTrainedModel:
    """The case's model saved with non-trivial norms (Gemma's zero norm weights would hide a
    missing (1 + w)); `std` redraws the matrices."""
    return save_random(CASES[name], path, std)


@pytest.fixture(scope="module", params=list(CASES))
def saved(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[PreTrainedModel, Path]:
    path = tmp_path_factory.mktemp(request.param)
    return _build(request.param, path), path


def _tokens() -> np.ndarray:
    return np.random.default_rng(1).integers(1, VOCAB, size=(BATCH, LENGTH))


def _compare(model: PreTrainedModel, path: Path, mask: np.ndarray, positions: bool) -> None:
    tokens = _tokens()
    position_ids = np.maximum(np.cumsum(mask, axis=1) - 1, 0) if positions else None
    got, want = real_logits(model, path, tokens, mask, position_ids)
    np.testing.assert_allclose(got, want, **F32)


def test_right_padded_batch_matches_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    mask = np.ones((BATCH, LENGTH), dtype=np.int64)
    mask[1, -4:] = 0
    _compare(*saved, mask, positions=False)


def test_left_padded_batch_matches_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    """The second sequence left-padded by 5: positions count real tokens only, on both sides."""
    mask = np.ones((BATCH, LENGTH), dtype=np.int64)
    mask[1, :5] = 0
    _compare(*saved, mask, positions=True)


def test_imported_spec_uses_the_variants(saved: tuple[PreTrainedModel, Path]) -> None:
    model, path = saved
    spec = spec_from_config_dir(path)
    assert spec.scale_embeddings and spec.norm_unit_offset and spec.activation == "geglu_tanh"
    if model.config.model_type == "gemma":
        return
    assert spec.norm_placement == "sandwich" and "local" in spec.layer_pattern
    assert spec.sliding_window == WINDOW < LENGTH
    assert spec.attention_scale == model.config.query_pre_attn_scalar ** -0.5


def test_parameter_count_matches_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    assert_counts_match(*saved)


@pytest.mark.parametrize("name", list(CASES))
def test_greedy_tokens_match_transformers(name: str, tmp_path: Path) -> None:
    model = _build(name, tmp_path, std=0.2)
    expected = [hf_greedy(model, p, NEW_TOKENS) for p in PROMPTS]
    assert tfcli_greedy(tmp_path, PROMPTS, NEW_TOKENS) == expected  # one left-padded batch
    assert [tfcli_greedy(tmp_path, [p], NEW_TOKENS)[0] for p in PROMPTS] == expected
    assert tfcli_greedy(tmp_path, PROMPTS[:1], NEW_TOKENS, use_cache=False) == expected[:1]


def test_check_cache_passes(saved: tuple[PreTrainedModel, Path], invoke) -> None:  # noqa: ANN001
    _, path = saved
    result = invoke("generate", str(path), "--tokens", ",".join(map(str, PROMPTS[0])),
                    "--max-new-tokens", "12", "--check-cache", "-f", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["check"]["ok"]
