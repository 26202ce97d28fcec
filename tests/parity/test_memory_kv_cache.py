"""The KV cache tfcli plans against the K and V tensors transformers' cache holds after one
forward, to the byte, on the families of tests/parity/memory_families.py with a kv_cache size:
DeepSeek's latent (MLA's normed latent and rotated RoPE key per layer) and Falcon's three
query_key_value layouts."""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.parity.memory_cases import Models, fused, ids, models_fixture
from tests.parity.memory_families import Family, cases
from tfcli.analysis.memory.plan import MemoryOptions, build_memory_plan

built = models_fixture()


@pytest.mark.parametrize("family", cases(lambda f: [()] if f.kv_cache else []))
def test_kv_cache_is_what_transformers_caches(torch: ModuleType, built: Models,
                                              family: Family) -> None:
    assert family.kv_cache is not None
    batch, seq_len = family.kv_cache
    run = built[family]
    model = run.model("sdpa").eval()
    with torch.no_grad():
        cache = model(input_ids=ids(batch, seq_len), use_cache=True).past_key_values
    want = sum(t.nbytes for layer in cache.layers for t in (layer.keys, layer.values))
    plan = build_memory_plan(run.spec, MemoryOptions(
        batch=batch, seq_len=seq_len, dtype="float32", attention="sdpa",
        fused=tuple(sorted(fused(model)))))
    assert plan.part("KV cache") == want
