"""mT5 and UMT5 against transformers: small random models saved, loaded through tfcli, compared
logit by logit on padded source batches (right and left padding, a padded target), greedy
generation token for token, `tfcli generate --check-cache`, `tfcli trace --execute`, and the
parameter count four ways. Each family twice: the head untied (as the published checkpoints)
and tied (transformers 5's default; UMT5 then rescales the decoder output, mT5 does not).

Tolerance: float32 rtol = atol = 1e-4 (as test_hf_parity.py), on the real target positions;
float64 1e-10 with transformers' RMSNorm kept in float64 (it computes the variance in float32).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.parity.greedy import hf_greedy, tfcli_greedy
from tests.parity.saved_models import (assert_check_cache, assert_counts_match,
                                       assert_trace_execute, save_random, seq2seq_inputs,
                                       seq2seq_real_logits)
from tests.parity.test_hf_parity import F32, F64, _rms_norm_f64
from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.engine.model import ModelInput, forward

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel

VOCAB, BATCH, SOURCE, TARGET, NEW_TOKENS = 120, 2, 12, 7, 8
# 2 + 3 layers; max_distance 20 so the 12-token source reaches the logarithmic buckets
SMALL = {"vocab_size": VOCAB, "d_model": 48, "d_kv": 8, "d_ff": 80, "num_layers": 2,
         "num_decoder_layers": 3, "num_heads": 4, "relative_attention_max_distance": 20}
PROMPTS = [[5, 17, 33, 2, 80, 9, 41], [9, 1, 4]]


def _untied(config: PretrainedConfig) -> PretrainedConfig:
    """transformers 5 forces tie_word_embeddings true in __post_init__; the published mT5 / UMT5
    checkpoints store lm_head.weight apart (from_pretrained then unties it): set it back, with
    what UMT5Config reads from their tie_word_embeddings false (no rescale before the head)."""
    config.tie_word_embeddings = False
    if hasattr(config, "scale_decoder_outputs"):
        config.scale_decoder_outputs = False
    return config


def _case(model: str, config: str, tied: bool, **change: int) -> Callable[[], PreTrainedModel]:
    """transformers' `model` class on its `config` class (names, looked up when built)."""
    def make() -> PreTrainedModel:
        import transformers
        built = getattr(transformers, config)(**SMALL | change)
        return getattr(transformers, model)(built if tied else _untied(built))
    return make


CLASSES = {"mt5": ("MT5ForConditionalGeneration", "MT5Config"),
           "umt5": ("UMT5ForConditionalGeneration", "UMT5Config")}
VARIANTS = {f"{kind}{tail}": (*classes, tied) for kind, classes in CLASSES.items()
            for tail, tied in (("", False), ("-tied", True))}
CASES = {name: _case(*variant) for name, variant in VARIANTS.items()}
# transformers' generate sizes a reloaded model's decoder cache by num_layers: equal stacks
GENERATE = {name: _case(*variant, num_decoder_layers=SMALL["num_layers"])
            for name, variant in VARIANTS.items()}


def _save(make: Callable[[], PreTrainedModel], path: Path,
          std: float | None = None) -> PreTrainedModel:
    """make() saved as the published checkpoints are: untied, the stacks' embed_tokens
    equal to `shared` and lm_head apart; returned as from_pretrained loads it (the equal tables
    tied into one, lm_head kept apart), in eager attention and eval mode."""
    import torch
    model = save_random(make, path, std)
    if not model.config.tie_word_embeddings:
        with torch.no_grad():
            for stack in (model.encoder, model.decoder):
                stack.embed_tokens.weight.copy_(model.shared.weight)
        model.save_pretrained(path, safe_serialization=True)
    loaded = type(model).from_pretrained(path)
    loaded.set_attn_implementation("eager")
    return loaded.eval()


@pytest.fixture(scope="module", params=list(CASES))
def saved(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[PreTrainedModel, Path]:
    path = tmp_path_factory.mktemp(request.param)
    return _save(CASES[request.param], path), path


def _inputs(left: bool) -> dict[str, np.ndarray]:
    return seq2seq_inputs(left, vocab=VOCAB, batch=BATCH, source=SOURCE, target=TARGET,
                          lowest=2)


def _logits(saved: tuple[PreTrainedModel, Path], left: bool,
            dtype: type = np.float32) -> tuple[np.ndarray, np.ndarray]:
    return seq2seq_real_logits(*saved, _inputs(left), dtype)


@pytest.mark.parametrize("left", [False, True], ids=["right-padded", "left-padded"])
def test_float32_logits_match_on_padded_batches(saved: tuple[PreTrainedModel, Path],
                                                left: bool) -> None:
    np.testing.assert_allclose(*_logits(saved, left), **F32)


def test_float64_logits_match(saved: tuple[PreTrainedModel, Path],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers.models.mt5 import modeling_mt5
    from transformers.models.umt5 import modeling_umt5
    for norm in (modeling_mt5.MT5LayerNorm, modeling_umt5.UMT5LayerNorm):
        monkeypatch.setattr(norm, "forward", _rms_norm_f64)
    saved[0].double()
    try:
        np.testing.assert_allclose(*_logits(saved, left=False, dtype=np.float64), **F64)
    finally:
        saved[0].float()


def test_spec_reads_the_family(saved: tuple[PreTrainedModel, Path]) -> None:
    model, path = saved
    spec = spec_from_config_dir(path)
    assert spec.relative_bias_per_layer == (model.config.model_type == "umt5")
    tied = model.lm_head.weight is model.shared.weight
    assert spec.tie_embeddings == tied
    rescaled = bool(getattr(model.config, "scale_decoder_outputs", False))  # MT5: never
    assert spec.tied_head_rescale == (tied and rescaled)
    if spec.relative_bias_per_layer:  # every block's table loaded, each its own
        weights = load_weights(path, spec)
        want = model.encoder.block[1].layer[0].SelfAttention.relative_attention_bias.weight
        np.testing.assert_array_equal(weights.encoder.blocks[1].relative_bias,
                                      want.detach().numpy())
        assert weights.encoder.relative_bias is None


def test_parameter_count_matches_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    assert_counts_match(*saved)


def test_embedding_tables_are_one_in_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    """from_pretrained ties the stacks' embed_tokens to `shared` (tfcli's one token_embedding)
    and keeps a stored lm_head.weight apart, as tfcli."""
    model, path = saved
    assert model.encoder.embed_tokens.weight is model.shared.weight
    assert model.decoder.embed_tokens.weight is model.shared.weight


@pytest.mark.parametrize("name", list(GENERATE))
def test_greedy_tokens_match_transformers(name: str, tmp_path: Path) -> None:
    model = _save(GENERATE[name], tmp_path, std=0.3)
    expected = [hf_greedy(model, p, NEW_TOKENS) for p in PROMPTS]
    assert tfcli_greedy(tmp_path, PROMPTS, NEW_TOKENS) == expected  # one padded batch
    assert tfcli_greedy(tmp_path, PROMPTS[:1], NEW_TOKENS, use_cache=False) == expected[:1]


def test_check_cache_passes(saved: tuple[PreTrainedModel, Path], invoke) -> None:  # noqa: ANN001
    assert_check_cache(invoke, saved[1], PROMPTS[0], 10)


def test_trace_execute_matches_the_analytic_rows(saved: tuple[PreTrainedModel, Path],
                                                 invoke) -> None:  # noqa: ANN001
    assert_trace_execute(invoke, saved[1])


@pytest.mark.parametrize("name", ["MT5EncoderModel", "UMT5EncoderModel"])
def test_encoder_model_hidden_states_match(name: str, tmp_path: Path) -> None:
    """The encoder alone (UMT5EncoderModel: the text encoder of Wan and other video models),
    right-padded: hidden states of the real tokens within 1e-4."""
    import torch
    import transformers
    from transformers import MT5Config, UMT5Config
    config = (MT5Config if name.startswith("MT5") else UMT5Config)(**SMALL)
    model = save_random(lambda: getattr(transformers, name)(config), tmp_path)
    given = _inputs(left=False)
    with torch.no_grad():
        want = model(input_ids=torch.from_numpy(given["source"]),
                     attention_mask=torch.from_numpy(given["mask"])).last_hidden_state.numpy()
    spec = spec_from_config_dir(tmp_path)
    assert spec.family == "encoder" and not spec.lm_head
    got = forward(spec, load_weights(tmp_path, spec),
                  ModelInput(given["source"], attention_mask=given["mask"])).hidden
    real = given["mask"].astype(bool)
    np.testing.assert_allclose(got[real], want[real], **F32)
    assert_counts_match(model, tmp_path)
