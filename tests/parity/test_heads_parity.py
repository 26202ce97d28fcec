"""Task heads against transformers: small random models of each head class saved, loaded
through tfcli, and their head outputs compared on padded batches - masked-LM logits, sequence
and token classification scores, the decoder classifier's last real token (right and left
padded, pad_token_id set), and T5EncoderModel's last hidden state.

Tolerance: float32 rtol = atol = 1e-4 (test_hf_parity.py's F32). Per-token outputs are compared
at the real (unpadded) positions only; transformers computes the padded ones from the same
masked attention, but they are not the model's output.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.parity.saved_models import assert_counts_match, save_random
from tests.parity.test_hf_parity import F32
from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.engine.model import ForwardOutput, ModelInput, forward

if TYPE_CHECKING:
    from transformers import PreTrainedModel

VOCAB, PAD = 120, 0
BERT = {"hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2,
        "intermediate_size": 64, "vocab_size": VOCAB, "max_position_embeddings": 32,
        "pad_token_id": PAD}
DECODER = {"hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
           "num_hidden_layers": 2, "intermediate_size": 64, "vocab_size": VOCAB,
           "max_position_embeddings": 32, "pad_token_id": PAD, "num_labels": 3}
T5 = {"d_model": 32, "d_kv": 8, "d_ff": 64, "num_heads": 4, "num_layers": 2, "vocab_size": VOCAB,
      "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False}
ROWS = [[5, 17, 33, 2, 80, 11, 7], [9, 1, 4, 66]]  # two lengths: the short row is padded


def _hf(cls: str, config: str, **values: object) -> Callable[[], PreTrainedModel]:
    """transformers' `cls` on its `config` class of `values`, looked up when built."""
    def make() -> PreTrainedModel:
        import transformers
        return getattr(transformers, cls)(getattr(transformers, config)(**values))
    return make


def _bert(name: str, **extra: object) -> Callable[[], PreTrainedModel]:
    return _hf(name, "BertConfig", **BERT, **extra)


CASES: dict[str, Callable[[], PreTrainedModel]] = {
    "BertForMaskedLM": _bert("BertForMaskedLM"),
    "BertForSequenceClassification": _bert("BertForSequenceClassification", num_labels=3),
    "BertForTokenClassification": _bert("BertForTokenClassification", num_labels=5),
    "BertForQuestionAnswering": _bert("BertForQuestionAnswering"),
    "LlamaForSequenceClassification": _hf("LlamaForSequenceClassification", "LlamaConfig",
                                          **DECODER),
    "Qwen2ForSequenceClassification": _hf("Qwen2ForSequenceClassification", "Qwen2Config",
                                          **DECODER),
    "GPT2ForSequenceClassification": _hf("GPT2ForSequenceClassification", "GPT2Config",
                                         n_embd=32, n_head=4, n_layer=2, vocab_size=VOCAB,
                                         n_positions=32, pad_token_id=PAD, num_labels=2),
    "LlamaForTokenClassification": _hf("LlamaForTokenClassification", "LlamaConfig", **DECODER),
    "T5EncoderModel": _hf("T5EncoderModel", "T5Config", **T5),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("heads") / request.param
    return request.param, save_random(CASES[request.param], path), path


def _batch(left: bool) -> tuple[np.ndarray, np.ndarray]:
    """The rows padded with PAD to one length, on the right (or the left); their mask."""
    T = max(map(len, ROWS))
    tokens, mask = np.full((len(ROWS), T), PAD, np.int64), np.zeros((len(ROWS), T), np.int64)
    for b, row in enumerate(ROWS):
        at = slice(T - len(row), T) if left else slice(0, len(row))
        tokens[b, at], mask[b, at] = row, 1
    return tokens, mask


def _hf(model: PreTrainedModel, tokens: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
    import torch
    with torch.no_grad():
        out = model(input_ids=torch.tensor(tokens), attention_mask=torch.tensor(mask))
    if "start_logits" in out:  # question answering: (B, T) each -> (B, T, 2)
        return {"scores": torch.stack([out.start_logits, out.end_logits], -1).numpy()}
    if "last_hidden_state" in out:
        return {"hidden": out.last_hidden_state.numpy()}
    return {"logits": out.logits.numpy()}


def _ours(path: Path, tokens: np.ndarray, mask: np.ndarray) -> ForwardOutput:
    spec = spec_from_config_dir(path)
    return forward(spec, load_weights(path, spec), ModelInput(tokens, attention_mask=mask))


def _compare(name: str, model: PreTrainedModel, path: Path, left: bool) -> None:
    tokens, mask = _batch(left)
    expected, out = _hf(model, tokens, mask), _ours(path, tokens, mask)
    real = mask.astype(bool)
    if "hidden" in expected:  # T5EncoderModel
        np.testing.assert_allclose(out.hidden[real], expected["hidden"][real], **F32)
    elif "MaskedLM" in name:
        assert out.scores is None
        np.testing.assert_allclose(out.logits[real], expected["logits"][real], **F32)
    elif "Token" in name or "scores" in expected:
        got, want = out.scores, expected.get("scores", expected.get("logits"))
        assert got is not None and got.shape == want.shape
        np.testing.assert_allclose(got[real], want[real], **F32)
    else:  # sequence classification: one row of scores per sequence
        assert out.logits is None and out.scores is not None
        np.testing.assert_allclose(out.scores, expected["logits"], **F32)


def test_head_outputs_match_transformers_right_padded(saved) -> None:
    _compare(*saved, left=False)


def test_decoder_and_encoder_heads_match_left_padded(saved) -> None:
    """Left padding moves each row's last real token to the end: the decoder classifier must
    find it by pad_token_id, as transformers does."""
    _compare(*saved, left=True)


def test_parameter_counts_match_transformers(saved) -> None:
    _, model, path = saved
    assert_counts_match(model, path)
