"""BART against transformers: small random models saved (a random final_logits_bias buffer, the
two stacks' position tables and embedding norms distinct), loaded through tfcli, compared logit
by logit on padded source batches (right and left padding, a padded target), greedy generation
token for token, `tfcli generate --check-cache`, `tfcli trace --execute`, and the parameter count
four ways. Two recipes: BART-base's (exact GELU, no embedding scale) and scale_embedding with
ReLU.

Tolerance: float32 rtol = atol = 1e-4 (as test_hf_parity.py), on the real target positions;
float64 1e-10 (1e-7 with scale_embedding: see test_float64_logits_match).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.parity.greedy import hf_greedy, tfcli_greedy
from tests.parity.saved_models import (assert_check_cache, assert_counts_match,
                                       assert_trace_execute, save_random, seq2seq_inputs,
                                       seq2seq_real_logits)
from tests.parity.test_hf_parity import F32, F64
from tfcli.checkpoints import load_weights, spec_from_config_dir

if TYPE_CHECKING:
    from transformers import PreTrainedModel

VOCAB, BATCH, SOURCE, TARGET, NEW_TOKENS = 120, 2, 12, 7, 8
# BART's decoder_start_token_id (2) kept: generate starts from it on both sides; no forced EOS
SMALL = {"vocab_size": VOCAB, "d_model": 48, "encoder_layers": 2, "decoder_layers": 3,
         "encoder_ffn_dim": 80, "decoder_ffn_dim": 80, "encoder_attention_heads": 4,
         "decoder_attention_heads": 4, "max_position_embeddings": 40,
         "forced_eos_token_id": None}
CASES: dict[str, dict[str, object]] = {
    "bart": {},
    "bart-scaled-relu": {"scale_embedding": True, "activation_function": "relu"},
}
PROMPTS = [[5, 17, 33, 2, 80, 9, 41], [9, 1, 4]]


def _save(change: dict[str, object], path: Path, std: float | None = None) -> PreTrainedModel:
    """A random BART with a random final_logits_bias (a buffer: save_random leaves it 0),
    saved and returned in eager attention and eval mode."""
    import torch
    from transformers import BartConfig, BartForConditionalGeneration
    def make() -> PreTrainedModel:
        return BartForConditionalGeneration(BartConfig(**SMALL | change))
    model = save_random(make, path, std)
    with torch.no_grad():
        model.final_logits_bias.normal_(0.0, 0.5)
    model.save_pretrained(path, safe_serialization=True)
    return model


@pytest.fixture(scope="module", params=list(CASES))
def saved(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[PreTrainedModel, Path]:
    path = tmp_path_factory.mktemp(request.param)
    return _save(CASES[request.param], path), path


def _inputs(left: bool) -> dict[str, np.ndarray]:
    return seq2seq_inputs(left, vocab=VOCAB, batch=BATCH, source=SOURCE, target=TARGET,
                          lowest=3)


def _logits(saved: tuple[PreTrainedModel, Path], left: bool,
            dtype: type = np.float32) -> tuple[np.ndarray, np.ndarray]:
    return seq2seq_real_logits(*saved, _inputs(left), dtype)


@pytest.mark.parametrize("left", [False, True], ids=["right-padded", "left-padded"])
def test_float32_logits_match_on_padded_batches(saved: tuple[PreTrainedModel, Path],
                                                left: bool) -> None:
    np.testing.assert_allclose(*_logits(saved, left), **F32)


def test_float64_logits_match(saved: tuple[PreTrainedModel, Path]) -> None:
    """1e-10; with scale_embedding, 1e-7: the engine multiplies by sqrt(d_model) rounded to
    float32 (scale_embeddings, as Gemma's), BART by the float64 constant."""
    model = saved[0]
    tolerance = {"rtol": 1e-7, "atol": 1e-9} if model.config.scale_embedding else F64
    model.double()
    try:
        np.testing.assert_allclose(*_logits(saved, left=True, dtype=np.float64), **tolerance)
    finally:
        saved[0].float()


def test_each_stack_loads_its_own_tables_and_the_logits_bias(
        saved: tuple[PreTrainedModel, Path]) -> None:
    model, path = saved
    weights = load_weights(path, spec_from_config_dir(path))
    assert weights.position_embedding is None and weights.embedding_norm is None
    for stack, hf in ((weights.encoder, model.model.encoder), (weights.decoder, model.model.decoder)):
        np.testing.assert_array_equal(stack.position_embedding,
                                      hf.embed_positions.weight.detach().numpy())
        np.testing.assert_array_equal(stack.embedding_norm.bias,
                                      hf.layernorm_embedding.bias.detach().numpy())
    np.testing.assert_array_equal(weights.final_logits_bias, model.final_logits_bias.numpy())


def test_the_decoder_starts_from_the_configs_start_token(
        saved: tuple[PreTrainedModel, Path]) -> None:
    model, path = saved
    spec = spec_from_config_dir(path)
    assert spec.decoder_start_token_id == model.config.decoder_start_token_id == 2


def test_parameter_count_matches_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    assert_counts_match(*saved)


@pytest.mark.parametrize("name", list(CASES))
def test_greedy_tokens_match_transformers(name: str, tmp_path: Path) -> None:
    model = _save(CASES[name], tmp_path, std=0.3)
    expected = [hf_greedy(model, p, NEW_TOKENS) for p in PROMPTS]
    assert tfcli_greedy(tmp_path, PROMPTS, NEW_TOKENS) == expected  # one padded batch
    assert tfcli_greedy(tmp_path, PROMPTS[:1], NEW_TOKENS, use_cache=False) == expected[:1]


def test_check_cache_passes(saved: tuple[PreTrainedModel, Path], invoke) -> None:  # noqa: ANN001
    assert_check_cache(invoke, saved[1], PROMPTS[0], 10)


def test_trace_execute_matches_the_analytic_rows(saved: tuple[PreTrainedModel, Path],
                                                 invoke) -> None:  # noqa: ANN001
    assert_trace_execute(invoke, saved[1])
