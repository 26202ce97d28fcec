"""KVCache: allocation equals the analytic formula; update writes in place and returns the
filled prefix."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine.engine_specs import make_spec
from tfcli.spec.counts import kv_cache_bytes
from tfcli.engine.cache import KVCache
from tfcli.core.errors import BadInputError
from tfcli.sources import load_spec


@pytest.mark.parametrize("spec", [
    make_spec("gpt"), make_spec("llama_gqa"), make_spec("llama_gqa", n_kv_heads=1),
    make_spec("t5"), make_spec("vaswani"), load_spec("t5-small"), load_spec("gpt2"),
    load_spec("llama-3-8b").with_layers(2),
], ids=lambda s: s.name)
@pytest.mark.parametrize("batch, max_len, source_len", [(1, 16, 0), (3, 40, 11)])
def test_nbytes_equals_the_analytic_formula(spec, batch, max_len, source_len):
    cache = KVCache(spec, batch, max_len, np.float32, source_len=source_len)
    expected = kv_cache_bytes(spec, context=max_len, batch=batch, dtype="float32",
                              source_len=source_len)
    assert cache.nbytes == expected


def test_gqa_caches_only_the_kv_heads():
    spec = make_spec("llama_gqa", n_kv_heads=1)
    cache = KVCache(spec, 2, 10)
    assert cache.k[0].shape == (2, 1, 10, spec.head_dim)


def test_update_writes_in_place_and_returns_the_filled_prefix():
    spec = make_spec("llama_gqa")
    cache = KVCache(spec, 2, 10, np.float64)
    buffer = cache.k[1]
    first = np.ones((2, 2, 3, spec.head_dim))
    k, v = cache.update(1, 0, first, 2 * first)
    assert k.shape == (2, 2, 3, spec.head_dim) and np.shares_memory(k, buffer)
    k, v = cache.update(1, 3, 5 * first[:, :, :1], 6 * first[:, :, :1])
    assert k.shape[2] == 4 and (k[:, :, :3] == 1).all() and (k[:, :, 3] == 5).all()
    assert (v[:, :, 3] == 6).all() and cache.k[1] is buffer
    with pytest.raises(BadInputError):
        cache.update(1, 9, first, first)


def test_cross_kv_is_stored_once():
    spec = make_spec("t5")
    cache = KVCache(spec, 2, 5, np.float32, source_len=7)
    assert cache.cross(0) is None
    k = np.ones((2, spec.kv_heads, 7, spec.head_dim), np.float32)
    cache.set_cross(0, k, k)
    assert cache.cross(0)[0] is cache.cross_k[0] and cache.cross(1) is None
    cache.reset()
    assert cache.cross(0) is None and cache.length == 0
