"""The inference peak estimate against the peak tracemalloc measures in tfcli's own engine
(NumPy reports its allocations to tracemalloc): the largest live set of one forward pass,
the logits included, the weights (allocated before) left out."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import tfcli.engine.ffn as engine_ffn
import tfcli.engine.parallel as engine_parallel
from tests.engine.engine_specs import make_spec
from tfcli.analysis.memory.activations import Workload, inference_peak
from tfcli.engine.init import init_weights
from tfcli.engine.model import forward
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec
from tfcli.spec.load import load_spec

TOLERANCE = 0.10  # acceptance: within 10% of the measured peak


def measured_peak(spec: Spec, batch: int, seq_len: int) -> int:
    """tracemalloc's peak over one forward pass, above what was allocated before it."""
    weights = init_weights(spec, 0, np.float32)
    tokens = np.random.default_rng(0).integers(0, spec.vocab_size, (batch, seq_len))
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = forward(spec, weights, tokens)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    del out
    return peak


def assert_within(spec: Spec, batch: int, seq_len: int, workers: int) -> None:
    got = inference_peak(spec, Workload(batch, seq_len, 4, workers), "engine")
    want = measured_peak(spec, batch, seq_len)
    assert abs(got.bytes - want) <= TOLERANCE * want, (got.phase, got.bytes, want)


@pytest.fixture
def one_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine on one thread: how many query blocks / FFN slices overlap on a pool of
    several depends on scheduling (other jobs share the cores), so the tight check runs on one;
    with W workers the estimate is the bound of W blocks in flight."""
    monkeypatch.setattr(engine_parallel, "WORKERS", 1)
    monkeypatch.setattr(engine_ffn, "WORKERS", 1)


def test_gpt2_at_1024_tokens_logits_dominate() -> None:
    # (1, 1024, 50257) float32 logits are 196 MiB of the 202 MiB peak: counted once, beside the
    # final hidden state and the embedding output the forward still holds
    spec = load_spec("gpt2").with_layers(2)
    assert_within(spec, 1, 1024, engine_parallel.WORKERS)
    assert inference_peak(spec, Workload(1, 1024, 4, 2)).phase == "logits"


@pytest.mark.parametrize("batch,seq_len", [(1, 512), (4, 128)])
def test_bert_base_ffn_peak(one_worker: None, batch: int, seq_len: int) -> None:
    assert_within(load_spec("bert-base").with_layers(2), batch, seq_len, 1)


@pytest.mark.parametrize("variant", ["llama_gqa", "gpt", "bert", "mqa_sinusoidal", "sandwich",
                                     "parallel_two_norms", "geglu_post"])
@pytest.mark.parametrize("batch,seq_len", [(2, 512), (4, 256)])
def test_small_specs_at_several_sizes(one_worker: None, variant: str, batch: int,
                                      seq_len: int) -> None:
    spec = make_spec(variant, max_seq_len=1024, d_model=64, d_ff=256, vocab_size=300)
    assert_within(spec, batch, seq_len, 1)


def test_phases_follow_the_op_order() -> None:
    peak = inference_peak(make_spec("llama_gqa"), Workload(1, 16, 4), "eager")
    assert [name for name, _ in peak.phases][:3] == ["attention scores", "attention output", "FFN"]
    assert peak.bytes == max(b for _, b in peak.phases)


def test_unmodelled_variants_are_refused_by_name() -> None:
    for variant, word in (("moe", "mixture-of-experts"), ("t5", "encoder-decoder"),
                          ("relative_decoder", "relative")):
        with pytest.raises(BadInputError, match=word):
            inference_peak(make_spec(variant), Workload(1, 8, 4))
