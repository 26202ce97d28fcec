"""RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA and ALBERT against transformers: small random
models saved (save_random), loaded through tfcli, their last hidden state (and pooler output),
and the masked-LM logits / classification scores of their head classes, compared on a
right-padded batch; counted four ways (assert_counts_match).

Tolerance: float32 rtol = atol = 1e-4 (as test_hf_parity.py). RoBERTa's padding positions read
row padding_idx in transformers and a real row in tfcli (position_offset + index): those rows'
own outputs differ, so the RoBERTa families compare the real tokens only (pads are masked as
keys: no real token sees them). A left-padded row matches too once its positions are given.
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
from tfcli.engine.model import ModelInput, forward
from tfcli.engine.weights import named_arrays

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

VOCAB, BATCH, LENGTH, PAD = 120, 3, 10, 1
BERT_LIKE = {"vocab_size": VOCAB, "hidden_size": 32, "num_attention_heads": 4,
             "num_hidden_layers": 2, "intermediate_size": 64, "max_position_embeddings": 24}


def _roberta() -> PreTrainedModel:
    # 16 learned rows past padding_idx + 1 = 2: max_seq_len 16
    from transformers import RobertaConfig, RobertaModel
    return RobertaModel(RobertaConfig(**BERT_LIKE | {"max_position_embeddings": 18},
                                      pad_token_id=PAD, type_vocab_size=1, layer_norm_eps=1e-5))


def _xlm_roberta() -> PreTrainedModel:
    # padding_idx 3: the offset follows pad_token_id; two token types
    from transformers import XLMRobertaConfig, XLMRobertaModel
    return XLMRobertaModel(XLMRobertaConfig(**BERT_LIKE, pad_token_id=3, type_vocab_size=2))


def _distilbert() -> PreTrainedModel:
    from transformers import DistilBertConfig, DistilBertModel
    return DistilBertModel(DistilBertConfig(vocab_size=VOCAB, dim=32, n_heads=4, n_layers=3,
                                            hidden_dim=48, max_position_embeddings=24))


def _distilbert_sinusoidal_relu() -> PreTrainedModel:
    from transformers import DistilBertConfig, DistilBertModel
    return DistilBertModel(DistilBertConfig(vocab_size=VOCAB, dim=32, n_heads=2, n_layers=2,
                                            hidden_dim=40, max_position_embeddings=20,
                                            sinusoidal_pos_embds=True, activation="relu"))


def _electra_small() -> PreTrainedModel:  # embedding_size 16 != hidden 32: embeddings_project
    from transformers import ElectraConfig, ElectraModel
    return ElectraModel(ElectraConfig(**BERT_LIKE, embedding_size=16))


def _electra_base() -> PreTrainedModel:  # embedding_size == hidden_size: BERT's body, no pooler
    from transformers import ElectraConfig, ElectraModel
    return ElectraModel(ElectraConfig(**BERT_LIKE, embedding_size=32))


def _albert() -> PreTrainedModel:  # one block's weights run by 3 layers
    from transformers import AlbertConfig, AlbertModel
    return AlbertModel(AlbertConfig(**BERT_LIKE | {"num_hidden_layers": 3}, embedding_size=16,
                                    hidden_act="gelu_new"))


CASES: dict[str, Callable[[], PreTrainedModel]] = {
    "roberta": _roberta, "xlm-roberta": _xlm_roberta, "distilbert": _distilbert,
    "distilbert-sinusoidal-relu": _distilbert_sinusoidal_relu, "electra-small": _electra_small,
    "electra-base": _electra_base, "albert": _albert,
}
OFFSET_POSITIONS = ("roberta", "xlm-roberta")


@pytest.fixture(scope="module", params=list(CASES))
def saved(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[str, PreTrainedModel, Path]:
    path = tmp_path_factory.mktemp(request.param)
    return request.param, save_random(CASES[request.param], path), path


def _batch(model: PreTrainedModel) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded tokens (rows of 10, 7 and 4 real tokens; pads are pad_token_id) and mask."""
    rng = np.random.default_rng(1)
    pad = model.config.pad_token_id
    tokens = rng.integers(pad + 1, VOCAB, size=(BATCH, LENGTH))  # no pad among the real tokens
    mask = (np.arange(LENGTH)[None] < np.array([[LENGTH], [7], [4]])).astype(np.int64)
    return np.where(mask == 1, tokens, pad), mask


def _hf(model: PreTrainedModel, tokens: np.ndarray, mask: np.ndarray,
        **extra: torch.Tensor) -> tuple[np.ndarray, np.ndarray | None]:
    import torch
    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(tokens), attention_mask=torch.from_numpy(mask),
                    **extra)
    pooled = getattr(out, "pooler_output", None)
    return out.last_hidden_state.numpy(), None if pooled is None else pooled.numpy()


def test_hidden_states_match_transformers_on_a_right_padded_batch(
        saved: tuple[str, PreTrainedModel, Path]) -> None:
    name, model, path = saved
    tokens, mask = _batch(model)
    hidden, pooled = _hf(model, tokens, mask)
    spec = spec_from_config_dir(path)
    out = forward(spec, load_weights(path, spec), ModelInput(tokens, attention_mask=mask))
    real = mask.astype(bool) if name in OFFSET_POSITIONS else np.ones_like(mask, dtype=bool)
    np.testing.assert_allclose(out.hidden[real], hidden[real], **F32)
    assert (out.pooled is None) == (pooled is None)
    if pooled is not None:  # the first token is real in every row
        np.testing.assert_allclose(out.pooled, pooled, **F32)


def test_counted_four_ways(saved: tuple[str, PreTrainedModel, Path]) -> None:
    _, model, path = saved
    assert_counts_match(model, path)


def test_a_left_padded_roberta_row_matches_with_its_positions_given(tmp_path: Path) -> None:
    """transformers numbers real tokens from padding_idx + 1 wherever the pads are; given the
    same numbering (0 for the first real token), tfcli's offset table rows agree."""
    model = save_random(_roberta, tmp_path)
    tokens, mask = _batch(model)
    tokens, mask = tokens[:, ::-1].copy(), mask[:, ::-1].copy()  # the pads now lead
    positions = np.maximum(np.cumsum(mask, axis=1) - 1, 0)
    hidden, _ = _hf(model, tokens, mask)
    spec = spec_from_config_dir(tmp_path)
    out = forward(spec, load_weights(tmp_path, spec),
                  ModelInput(tokens, attention_mask=mask, positions=positions))
    real = mask.astype(bool)
    np.testing.assert_allclose(out.hidden[real], hidden[real], **F32)


def test_token_types_reach_xlm_roberta(tmp_path: Path) -> None:
    import torch
    model = save_random(_xlm_roberta, tmp_path)
    tokens, mask = _batch(model)
    types = (np.arange(LENGTH) >= 3).astype(np.int64)[None].repeat(BATCH, 0)
    hidden, _ = _hf(model, tokens, mask, token_type_ids=torch.from_numpy(types))
    spec = spec_from_config_dir(tmp_path)
    out = forward(spec, load_weights(tmp_path, spec),
                  ModelInput(tokens, attention_mask=mask, token_types=types))
    real = mask.astype(bool)
    np.testing.assert_allclose(out.hidden[real], hidden[real], **F32)


def test_albert_holds_one_block_and_runs_it_at_every_layer(tmp_path: Path) -> None:
    save_random(_albert, tmp_path)
    spec = spec_from_config_dir(tmp_path)
    weights = load_weights(tmp_path, spec)
    blocks = weights.encoder.blocks
    assert spec.shared_layers and len(blocks) == 3
    assert all(block is blocks[0] for block in blocks)  # the same arrays, not copies
    paths = [p for p, _ in named_arrays(weights) if ".blocks." in p]
    assert paths and all(p.startswith("encoder.blocks.0.") for p in paths)


# --- the heads of these families (issue 16 item 1's head kinds, on these bodies) --------------

def _head(cls: str, body: Callable[[], PreTrainedModel],
          **changes: object) -> Callable[[], PreTrainedModel]:
    """transformers' head class `cls` on the config of body() (with `changes`), looked up
    when built."""
    def make() -> PreTrainedModel:
        import transformers
        config = body().config
        if changes:
            config = config.__class__(**config.to_dict() | changes)
        return getattr(transformers, cls)(config)
    return make


HEADS: dict[str, Callable[[], PreTrainedModel]] = {
    "roberta-masked-lm": _head("RobertaForMaskedLM", _roberta),
    # classifier.dense + tanh: the pooler
    "roberta-classifier": _head("RobertaForSequenceClassification", _roberta),
    "distilbert-masked-lm": _head("DistilBertForMaskedLM", _distilbert),
    # pre_classifier + ReLU: the pooler
    "distilbert-classifier": _head("DistilBertForSequenceClassification", _distilbert),
    # classifier.dense + GELU: the pooler
    "electra-small-classifier": _head("ElectraForSequenceClassification", _electra_small),
    "albert-classifier": _head("AlbertForSequenceClassification", _albert),
    # dense + hidden_act, one logit per token
    "electra-small-discriminator": _head("ElectraForPreTraining", _electra_small),
    # masked-LM on factorised embeddings: dense d_model -> embedding_size, then the tied table
    "albert-masked-lm": _head("AlbertForMaskedLM", _albert),
    "electra-small-generator": _head("ElectraForMaskedLM", _electra_small),
    "albert-tokens": _head("AlbertForTokenClassification", _albert, num_labels=3),
}


@pytest.mark.parametrize("name", sorted(HEADS))
def test_head_logits_match_transformers(name: str, tmp_path: Path) -> None:
    import torch
    model = save_random(HEADS[name], tmp_path)
    tokens, mask = _batch(model)
    with torch.no_grad():
        want = model(input_ids=torch.from_numpy(tokens),
                     attention_mask=torch.from_numpy(mask)).logits.numpy()
    spec = spec_from_config_dir(tmp_path)
    out = forward(spec, load_weights(tmp_path, spec), ModelInput(tokens, attention_mask=mask))
    got = out.logits if spec.head == "masked_lm" else out.scores
    if want.ndim == 2 and got.ndim == 3:  # the discriminator squeezes its one label away
        got = got[..., 0]
    assert got.shape == want.shape
    if got.shape == mask.shape or got.ndim == 3:  # per token: the real ones (RoBERTa's pads
        # read other position rows)
        real = mask.astype(bool)
        np.testing.assert_allclose(got[real], want[real], **F32)
    else:
        np.testing.assert_allclose(got, want, **F32)
    assert_counts_match(model, tmp_path)
