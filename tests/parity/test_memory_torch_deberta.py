"""tfcli memory's DeBERTa-v2/v3 figures against what torch really holds in small random
DebertaV2Model instances: the inference peak (live tensor storages, op by op) within 15% and the
bytes autograd saves for backward (saved_tensors_hooks), with and without gradient
checkpointing, within 10%, in float32 and bfloat16 (tests/parity/torch_memory.py measures;
test_memory_torch.py holds the other families)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
import transformers as tf

from tests.parity.memory_cases import (SIZES, VOCAB, checkpointing, peak_pair, random_models,
                                       saved_pair, within)
from tfcli.analysis.memory.activations import Workload, inference_peak
from tfcli.analysis.memory.plan import MemoryOptions, build_memory_plan
from tfcli.analysis.memory.saved import saved_activations
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec


def _deberta(**changes: object) -> Callable[[], tf.PreTrainedModel]:
    def make() -> tf.PreTrainedModel:
        config = dict(hidden_size=64, num_attention_heads=4, num_hidden_layers=2,
                      intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=512,
                      relative_attention=True, position_biased_input=False, type_vocab_size=0,
                      hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0) | changes
        return tf.DebertaV2Model(tf.DebertaV2Config(**config))
    return make


MODELS: dict[str, Callable[[], tf.PreTrainedModel]] = {
    # deberta-v3's layout at a tiny size: both terms through the layer's own query / key
    # projections, log buckets (256 in v3, 32 here), a LayerNorm'd table
    "v3": _deberta(pos_att_type="p2c|c2p", share_att_key=True, norm_rel_ebd="layer_norm",
                   position_buckets=32),
    # one term with its own pos_key_proj, plain clipped offsets over 2 x 128 rows, no norm
    "c2p": _deberta(pos_att_type="c2p", share_att_key=False, max_relative_positions=128),
    # the other term alone (pos_query_proj), absolute positions and token types as in v2
    "p2c": _deberta(pos_att_type="p2c", share_att_key=False, norm_rel_ebd="layer_norm",
                    position_buckets=64, position_biased_input=True, type_vocab_size=2),
}
deberta = random_models(MODELS, "deberta")


def _hidden(model: tf.PreTrainedModel, ids: torch.Tensor) -> Callable[[], torch.Tensor]:
    return lambda: model(input_ids=ids).last_hidden_state


def test_inference_peak(deberta: tuple[tf.PreTrainedModel, Spec]) -> None:
    model, spec = deberta
    model.eval()
    for batch, seq_len in SIZES:
        got, want = peak_pair(model, spec, Workload(batch, seq_len, 4), "eager")
        assert within(got, want, 0.15), (batch, seq_len, got, want)


def test_sdpa_is_planned_as_the_eager_attention_transformers_keeps(
        deberta: tuple[tf.PreTrainedModel, Spec]) -> None:
    """DebertaV2 is not written against the attention interface: asked for sdpa it stays
    eager, so the sdpa plan is the eager one, with a note saying so."""
    model, spec = deberta
    asked = copy.deepcopy(model)
    asked.set_attn_implementation("sdpa")
    assert asked.config._attn_implementation == "eager"
    work = Workload(2, 64, 4)
    assert inference_peak(spec, work, "sdpa") == inference_peak(spec, work, "eager")
    assert saved_activations(spec, work, "sdpa") == saved_activations(spec, work, "eager")
    plan = build_memory_plan(spec, MemoryOptions(batch=2, seq_len=64, dtype="float32"))
    assert any("only eager attention" in note for note in plan.notes)


def test_inference_peak_in_bfloat16(deberta: tuple[tf.PreTrainedModel, Spec]) -> None:
    """16-bit scores and hidden states; the mask, positions and indices keep their dtypes."""
    model, spec = deberta
    half = copy.deepcopy(model).to(torch.bfloat16).eval()
    got, want = peak_pair(half, spec, Workload(1, 256, 2), "eager")
    assert within(got, want, 0.15), (got, want)


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_saved_activations(deberta: tuple[tf.PreTrainedModel, Spec], recompute: str) -> None:
    model, spec = deberta
    model.train()
    with checkpointing(model, recompute == "full"):
        for batch, seq_len in SIZES:
            got, want = saved_pair(model, spec, Workload(batch, seq_len, 4), _hidden, "eager",
                                   recompute)
            assert within(got, want, 0.10), (batch, seq_len, got, want)


def test_saved_activations_in_bfloat16(deberta: tuple[tf.PreTrainedModel, Spec]) -> None:
    """2-byte tensors; the float32 norm statistics tfcli counts (CUDA's) are 2-byte on CPU."""
    model, spec = deberta
    half = copy.deepcopy(model).to(torch.bfloat16).train()
    got, want = saved_pair(half, spec, Workload(2, 64, 2), _hidden, "eager")
    assert within(got, want, 0.10), (got, want)


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_saved_activations_with_dropout(deberta: tuple[tf.PreTrainedModel, Spec],
                                        recompute: str) -> None:
    """DeBERTa's configs train with 0.1 everywhere: each dropout saves its noise (the
    probabilities' and the relative table's also their dropped copies, every layer)."""
    model, spec = deberta
    trained = copy.deepcopy(model).train()
    for module in trained.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.1
    with checkpointing(trained, recompute == "full"):
        got, want = saved_pair(trained, spec, Workload(2, 64, 4), _hidden, "eager", recompute,
                               dropout=True)
    assert within(got, want, 0.10), (got, want)


@pytest.mark.parametrize("change,word", [({"pooler": True}, "heads"),
                                         ({"norm_placement": "pre"}, "post-norm")])
def test_what_is_not_measured_is_refused_by_name(deberta: tuple[tf.PreTrainedModel, Spec],
                                                 change: dict[str, object], word: str) -> None:
    _, spec = deberta
    with pytest.raises(BadInputError, match=word):
        saved_activations(spec.model_copy(update=change), Workload(2, 64, 4), "eager")
    with pytest.raises(BadInputError, match="LoRA"):
        build_memory_plan(spec, MemoryOptions(train=True, lora_rank=8))
