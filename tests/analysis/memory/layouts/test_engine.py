"""The engine layout's inference peak (tfcli/analysis/memory/layouts/engine.py) against the peak
tracemalloc measures in tfcli's own engine (NumPy reports its allocations to tracemalloc): the
largest live set of one forward pass, the logits included, the weights (allocated before) left
out. DeBERTa's disentangled attention too: the relative positions, each term's (B, H, T, R)
product and gathered copy beside the (B, H, T, T) bias, on one worker."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import tfcli.engine.ffn as engine_ffn
import tfcli.engine.parallel as engine_parallel
from tests.engine.engine_specs import make_spec
from tfcli.analysis.memory.activations import Workload, inference_peak
from tfcli.core.errors import BadInputError
from tfcli.engine.init import init_weights
from tfcli.engine.model import forward
from tfcli.sources import load_spec
from tfcli.spec.model import Spec

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
    assert inference_peak(spec, Workload(1, 1024, 4, 2)).phase == "logits in head"


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


def test_unmodelled_variants_are_refused_by_name() -> None:
    for variant, word in (("moe", "mixture-of-experts"), ("t5", "encoder-decoder"),
                          ("relative_decoder", "relative")):
        with pytest.raises(BadInputError, match=word):
            inference_peak(make_spec(variant), Workload(1, 8, 4))


DEBERTA_VARIANTS = {
    # engine_specs' DeBERTa-v2-like spec: both terms, own projections, 8 log buckets
    "v2": {},
    # deberta-v3's layout: both terms through the query / key projections, 32 log buckets
    "v3": {"position_buckets": 32, "max_relative_positions": None, "share_att_key": True},
    # one term, plain clipped offsets over 2 x 128 rows, the table not normed
    "c2p": {"disentangled_attention": ["c2p"], "position_buckets": None,
            "max_relative_positions": 128, "relative_embedding_norm": False},
}


@pytest.mark.parametrize("variant", list(DEBERTA_VARIANTS))
@pytest.mark.parametrize("batch,seq_len", [(2, 512), (4, 256)])
def test_disentangled_attention_peak(one_worker: None, variant: str, batch: int,
                                     seq_len: int) -> None:
    spec = make_spec("deberta", max_seq_len=1024, d_model=64, d_ff=256, vocab_size=300,
                     **DEBERTA_VARIANTS[variant])
    assert_within(spec, batch, seq_len, 1)


def test_the_position_scores_are_the_peak_at_long_sequences() -> None:
    spec = make_spec("deberta", max_seq_len=1024, d_model=64, d_ff=256, vocab_size=300)
    peak = inference_peak(spec, Workload(2, 512, 4), "engine")
    assert peak.phase.startswith("position scores")
    names = {name for name, _ in peak.phases}
    assert {"pos key proj in encoder.1.attn", "attention scores in encoder.1.attn"} <= names


# bundled architectures at a reduced width (2 layers, d_model 256, vocab 8000): each one's own
# head (a logits bias, a soft-cap, a masked-LM transform), parallel residuals, partial rotary
REDUCED = {
    "gemma-2-9b": dict(d_model=256, n_heads=4, n_kv_heads=2, d_head=64, d_ff=512),
    "gpt-j-6b": dict(d_model=256, n_heads=4, d_ff=1024, rotary_dim=16),
    "phi-2": dict(d_model=256, n_heads=4, d_ff=1024, rotary_dim=16),
    "modernbert-base": dict(d_model=256, n_heads=4, d_ff=512),
    "falcon-7b": dict(d_model=256, n_heads=4, d_ff=1024),
    "olmo-2-7b": dict(d_model=256, n_heads=4, n_kv_heads=4, d_ff=512),
}


@pytest.mark.parametrize("name", list(REDUCED))
def test_bundled_architectures_at_a_reduced_width(one_worker: None, name: str) -> None:
    spec = load_spec(name).with_layers(2).replace(vocab_size=8000, **REDUCED[name])
    assert_within(spec, 1, 512, 1)
