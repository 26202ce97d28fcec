"""tfcli memory against what torch really holds, on small random GPT-J, Phi, StableLM and OLMo 2
models (tfcli/analysis/memory/rope_layouts.py): partial rotary through separate q/k projections
(GPT-J interleaved, Phi and StableLM half-split), StableLM's sequential layer, OLMo 2's
whole-projection q/k norms, float32 RoPE and post-sublayer norms. The inference peak (live
tensor storages) within 15%, the bytes autograd saves within 10%, eager and sdpa, with gradient
checkpointing, in float32 and bfloat16; one size in CI, (2, 64) (measured 0.994-1.005 here and
at (1, 256), by hand also with OLMo 2 without GQA, a parallel StableLM and Phi with GQA).
Without rope_layouts: StableLM's sdpa peak 0.83, OLMo 2's 1.10 (sdpa) and 0.86 (bfloat16),
OLMo 2's bfloat16 saved bytes 0.88."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
import transformers as tf

from tests.parity.memory_cases import (VOCAB, checkpointing, lm_loss, peak_pair, random_models,
                                       saved_pair, within)
from tfcli.analysis.memory.activations import Workload
from tfcli.spec.model import Spec

SMALL = {"num_hidden_layers": 2, "vocab_size": VOCAB, "max_position_embeddings": 512,
         "bos_token_id": 0, "eos_token_id": 0}
MODELS: dict[str, Callable[[], tf.PreTrainedModel]] = {
    "gptj": lambda: tf.GPTJForCausalLM(tf.GPTJConfig(  # interleaved RoPE on 8 of 16 dims
        n_embd=64, n_head=4, n_layer=2, vocab_size=VOCAB, n_positions=512, rotary_dim=8,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)),
    "phi": lambda: tf.PhiForCausalLM(tf.PhiConfig(  # half of each head rotated, parallel
        hidden_size=64, num_attention_heads=4, intermediate_size=128, resid_pdrop=0.0,
        embd_pdrop=0.0, attention_dropout=0.0, **SMALL)),
    "stablelm": lambda: tf.StableLmForCausalLM(tf.StableLmConfig(  # a quarter, GQA, sequential
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
        use_qkv_bias=True, hidden_dropout=0.0, attention_dropout=0.0, **SMALL)),
    "olmo2": lambda: tf.Olmo2ForCausalLM(tf.Olmo2Config(  # q/k norms, norms after sublayers
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
        pad_token_id=0, **SMALL)),
}
ATTENTIONS = ("eager", "sdpa")
BATCH, SEQ_LEN = 2, 64
family = random_models(MODELS, "family")


def _as(model: tf.PreTrainedModel, attention: str) -> tf.PreTrainedModel:
    model.set_attn_implementation(attention)
    assert model.config._attn_implementation == attention  # none of these stays eager
    return model


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_inference_peak(family: tuple[tf.PreTrainedModel, Spec], attention: str) -> None:
    model, spec = family
    for dtype, itemsize in ((torch.float32, 4), (torch.bfloat16, 2)):
        run = _as(copy.deepcopy(model).to(dtype) if itemsize < 4 else model, attention).eval()
        got, want = peak_pair(run, spec, Workload(BATCH, SEQ_LEN, itemsize), attention,
                              use_cache=False)
        assert within(got, want, 0.15), (dtype, got, want)


@pytest.mark.parametrize("attention", ATTENTIONS)
@pytest.mark.parametrize("recompute", ["none", "full"])
def test_saved_activations(family: tuple[tf.PreTrainedModel, Spec], attention: str,
                           recompute: str) -> None:
    model, spec = family
    model = _as(model, attention).train()
    with checkpointing(model, recompute == "full"):
        got, want = saved_pair(model, spec, Workload(BATCH, SEQ_LEN, 4), lm_loss, attention,
                               recompute)
        assert within(got, want, 0.10), (got, want)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_saved_activations_in_bfloat16(family: tuple[tf.PreTrainedModel, Spec],
                                       attention: str) -> None:
    """OLMo 2's RMS norms save float32 normed values; GPT-J's eager q and k float32 copies."""
    model, spec = family
    half = _as(copy.deepcopy(model).to(torch.bfloat16), attention).train()
    got, want = saved_pair(half, spec, Workload(BATCH, SEQ_LEN, 2), lm_loss, attention)
    assert within(got, want, 0.10), (got, want)
