"""tfcli memory against what torch really holds for T5's relative position bias: the bytes
autograd saves (saved_tensors_hooks, each storage once) on small random
T5ForConditionalGeneration (relu and gated-gelu), T5EncoderModel and UMT5 models, eager and
sdpa, with gradient checkpointing, in bfloat16 and with T5's dropout, within 10%; the
inference peak of T5EncoderModel within 15% (T5ForConditionalGeneration's is checked in
test_memory_torch.py)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import transformers as tf

from tests.parity.memory_cases import (SIZES, VOCAB, checkpointing, hidden_loss, ids, lm_loss,
                                       peak_pair, random_model, within)
from tests.parity.torch_memory import saved_bytes
from tfcli.analysis.memory.activations import Workload, inference_peak
from tfcli.analysis.memory.saved import saved_activations
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

T5_SIZES = dict(d_model=64, d_kv=16, num_heads=4, num_layers=2, num_decoder_layers=2, d_ff=128,
                vocab_size=VOCAB, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
MODELS: dict[str, Callable[[], tf.PreTrainedModel]] = {
    "t5": lambda: tf.T5ForConditionalGeneration(tf.T5Config(  # T5 v1.0
        **T5_SIZES, dropout_rate=0.0, feed_forward_proj="relu")),
    "t5_gated": lambda: tf.T5ForConditionalGeneration(tf.T5Config(  # v1.1 / mT5: gelu_new
        **T5_SIZES, dropout_rate=0.0, feed_forward_proj="gated-gelu")),
    "t5_encoder": lambda: tf.T5EncoderModel(tf.T5Config(
        **T5_SIZES, dropout_rate=0.0, feed_forward_proj="gated-gelu")),
    "umt5": lambda: tf.UMT5ForConditionalGeneration(tf.UMT5Config(  # a bias table per block
        **T5_SIZES, dropout_rate=0.0, feed_forward_proj="gated-gelu")),
}
Family = tuple[str, tf.PreTrainedModel, Spec]


def _saved(name: str, make: Callable[[], tf.PreTrainedModel], path: Path) -> Family:
    return name, *random_model(make, path)


@pytest.fixture(scope="module", params=list(MODELS))
def family(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Family:
    """(name, the random model, the spec tfcli reads from its saved config.json)."""
    return _saved(request.param, MODELS[request.param], tmp_path_factory.mktemp(request.param))


def _run(name: str, model: tf.PreTrainedModel, ids: torch.Tensor) -> Callable[[], object]:
    """A training forward: the LM loss, or for the encoder a loss that reads every hidden
    state (its output is saved, as a head's input would be)."""
    return (hidden_loss if name == "t5_encoder" else lm_loss)(model, ids)


def _ratio(family: Family, work: Workload, attention: str, recompute: str = "none",
           dropout: bool = False) -> float:
    name, model, spec = family
    tokens = ids(work.batch, work.seq_len)
    want = saved_bytes(model, _run(name, model, tokens), tokens)
    return saved_activations(spec, work, attention, recompute, dropout=dropout).total / want


@pytest.mark.parametrize("attention,recompute", [("eager", "none"), ("sdpa", "none"),
                                                 ("eager", "full"), ("sdpa", "full")])
def test_saved_activations(family: Family, attention: str, recompute: str) -> None:
    """Measured to the byte (the loss's 4-byte scalar aside), float32, both sizes."""
    _, model, _ = family
    model.set_attn_implementation(attention)
    model.train()
    with checkpointing(model, recompute == "full"):
        for batch, seq_len in SIZES:
            ratio = _ratio(family, Workload(batch, seq_len, 4), attention, recompute)
            assert abs(ratio - 1) <= 0.10, (batch, seq_len, ratio)


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_saved_activations_in_bfloat16(family: Family, attention: str) -> None:
    """T5LayerNorm keeps its 16-bit input beside the float32 copy; sdpa's math path saves
    float32; the loss's log-softmax stays 16-bit."""
    name, model, spec = family
    half = copy.deepcopy(model).to(torch.bfloat16)
    half.set_attn_implementation(attention)
    half.train()
    assert abs(_ratio((name, half, spec), Workload(2, 64, 2), attention) - 1) <= 0.10


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_saved_activations_with_dropout(attention: str, tmp_path: Path) -> None:
    """T5's own dropout (0.1): after the FFN's activation and each stack's final norm too, and
    on CPU sdpa's cross-attention then runs the math path."""
    family = _saved("t5", lambda: tf.T5ForConditionalGeneration(tf.T5Config(
        **T5_SIZES, dropout_rate=0.1, feed_forward_proj="gated-gelu")), tmp_path)
    family[1].set_attn_implementation(attention)
    family[1].train()
    assert abs(_ratio(family, Workload(2, 64, 4), attention, dropout=True) - 1) <= 0.10


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> Family:
    return _saved("t5_encoder", MODELS["t5_encoder"], tmp_path_factory.mktemp("encoder"))


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_encoder_inference_peak(encoder: Family, attention: str) -> None:
    """T5EncoderModel: the bias its stack holds and compute_bias's int64 bucket temporaries
    (the peak at (1, 256))."""
    _, model, spec = encoder
    model.set_attn_implementation(attention)
    model.eval()
    for batch, seq_len in SIZES:
        got, want = peak_pair(model, spec, Workload(batch, seq_len, 4), attention)
        assert within(got, want, 0.15), (batch, seq_len, got, want)


def test_refusals(encoder: Family, tmp_path: Path) -> None:
    """By name: the engine's live set with the bias, a decoder-only model with it, and UMT5's
    inference (its per-block tables)."""
    spec = encoder[2]
    with pytest.raises(BadInputError, match="engine's live set with a relative position bias"):
        inference_peak(spec, Workload(1, 16, 4), "engine")
    decoder = spec.model_copy(update={"family": "decoder"})
    with pytest.raises(BadInputError, match="decoder-only model with a relative position bias"):
        saved_activations(decoder, Workload(1, 16, 4))
    umt5 = _saved("umt5", MODELS["umt5"], tmp_path)[2]
    with pytest.raises(BadInputError, match="UMT5"):
        inference_peak(umt5, Workload(1, 16, 4), "sdpa")
