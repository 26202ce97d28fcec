"""tfcli memory against what torch really holds, on small random FalconForCausalLM models: its
own attention module (tfcli/analysis/memory/layouts/falcon.py, `--fused falcon_qkv`), in the
three query_key_value layouts: Falcon-7B's multi-query with parallel attention, Falcon-40B / 180B's
new_decoder_architecture (grouped, 2 key/value heads, two norms), and the old per-head layout
with sequential blocks. The inference peak (live tensor storages) within 15%, the bytes
autograd saves within 10%, eager and sdpa, with gradient checkpointing, in float32 and
bfloat16 (measured 1.000 inference; 0.996-1.002 saved), and once through `tfcli memory DIR`.

FalconForCausalLM cannot switch attention after it is built (set_attn_implementation only
warns), so each attention gets its own model from the same config."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
import transformers as tf

from tests.cli.guarded import run_in_memory
from tests.parity.memory_cases import (SIZES, VOCAB, checkpointing, ids, lm_loss, peak_pair,
                                       saved_pair, saved_spec, within)
from tests.parity.test_memory_torch import _fused
from tests.parity.torch_memory import forward_peak
from tfcli.analysis.memory.activations import FUSED_MODULES, Workload, check_fused, inference_peak
from tfcli.analysis.memory.plan import MemoryOptions, build_memory_plan
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

LAYOUTS: dict[str, dict[str, object]] = {
    "falcon-7b": {"multi_query": True, "parallel_attn": True},
    "falcon-40b": {"new_decoder_architecture": True, "num_kv_heads": 2},
    "per-head sequential": {"multi_query": False, "parallel_attn": False},
}
ATTENTIONS = ("eager", "sdpa")
Falcon = tuple[Spec, dict[str, tf.PreTrainedModel]]


def _model(layout: str, attention: str) -> tf.PreTrainedModel:
    torch.manual_seed(0)
    return tf.FalconForCausalLM(tf.FalconConfig(
        hidden_size=64, num_attention_heads=4, num_hidden_layers=2, vocab_size=VOCAB,
        max_position_embeddings=512, alibi=False, hidden_dropout=0.0, attention_dropout=0.0,
        bos_token_id=0, eos_token_id=0, attn_implementation=attention, **LAYOUTS[layout]))


@pytest.fixture(scope="module", params=list(LAYOUTS))
def falcon(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Falcon:
    """(the spec tfcli reads from the saved config.json, the model per attention)."""
    models = {attention: _model(request.param, attention) for attention in ATTENTIONS}
    return saved_spec(models["sdpa"], tmp_path_factory.mktemp("falcon")), models


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_inference_peak(falcon: Falcon, attention: str) -> None:
    spec, models = falcon
    model = models[attention].eval()
    for batch, seq_len in SIZES:
        got, want = peak_pair(model, spec, Workload(batch, seq_len, 4), attention, _fused(model),
                              use_cache=False)
        assert within(got, want, 0.15), (batch, seq_len, got, want)
    half = copy.deepcopy(model).to(torch.bfloat16)  # multi-query sdpa: float32 math path
    got, want = peak_pair(half, spec, Workload(1, 256, 2), attention, _fused(model),
                          use_cache=False)
    assert within(got, want, 0.15), (got, want)


@pytest.mark.parametrize("attention", ATTENTIONS)
@pytest.mark.parametrize("recompute", ["none", "full"])
def test_saved_activations(falcon: Falcon, attention: str, recompute: str) -> None:
    spec, models = falcon
    model = models[attention].train()
    with checkpointing(model, recompute == "full"):
        for batch, seq_len in SIZES:
            got, want = saved_pair(model, spec, Workload(batch, seq_len, 4), lm_loss, attention,
                                   recompute, fused=_fused(model))
            assert within(got, want, 0.10), (batch, seq_len, got, want)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_saved_activations_in_bfloat16(falcon: Falcon, attention: str) -> None:
    spec, models = falcon
    half = copy.deepcopy(models[attention]).to(torch.bfloat16).train()
    got, want = saved_pair(half, spec, Workload(2, 64, 2), lm_loss, attention,
                           fused=_fused(half))
    assert within(got, want, 0.10), (got, want)


def _cache_bytes(model: tf.PreTrainedModel, batch: int, seq_len: int) -> int:
    """Bytes of the K and V tensors transformers' cache holds after one forward."""
    with torch.no_grad():
        cache = model(ids(batch, seq_len), use_cache=True).past_key_values
    return sum(t.numel() * t.element_size() for layer in cache.layers
               for t in (layer.keys, layer.values))


def test_kv_cache_is_what_transformers_caches(falcon: Falcon) -> None:
    """Falcon-40B's layout caches K/V repeated to every query head (4 here, for 2 key/value
    heads); Falcon-7B's its one head, the per-head layout all: the plan's KV cache to the byte."""
    spec, models = falcon
    model = models["sdpa"].eval()
    options = MemoryOptions(batch=2, seq_len=16, dtype="float32", fused=_fused(model))
    plan = build_memory_plan(spec, options)
    kv = next(part for part in plan.parts if part.name == "KV cache")
    assert kv.bytes == _cache_bytes(model, 2, 16)


def test_memory_cli_plans_a_falcon_directory(tmp_path: Path) -> None:
    """`tfcli memory DIR` reads model_type falcon from config.json and plans its own modules:
    the measured peak, where the generic layers' figure was 0.28 of it (sdpa, (1, 256))."""
    model = _model("falcon-7b", "sdpa").eval()
    model.save_pretrained(tmp_path)
    code, out, err = run_in_memory("memory", str(tmp_path), "--batch", "1", "--seq-len", "256",
                                   "--dtype", "float32", "--attention", "sdpa", "-f", "json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["options"]["fused"] == ["falcon_qkv"]
    got = {p["name"]: p["bytes"] for p in plan["parts"]}["activations"]
    want = forward_peak(model, ids(1, 256), use_cache=False)
    assert within(got, want, 0.15), (got, want)


def test_falcon_qkv_is_one_layout_of_a_falcon_shaped_spec(falcon: Falcon) -> None:
    spec, _ = falcon
    assert FUSED_MODULES["falcon"] == {"falcon_qkv"}
    with pytest.raises(BadInputError, match="two layouts"):
        check_fused(frozenset({"qkv", "falcon_qkv"}))
    gated = spec.model_copy(update={"activation": "swiglu"})
    with pytest.raises(BadInputError, match="not Falcon-shaped"):
        inference_peak(gated, Workload(1, 16, 4), "sdpa", frozenset({"falcon_qkv"}))
