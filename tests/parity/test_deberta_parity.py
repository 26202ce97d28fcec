"""DeBERTa-v2/v3 against transformers: small random DebertaV2 models saved (save_random), loaded
through tfcli, their last hidden state and the masked-LM logits / classification scores of
their head classes compared on a right-padded batch of 16 tokens; counted four ways
(assert_counts_match); `tfcli trace PATH --execute` matches.

position_buckets 4 with max_relative_positions 8 at 16 tokens: offsets beyond 2 fall into log
buckets and offsets beyond 7 reach the clipped ends, so a wrong bucket formula or clip moves
real scores. Tolerance: float32 rtol = atol = 1e-4 (as test_hf_parity.py). transformers zeroes
the embeddings of padding positions and lets padding queries attend to nothing real: those rows'
own outputs differ, so only real tokens are compared (pads are masked as keys on both sides).
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
from tfcli.engine.disentangled_attention import log_bucket
from tfcli.engine.model import ModelInput, forward

if TYPE_CHECKING:
    import torch
    from transformers import DebertaV2Config, PreTrainedModel

VOCAB, BATCH, LENGTH, PAD = 120, 3, 16, 0
V3_LIKE = {"vocab_size": VOCAB, "hidden_size": 32, "num_attention_heads": 4,
           "num_hidden_layers": 2, "intermediate_size": 64, "max_position_embeddings": 24,
           "relative_attention": True, "position_buckets": 4, "max_relative_positions": 8,
           "pos_att_type": "p2c|c2p", "share_att_key": True, "norm_rel_ebd": "layer_norm",
           "position_biased_input": False, "type_vocab_size": 0, "pad_token_id": PAD}


def _config(**changes: object) -> DebertaV2Config:
    from transformers import DebertaV2Config
    return DebertaV2Config(**V3_LIKE | changes)


CONFIGS: dict[str, Callable[[], DebertaV2Config]] = {
    "v3": _config,
    "c2p-own-projections": lambda: _config(pos_att_type=["c2p"], share_att_key=False),
    "p2c-c2p-own-projections-absolute": lambda: _config(
        share_att_key=False, position_biased_input=True, type_vocab_size=2, norm_rel_ebd="none"),
    "factorised-embedding": lambda: _config(embedding_size=16),
    "unbucketed": lambda: _config(position_buckets=-1, max_relative_positions=6),
    # plain attention, still scaled by 1 / sqrt(3 d_head) for its two pos_att_type terms
    "no-relative-attention": lambda: _config(relative_attention=False, norm_rel_ebd="none"),
}


def _batch() -> tuple[np.ndarray, np.ndarray]:
    """Right-padded tokens (rows of 16, 11 and 5 real tokens; pads are id 0) and mask."""
    tokens = np.random.default_rng(1).integers(PAD + 1, VOCAB, size=(BATCH, LENGTH))
    mask = (np.arange(LENGTH)[None] < np.array([[LENGTH], [11], [5]])).astype(np.int64)
    return np.where(mask == 1, tokens, PAD), mask


def _ours(path: Path, tokens: np.ndarray, mask: np.ndarray) -> tuple[object, object]:
    spec = spec_from_config_dir(path)
    return spec, forward(spec, load_weights(path, spec), ModelInput(tokens, attention_mask=mask))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_hidden_states_match_transformers_on_a_right_padded_batch(name: str,
                                                                    tmp_path: Path) -> None:
    import transformers
    model = save_random(lambda: transformers.DebertaV2Model(CONFIGS[name]()), tmp_path)
    _assert_real_hidden_match(model, tmp_path, *_batch())
    assert_counts_match(model, tmp_path)


def test_a_left_padded_batch_matches_too(tmp_path: Path) -> None:
    """Relative offsets are token-index differences on both sides (transformers ignores
    position_ids there), and v3 has no absolute positions: leading pads change nothing real."""
    import transformers
    model = save_random(lambda: transformers.DebertaV2Model(_config()), tmp_path)
    tokens, mask = (a[:, ::-1].copy() for a in _batch())  # the pads now lead
    _assert_real_hidden_match(model, tmp_path, tokens, mask)


def _assert_real_hidden_match(model: torch.nn.Module, path: Path, tokens: np.ndarray,
                              mask: np.ndarray) -> None:
    """The last hidden state of every real token, ours against transformers', within float32."""
    import torch
    with torch.no_grad():
        want = model(input_ids=torch.from_numpy(tokens),
                     attention_mask=torch.from_numpy(mask)).last_hidden_state.numpy()
    _, out = _ours(path, tokens, mask)
    real = mask.astype(bool)
    np.testing.assert_allclose(out.hidden[real], want[real], **F32)


def _head(cls: str, **changes: object) -> Callable[[], PreTrainedModel]:
    """transformers' head class `cls` on _config(**changes), looked up when built."""
    def make() -> PreTrainedModel:
        import transformers
        return getattr(transformers, cls)(_config(**changes))
    return make


HEADS: dict[str, Callable[[], PreTrainedModel]] = {
    "masked-lm": _head("DebertaV2ForMaskedLM"),
    "masked-lm-not-legacy": _head("DebertaV2ForMaskedLM", legacy=False),
    "masked-lm-factorised": _head("DebertaV2ForMaskedLM", embedding_size=16),
    "classifier": _head("DebertaV2ForSequenceClassification", num_labels=3),
    "classifier-tanh-pooler": _head("DebertaV2ForSequenceClassification",
                                    pooler_hidden_act="tanh", pos_att_type="c2p",
                                    share_att_key=False),
    "tokens": _head("DebertaV2ForTokenClassification", num_labels=5),
}


@pytest.mark.parametrize("name", sorted(HEADS))
def test_head_logits_match_transformers(name: str, tmp_path: Path) -> None:
    import torch
    model = save_random(HEADS[name], tmp_path)
    tokens, mask = _batch()
    with torch.no_grad():
        want = model(input_ids=torch.from_numpy(tokens),
                     attention_mask=torch.from_numpy(mask)).logits.numpy()
    spec, out = _ours(tmp_path, tokens, mask)
    got = out.logits if spec.head == "masked_lm" else out.scores
    assert got.shape == want.shape
    if got.ndim == 3:  # per token: the real ones
        real = mask.astype(bool)
        got, want = got[real], want[real]
    np.testing.assert_allclose(got, want, **F32)
    assert_counts_match(model, tmp_path)


def test_log_buckets_equal_transformers_at_every_offset() -> None:
    """make_log_bucket_position itself, on every offset of a 600-token sequence and v3's 256
    buckets over 512 positions, and on the test models' 4 over 8."""
    import torch
    from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

    offsets = np.arange(-600, 601)
    for buckets, longest in ((256, 512), (4, 8), (6, 7)):
        want = make_log_bucket_position(torch.from_numpy(offsets), buckets, longest).long()
        np.testing.assert_array_equal(log_bucket(offsets, buckets, longest), want.numpy())


def test_trace_execute_matches_a_saved_model(invoke: Callable[..., object],
                                             tmp_path: Path) -> None:
    import transformers
    save_random(lambda: transformers.DebertaV2ForSequenceClassification(
        _config(share_att_key=False, embedding_size=16)), tmp_path)
    assert_trace_execute(invoke, tmp_path)
