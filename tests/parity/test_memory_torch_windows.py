"""tfcli memory against what torch holds for the sliding-window and soft-capped decoders
(tfcli/analysis/memory/window.py): Mistral with a window shorter than the sequence, Gemma 2
(local / global layers, sandwich norms, attention and final logit soft-capping; transformers has
no sdpa for it, so sdpa is planned, and here measured, as eager), Gemma 3 text (five local layers
to one global, two RoPE bases, per-head q/k norms) and Qwen3 dense (per-head q/k norms, no
window). The inference peak within 15% and the saved bytes within 10% as in test_memory_torch.py
(measured 0.996-1.000); one size per check: the window (32) shorter than the sequence at both."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import transformers as tf

from tests.parity.memory_cases import (VOCAB, checkpointing, ids, lm_loss, peak_pair,
                                       random_model, saved_pair, within)
from tests.parity.test_memory_torch import _with_lora
from tests.parity.torch_memory import saved_bytes
from tfcli.analysis.memory.activations import Workload, inference_peak
from tfcli.analysis.memory.plan import MemoryOptions, build_memory_plan
from tfcli.analysis.memory.saved import saved_activations
from tfcli.analysis.memory.saved_lora import lora_saved_activations
from tfcli.spec.model import Spec

BASE = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
            intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=512)
GEMMA = dict(head_dim=16, sliding_window=32, query_pre_attn_scalar=16)
MODELS: dict[str, Callable[[], tf.PreTrainedModel]] = {
    "mistral": lambda: tf.MistralForCausalLM(tf.MistralConfig(**BASE, sliding_window=32)),
    "gemma2": lambda: tf.Gemma2ForCausalLM(tf.Gemma2Config(**BASE, **GEMMA)),  # softcaps 50, 30
    "gemma3": lambda: tf.Gemma3ForCausalLM(tf.Gemma3TextConfig(  # 5 local : 1 global
        **(BASE | {"num_hidden_layers": 6}), **GEMMA)),
    "qwen3": lambda: tf.Qwen3ForCausalLM(tf.Qwen3Config(**BASE, head_dim=16)),
}


# Gemma 2's sdpa is its eager (test_gemma2_sdpa_planned_as_eager): measured once, as eager
ATTENTIONS = [(n, a) for n in MODELS for a in ("eager", "sdpa") if (n, a) != ("gemma2", "sdpa")]
TRAINING = [(n, a, "none") for n, a in ATTENTIONS] + [
    (n, "eager" if n == "gemma2" else "sdpa", "full") for n in MODELS]
HALF = [("gemma2", "eager"), ("gemma3", "eager"), ("gemma3", "sdpa"), ("mistral", "sdpa")]


BUILT: dict[str, tuple[str, tf.PreTrainedModel, Spec]] = {}


@pytest.fixture(scope="module")
def family(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> tuple[str, tf.PreTrainedModel, Spec]:
    """(name, the random model, its spec), built once per module: pytest sets a fixture up
    again for each parametrize list naming it (indirect), so the models are kept here."""
    name = request.param
    if name not in BUILT:
        BUILT[name] = name, *random_model(MODELS[name], tmp_path_factory.mktemp(name))
    return BUILT[name]


def _run_as(model: tf.PreTrainedModel, attention: str) -> None:
    """Gemma 2 has no sdpa in transformers (set_attn_implementation('sdpa') raises): eager."""
    if model.config.model_type != "gemma2":
        model.set_attn_implementation(attention)
    assert model.config._attn_implementation == ("eager" if model.config.model_type == "gemma2"
                                                 else attention)


@pytest.mark.parametrize("family,attention", ATTENTIONS, indirect=["family"])
def test_inference_peak(family: tuple[str, tf.PreTrainedModel, Spec], attention: str) -> None:
    """(1, 256): the masked sdpa layers' attention (the float mask copy, K and V repeated) is
    the peak, eager's two masks are held beside the scores."""
    _, model, spec = family
    _run_as(model, attention)
    model.eval()
    got, want = peak_pair(model, spec, Workload(1, 256, 4), attention, use_cache=False)
    assert within(got, want, 0.15), (got, want)


@pytest.mark.parametrize("family,attention,recompute", TRAINING, indirect=["family"])
def test_saved_activations(family: tuple[str, tf.PreTrainedModel, Spec], attention: str,
                           recompute: str) -> None:
    _, model, spec = family
    _run_as(model, attention)
    model.train()
    with checkpointing(model, recompute == "full"):
        got, want = saved_pair(model, spec, Workload(2, 64, 4), lm_loss, attention, recompute)
        assert within(got, want, 0.10), (got, want)


@pytest.mark.parametrize("family,attention", HALF, indirect=["family"])
def test_saved_activations_in_bfloat16(family: tuple[str, tf.PreTrainedModel, Spec],
                                       attention: str) -> None:
    """Gemma's (1 + weight) RMSNorms keep their normed values in float32 (0.81-0.89 without);
    Mistral's sdpa mask copies are bfloat16."""
    _, model, spec = family
    half = copy.deepcopy(model).to(torch.bfloat16)
    _run_as(half, attention)
    half.train()
    got, want = saved_pair(half, spec, Workload(2, 64, 2), lm_loss, attention)
    assert within(got, want, 0.10), (got, want)


@pytest.mark.parametrize("family", ["gemma2"], indirect=True)
def test_gemma2_sdpa_planned_as_eager(family: tuple[str, tf.PreTrainedModel, Spec]) -> None:
    _, _, spec = family
    plan = build_memory_plan(spec, MemoryOptions(batch=1, seq_len=256, attention="sdpa"))
    assert any("Gemma 2" in note for note in plan.notes)
    work = Workload(1, 256, 4)
    assert inference_peak(spec, work, "sdpa") == inference_peak(spec, work, "eager")
    assert saved_activations(spec, work, "sdpa") == saved_activations(spec, work, "eager")


def test_lora_saved_activations_with_a_window(tmp_path: Path) -> None:
    """LoRA on q, v (Mistral's modules are Llama's): the masked sdpa layers' float mask copies
    and repeated K / V (0.87 without them)."""
    model, spec = random_model(MODELS["mistral"], tmp_path)
    _with_lora("llama", model, ("q", "v"))
    model.set_attn_implementation("sdpa")
    model.train()
    tokens = ids(2, 64)
    want = saved_bytes(model, lm_loss(model, tokens), tokens)
    got = lora_saved_activations(spec, Workload(2, 64, 4), "sdpa", ("q", "v"), 8).total
    assert within(got, want, 0.10), (got, want)
