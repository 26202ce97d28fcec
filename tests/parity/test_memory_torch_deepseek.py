"""tfcli memory against what torch really holds on small random DeepSeek-V3 and DeepSeek-V2
models: multi-head latent attention (with and without the q_lora_rank bottleneck) and the
DeepSeek MoE layer (a dense first block, then routed experts under a sigmoid group-limited
(V3) or softmax group-limited (V2) router, then an ungated shared expert). The inference peak
(live tensor storages) within 15%, the bytes autograd saves within 10%, eager and sdpa, with
and without gradient checkpointing, float32 and bfloat16; the KV cache to the byte.

"v3-flash": q/k heads as wide as the value heads (qk_nope 8 + rope 8 = v 16), the one MLA
shape torch's CPU sdpa runs in its flash kernel; the others (dq 24, dv 16, as every released
DeepSeek) take sdpa's math path, which materialises the scores."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
import transformers as tf

from tests.parity.memory_cases import (SIZES, VOCAB, bfloat16_copy, checkpointing, lm_loss,
                                       peak_pair, random_models, saved_pair, within)
from tests.parity.memory_cases import ids as _ids
from tfcli.analysis.memory.activations import Workload, inference_peak
from tfcli.analysis.memory.plan import MemoryOptions, build_memory_plan
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

SMALL = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4,
         "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": VOCAB,
         "max_position_embeddings": 512, "kv_lora_rank": 32, "qk_rope_head_dim": 8,
         "qk_nope_head_dim": 16, "v_head_dim": 16, "n_routed_experts": 4,
         "num_experts_per_tok": 2, "n_shared_experts": 1, "moe_intermediate_size": 32,
         "first_k_dense_replace": 1}  # block 0 dense, block 1 MoE
MODELS: dict[str, Callable[[], tf.PreTrainedModel]] = {
    "v3": lambda: tf.DeepseekV3ForCausalLM(tf.DeepseekV3Config(
        **SMALL, q_lora_rank=32, n_group=2, topk_group=1)),
    "v2-lite": lambda: tf.DeepseekV2ForCausalLM(tf.DeepseekV2Config(  # no query bottleneck
        **SMALL, q_lora_rank=None, topk_method="group_limited_greedy", n_group=2,
        topk_group=1)),
    "v3-flash": lambda: tf.DeepseekV3ForCausalLM(tf.DeepseekV3Config(
        **(SMALL | {"qk_nope_head_dim": 8}), q_lora_rank=32, n_group=2, topk_group=1)),
}
deepseek = random_models(MODELS, "deepseek")


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_inference_peak(deepseek: tuple[tf.PreTrainedModel, Spec], attention: str) -> None:
    """float32 at both sizes, bfloat16 at (1, 256) (eager's float32 softmax, the sdpa math
    path's float32 copies, the router's float32 weights on the experts' outputs)."""
    model, spec = deepseek
    half = copy.deepcopy(model).to(torch.bfloat16)
    for m, itemsize, sizes in ((model, 4, SIZES), (half, 2, [(1, 256)])):
        m.set_attn_implementation(attention)
        m.eval()
        for batch, seq_len in sizes:
            got, want = peak_pair(m, spec, Workload(batch, seq_len, itemsize), attention,
                                  use_cache=False)
            assert within(got, want, 0.15), (itemsize, batch, seq_len, got, want)


@pytest.mark.parametrize("attention,recompute", [("eager", "none"), ("sdpa", "none"),
                                                 ("eager", "full"), ("sdpa", "full")])
def test_saved_activations(deepseek: tuple[tf.PreTrainedModel, Spec], attention: str,
                           recompute: str) -> None:
    model, spec = deepseek
    model.set_attn_implementation(attention)
    model.train()
    with checkpointing(model, recompute == "full"):
        for batch, seq_len in SIZES:
            got, want = saved_pair(model, spec, Workload(batch, seq_len, 4), lm_loss, attention,
                                   recompute)
            assert within(got, want, 0.10), (batch, seq_len, got, want)


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_saved_activations_in_bfloat16(deepseek: tuple[tf.PreTrainedModel, Spec],
                                       attention: str) -> None:
    """RMSNorm's float32 copies of the latents, the router's float32 input and weight copies,
    eager's float32 softmax beside its cast, the sdpa math path's float32 q, k, v."""
    model, spec = deepseek
    half = bfloat16_copy(model, attention).train()
    got, want = saved_pair(half, spec, Workload(2, 64, 2), lm_loss, attention)
    assert within(got, want, 0.10), (got, want)


def test_kv_cache_is_the_latent(deepseek: tuple[tf.PreTrainedModel, Spec]) -> None:
    """transformers (5.x) caches MLA's normed latent (B, 1, S, r) and rotated RoPE key
    (B, 1, S, dr) per layer, as tfcli's engine does: the plan's KV cache to the byte."""
    model, spec = deepseek
    model.eval()
    with torch.no_grad():
        cache = model(input_ids=_ids(2, 64), use_cache=True).past_key_values
    want = sum(t.nbytes for layer in cache.layers for t in (layer.keys, layer.values))
    plan = build_memory_plan(spec, MemoryOptions(batch=2, seq_len=64, dtype="float32",
                                                 attention="sdpa"))
    assert plan.part("KV cache") == want


def test_the_engine_live_set_of_latent_attention_is_refused_by_name(
        deepseek: tuple[tf.PreTrainedModel, Spec]) -> None:
    _, spec = deepseek
    with pytest.raises(BadInputError, match="latent-attention"):
        inference_peak(spec, Workload(1, 64, 4), "engine")
