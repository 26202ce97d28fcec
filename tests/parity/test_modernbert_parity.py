"""ModernBERT against transformers: small random models (save_random, eager attention) whose
local windows really cut - local_attention 4 (each query sees 2 keys either side) at length 12
- over 4 layers (global, local, local, global), loaded through tfcli; the last hidden state,
the masked-LM logits and the classification scores compared on a right-padded batch, on the
real tokens (padded queries are transformers' garbage as they are tfcli's); counted four ways.

Tolerance: float32 rtol = atol = 1e-4 (as test_hf_parity.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.parity.saved_models import assert_counts_match, assert_trace_execute, save_random
from tests.parity.test_hf_parity import F32
from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.engine.model import ForwardOutput, ModelInput, forward

if TYPE_CHECKING:
    from transformers import ModernBertConfig, PreTrainedModel

VOCAB, BATCH, LENGTH, PAD = 120, 3, 12, 0
TINY = {"vocab_size": VOCAB, "hidden_size": 32, "num_attention_heads": 4,
        "num_hidden_layers": 4, "intermediate_size": 40, "max_position_embeddings": 64,
        "local_attention": 4, "pad_token_id": PAD, "bos_token_id": 1, "eos_token_id": 2,
        "cls_token_id": 1, "sep_token_id": 2, "num_labels": 3}


def _config(**changes: object) -> ModernBertConfig:
    from transformers import ModernBertConfig
    return ModernBertConfig(**TINY | changes)


# every variant the reader maps: the published recipe (no biases, LayerNorms without bias,
# exact GELU), then biases everywhere with tanh GELU, then explicit layer_types and RoPE bases
BODIES: dict[str, Callable[[], ModernBertConfig]] = {
    "base-recipe": _config,
    "biases-tanh": lambda: _config(norm_bias=True, attention_bias=True, mlp_bias=True,
                                   classifier_bias=True, hidden_activation="gelu_pytorch_tanh",
                                   decoder_bias=False),
    "layer-types": lambda: _config(
        layer_types=["sliding_attention", "full_attention", "sliding_attention",
                     "sliding_attention"], local_attention=6,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 5000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 300.0}}),
}
def _head(cls: str, **changes: object) -> Callable[[ModernBertConfig], PreTrainedModel]:
    """transformers' `cls` on a body's config (with `changes`), looked up when built."""
    def make(config: ModernBertConfig) -> PreTrainedModel:
        import transformers
        if changes:
            config = transformers.ModernBertConfig(**config.to_dict() | changes)
        return getattr(transformers, cls)(config)
    return make


HEADS: dict[str, Callable[[ModernBertConfig], PreTrainedModel]] = {
    "model": _head("ModernBertModel"),
    "masked-lm": _head("ModernBertForMaskedLM"),
    "classifier-cls": _head("ModernBertForSequenceClassification", classifier_pooling="cls"),
    "classifier-mean": _head("ModernBertForSequenceClassification", classifier_pooling="mean"),
    "tokens": _head("ModernBertForTokenClassification"),
}
CASES = [(body, head) for body in BODIES for head in HEADS]


def _batch() -> tuple[np.ndarray, np.ndarray]:
    """Right-padded tokens (rows of 12, 9 and 5 real tokens; pads are PAD) and their mask."""
    rng = np.random.default_rng(1)
    tokens = rng.integers(PAD + 1, VOCAB, size=(BATCH, LENGTH))
    mask = (np.arange(LENGTH)[None] < np.array([[LENGTH], [9], [5]])).astype(np.int64)
    return np.where(mask == 1, tokens, PAD), mask


def _run(model: PreTrainedModel, path: Path) -> tuple[object, ForwardOutput, np.ndarray]:
    return _run_on(model, path, *_batch())


def _run_on(model: PreTrainedModel, path: Path, tokens: np.ndarray,
            mask: np.ndarray) -> tuple[object, ForwardOutput, np.ndarray]:
    """transformers' output, tfcli's on the checkpoint at `path`, and the real positions."""
    import torch
    with torch.no_grad():
        want = model(input_ids=torch.from_numpy(tokens), attention_mask=torch.from_numpy(mask))
    spec = spec_from_config_dir(path)
    got = forward(spec, load_weights(path, spec), ModelInput(tokens, attention_mask=mask))
    return want, got, mask.astype(bool)


@pytest.fixture(scope="module", params=CASES, ids=["-".join(c) for c in CASES])
def saved(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[str, PreTrainedModel, Path]:
    body, head = request.param
    path = tmp_path_factory.mktemp(f"{body}-{head}")
    return head, save_random(lambda: HEADS[head](BODIES[body]()), path), path


def test_outputs_match_transformers_on_a_right_padded_batch(
        saved: tuple[str, PreTrainedModel, Path]) -> None:
    head, model, path = saved
    want, got, real = _run(model, path)
    if head == "model":
        np.testing.assert_allclose(got.hidden[real], want.last_hidden_state.numpy()[real], **F32)
    elif head in ("masked-lm", "tokens"):
        logits = got.logits if head == "masked-lm" else got.scores
        np.testing.assert_allclose(logits[real], want.logits.numpy()[real], **F32)
    else:  # one row of scores per sequence
        np.testing.assert_allclose(got.scores, want.logits.numpy(), **F32)


def test_counted_four_ways(saved: tuple[str, PreTrainedModel, Path]) -> None:
    _, model, path = saved
    assert_counts_match(model, path)


def test_the_windows_cut_and_the_layers_alternate(tmp_path: Path) -> None:
    """The test model's local layers see fewer keys than its length: the reader's window and
    pattern, and a model whose windows are widened past the length differs from it (so the
    band mask is what made the comparison pass)."""
    import torch
    import transformers
    model = save_random(lambda: transformers.ModernBertModel(_config()), tmp_path)
    spec = spec_from_config_dir(tmp_path)
    assert spec.layer_kinds == ("global", "local", "local", "global")
    assert spec.sliding_window == 3 and (spec.rope_theta, spec.rope_local_theta) == (
        160000.0, 10000.0)
    assert not spec.first_attn_norm and spec.norm == "layernorm_nobias"
    tokens, mask = _batch()
    weights = load_weights(tmp_path, spec)
    wide = forward(spec.replace(sliding_window=LENGTH), weights, ModelInput(tokens, mask)).hidden
    with torch.no_grad():
        want = model(input_ids=torch.from_numpy(tokens),
                     attention_mask=torch.from_numpy(mask)).last_hidden_state.numpy()
    assert not np.allclose(wide[0], want[0], **F32)


def test_trace_execute_matches_a_saved_masked_lm(invoke, tmp_path: Path) -> None:  # noqa: ANN001
    import transformers
    save_random(lambda: transformers.ModernBertForMaskedLM(_config()), tmp_path)
    assert_trace_execute(invoke, tmp_path)


def test_trace_execute_matches_a_mean_pooled_classifier(invoke, tmp_path: Path) -> None:  # noqa: ANN001
    import transformers
    save_random(lambda: transformers.ModernBertForSequenceClassification(
        _config(classifier_pooling="mean")), tmp_path)
    assert_trace_execute(invoke, tmp_path)


def test_a_left_padded_batch_matches_sdpa_too(tmp_path: Path) -> None:
    """transformers numbers positions 0..T-1 whatever the padding, as tfcli does: left-padded
    rows match as well, against its SDPA attention (the windowed mask as a boolean bias)."""
    import transformers
    model = save_random(lambda: transformers.ModernBertModel(_config()), tmp_path)
    model.set_attn_implementation("sdpa")
    tokens, mask = _batch()
    tokens, mask = tokens[:, ::-1].copy(), mask[:, ::-1].copy()  # the pads now lead
    want, got, real = _run_on(model, tmp_path, tokens, mask)
    np.testing.assert_allclose(got.hidden[real], want.last_hidden_state.numpy()[real], **F32)
