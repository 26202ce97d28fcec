"""The engine's DeBERTa live set (tfcli/analysis/memory/deberta.py) against tracemalloc's peak
over one forward pass of tfcli's NumPy engine, as test_activations.py checks the other
families: the relative positions, each term's (B, H, T, R) product and gathered copy beside
the (B, H, T, T) bias, on one worker."""

from __future__ import annotations

import pytest

from tests.analysis.memory.test_activations import assert_within, one_worker  # noqa: F401 (fixture)
from tests.engine.engine_specs import make_spec
from tfcli.analysis.memory.activations import Workload, inference_peak

VARIANTS = {
    # engine_specs' DeBERTa-v2-like spec: both terms, own projections, 8 log buckets
    "v2": {},
    # deberta-v3's layout: both terms through the query / key projections, 32 log buckets
    "v3": {"position_buckets": 32, "max_relative_positions": None, "share_att_key": True},
    # one term, plain clipped offsets over 2 x 128 rows, the table not normed
    "c2p": {"disentangled_attention": ["c2p"], "position_buckets": None,
            "max_relative_positions": 128, "relative_embedding_norm": False},
}


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("batch,seq_len", [(2, 512), (4, 256)])
def test_disentangled_attention_peak(one_worker: None, variant: str, batch: int,  # noqa: F811
                                     seq_len: int) -> None:
    spec = make_spec("deberta", max_seq_len=1024, d_model=64, d_ff=256, vocab_size=300,
                     **VARIANTS[variant])
    assert_within(spec, batch, seq_len, 1)


def test_the_position_scores_are_the_peak_at_long_sequences() -> None:
    spec = make_spec("deberta", max_seq_len=1024, d_model=64, d_ff=256, vocab_size=300)
    peak = inference_peak(spec, Workload(2, 512, 4), "engine")
    assert peak.phase == "position scores"
    assert {"relative positions", "attention scores"} <= {name for name, _ in peak.phases}
