"""tfcli memory against what torch really holds, on small random transformers models of the
GPT-2, Llama (GQA), Gemma (MQA, gated tanh GELU), Qwen2, Mixtral (MoE), Qwen2-MoE (shared
expert), Qwen3-MoE (q/k norms), Phi-3 and GPT-NeoX (fused projections), BERT and BART
(encoder-decoder) families: the inference peak (live tensor storages, tracked op by op:
torch CPU has no allocator statistics) within 15%, the bytes autograd saves for backward
(saved_tensors_hooks, each storage once) within 10% for eager and sdpa attention and with
gradient checkpointing, and the optimizer / gradient figures to the byte."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import transformers as tf

from tests.parity.memory_cases import (SIZES, VOCAB, Run, bfloat16_copy, checkpointing, lm_loss,
                                       peak_pair, random_model, saved_pair, saved_spec, within)
from tests.parity.memory_cases import ids as _ids  # other test files import these from here
from tests.parity.torch_memory import LiveStorages, saved_bytes, storage_key
from tfcli.analysis.memory.activations import FUSED_MODULES, Workload, inference_peak
from tfcli.analysis.memory.plan import (MemoryOptions, build_memory_plan, optimizer_bytes,
                                        step_scratch_bytes)
from tfcli.analysis.memory.saved import saved_activations
from tfcli.analysis.memory.saved_lora import lora_saved_activations
from tfcli.spec.model import Spec

MODELS: dict[str, Callable[[], tf.PreTrainedModel]] = {
    "gpt2": lambda: tf.GPT2LMHeadModel(tf.GPT2Config(
        n_embd=64, n_head=4, n_layer=2, vocab_size=VOCAB, n_positions=512, resid_pdrop=0.0,
        embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)),
    "llama": lambda: tf.LlamaForCausalLM(tf.LlamaConfig(
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
        intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=512)),
    "gemma": lambda: tf.GemmaForCausalLM(tf.GemmaConfig(  # MQA, gated gelu_pytorch_tanh
        hidden_size=64, num_attention_heads=4, num_key_value_heads=1, num_hidden_layers=2,
        intermediate_size=128, vocab_size=VOCAB, head_dim=16, max_position_embeddings=512)),
    "qwen2": lambda: tf.Qwen2ForCausalLM(tf.Qwen2Config(  # Q/K/V biases
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
        intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=512)),
    "mixtral": lambda: tf.MixtralForCausalLM(tf.MixtralConfig(  # top-2 of 4 experts
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
        intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=512,
        num_local_experts=4, num_experts_per_tok=2)),
    "qwen2_moe": lambda: tf.Qwen2MoeForCausalLM(tf.Qwen2MoeConfig(  # + a gated shared expert
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
        intermediate_size=128, moe_intermediate_size=64, shared_expert_intermediate_size=96,
        vocab_size=VOCAB, max_position_embeddings=512, num_experts=4, num_experts_per_tok=2)),
    "qwen3_moe": lambda: tf.Qwen3MoeForCausalLM(tf.Qwen3MoeConfig(  # per-head q/k norms
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
        intermediate_size=128, moe_intermediate_size=64, vocab_size=VOCAB, head_dim=16,
        max_position_embeddings=512, num_experts=4, num_experts_per_tok=2)),
    "phi3": lambda: tf.Phi3ForCausalLM(tf.Phi3Config(  # fused qkv_proj and gate_up_proj
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
        intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=512, pad_token_id=0,
        bos_token_id=0, eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0)),
    "gpt_neox": lambda: tf.GPTNeoXForCausalLM(tf.GPTNeoXConfig(  # fused query_key_value,
        hidden_size=64, num_attention_heads=4, num_hidden_layers=2,  # partial RoPE, parallel
        intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=512,  # residual
        hidden_dropout=0.0, attention_dropout=0.0, bos_token_id=0, eos_token_id=0)),
    "bert": lambda: tf.BertModel(tf.BertConfig(
        hidden_size=64, num_attention_heads=4, num_hidden_layers=2, intermediate_size=128,
        vocab_size=VOCAB, max_position_embeddings=512, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0)),
    "bart": lambda: tf.BartForConditionalGeneration(tf.BartConfig(  # encoder-decoder
        d_model=64, encoder_attention_heads=4, decoder_attention_heads=4, encoder_layers=2,
        decoder_layers=2, encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=VOCAB,
        max_position_embeddings=512, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
        forced_eos_token_id=None)),
}


@pytest.fixture(scope="module", params=list(MODELS))
def family(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> tuple[str, tf.PreTrainedModel, Spec]:
    """(name, the random model, the spec tfcli reads from its saved config.json)."""
    return request.param, *random_model(MODELS[request.param],
                                        tmp_path_factory.mktemp(request.param))


def _fused(model: tf.PreTrainedModel) -> frozenset[str]:
    """The projections this model's modules fuse (Phi-3 q|k|v and gate|up, GPT-NeoX q|k|v)."""
    return FUSED_MODULES.get(model.config.model_type, frozenset())


def _forward_args(name: str, ids: torch.Tensor) -> dict[str, object]:
    """Inference without a KV cache: BERT has none; BART decodes targets as long as `ids`."""
    return {"bert": {}, "bart": {"decoder_input_ids": ids, "use_cache": False}}.get(
        name, {"use_cache": False})


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_inference_peak(family: tuple[str, tf.PreTrainedModel, Spec], attention: str) -> None:
    name, model, spec = family
    model.set_attn_implementation(attention)
    model.eval()
    for batch, seq_len in SIZES:
        ids = _ids(batch, seq_len)
        got, want = peak_pair(model, spec, Workload(batch, seq_len, 4), attention, _fused(model),
                              tokens=ids, **_forward_args(name, ids))
        assert within(got, want, 0.15), (batch, seq_len, got, want)


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_inference_peak_in_bfloat16(family: tuple[str, tf.PreTrainedModel, Spec],
                                    attention: str) -> None:
    """16-bit tensors, but Llama-style eager attention upcasts its scores for the softmax."""
    name, model, spec = family
    half = bfloat16_copy(model, attention).eval()
    ids = _ids(1, 256)
    got, want = peak_pair(half, spec, Workload(1, 256, 2), attention, _fused(model), tokens=ids,
                          **_forward_args(name, ids))
    assert within(got, want, 0.15), (got, want)


def _training_run(name: str, model: tf.PreTrainedModel, ids: torch.Tensor) -> Callable[[], object]:
    if name == "bert":
        return lambda: model(input_ids=ids).pooler_output
    return lm_loss(model, ids)


def _run(name: str) -> Run:
    """_training_run for `name`, in the form memory_cases.saved_pair takes."""
    return lambda model, ids: _training_run(name, model, ids)


@pytest.mark.parametrize("attention,recompute", [("eager", "none"), ("sdpa", "none"),
                                                 ("eager", "full"), ("sdpa", "full")])
def test_saved_activations(family: tuple[str, tf.PreTrainedModel, Spec], attention: str,
                           recompute: str) -> None:
    name, model, spec = family
    model.set_attn_implementation(attention)
    model.train()
    with checkpointing(model, recompute == "full"):
        for batch, seq_len in SIZES:
            got, want = saved_pair(model, spec, Workload(batch, seq_len, 4), _run(name), attention,
                                   recompute, fused=_fused(model))
            assert within(got, want, 0.10), (batch, seq_len, got, want)


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_saved_activations_in_bfloat16(family: tuple[str, tf.PreTrainedModel, Spec],
                                       attention: str) -> None:
    """Mixed precision's activations: 2-byte tensors, but RMSNorm's float32 copies, the float32
    statistics, and (RoPE families, eager) the float32 softmax beside its cast."""
    name, model, spec = family
    half = bfloat16_copy(model, attention).train()
    got, want = saved_pair(half, spec, Workload(2, 64, 2), _run(name), attention,
                           fused=_fused(model))
    assert within(got, want, 0.10), (got, want)


@pytest.mark.parametrize("name,make", [
    ("gpt2", lambda: tf.GPT2LMHeadModel(tf.GPT2Config(
        n_embd=64, n_head=4, n_layer=2, vocab_size=VOCAB, n_positions=512, bos_token_id=0,
        eos_token_id=0))),  # GPT-2's own 0.1 everywhere
    ("bert", lambda: tf.BertModel(tf.BertConfig(
        hidden_size=64, num_attention_heads=4, num_hidden_layers=2, intermediate_size=128,
        vocab_size=VOCAB, max_position_embeddings=512))),  # BERT's own 0.1
])
def test_saved_activations_with_dropout(name: str, make: Callable[[], tf.PreTrainedModel],
                                        tmp_path: Path) -> None:
    """Live dropouts save their noise (and eager attention the dropped probabilities)."""
    model, spec = random_model(make, tmp_path)
    model.set_attn_implementation("eager")
    model.train()
    got, want = saved_pair(model, spec, Workload(2, 64, 4), _run(name), "eager", dropout=True)
    assert within(got, want, 0.10), (got, want)


@pytest.mark.parametrize("ffn", ["relu", "gated-gelu"])  # T5 v1.0; v1.1 / mT5
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_t5_inference_peak(ffn: str, attention: str, tmp_path: Path) -> None:
    """T5's relative position bias held by each stack (and sdpa's masked copies of it); its
    training activations: test_memory_torch_t5.py."""
    model, spec = random_model(lambda: tf.T5ForConditionalGeneration(tf.T5Config(
        d_model=64, d_kv=16, num_heads=4, num_layers=2, num_decoder_layers=2, d_ff=128,
        vocab_size=VOCAB, dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0,
        eos_token_id=1, feed_forward_proj=ffn)), tmp_path)
    model.set_attn_implementation(attention)
    model.eval()
    for batch, seq_len in SIZES:
        ids = _ids(batch, seq_len)
        got, want = peak_pair(model, spec, Workload(batch, seq_len, 4), attention, tokens=ids,
                              decoder_input_ids=ids, use_cache=False)
        assert within(got, want, 0.15), (batch, seq_len, got, want)


@pytest.mark.parametrize("train", [False, True])
def test_plan_takes_the_fused_projections(train: bool, tmp_path: Path) -> None:
    """MemoryOptions.fused reaches both estimates: Phi-3's sdpa figures grow by what its fused
    projections keep alive (measured above)."""
    spec = saved_spec(MODELS["phi3"](), tmp_path)
    fused = FUSED_MODULES["phi3"]

    def activations(fused: frozenset[str]) -> int:
        return build_memory_plan(spec, MemoryOptions(batch=2, seq_len=64, dtype="float32",
                                                     train=train, fused=tuple(sorted(fused)))
                                 ).part("activations")
    work = Workload(2, 64, 4)
    want = saved_activations(spec, work, fused=fused).total if train else \
        inference_peak(spec, work, "sdpa", fused).bytes
    assert activations(fused) == want
    assert activations(frozenset()) < want


class LoRA(torch.nn.Module):
    """A frozen linear plus a trainable rank-r update B(A(x)), as PEFT's lora.Linear (no dropout)."""

    def __init__(self, base: torch.nn.Linear, rank: int) -> None:
        super().__init__()
        self.base = base
        self.A = torch.nn.Linear(base.in_features, rank, bias=False)
        self.B = torch.nn.Linear(rank, base.out_features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.B(self.A(x)) * 2.0


LORA_MODULES = {
    "llama": {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
              "o": "self_attn.o_proj", "gate": "mlp.gate_proj", "up": "mlp.up_proj",
              "down": "mlp.down_proj"},
    "bert": {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "o": "attention.output.dense", "up": "intermediate.dense", "down": "output.dense"},
}


def _with_lora(name: str, model: tf.PreTrainedModel, targets: tuple[str, ...]) -> None:
    for p in model.parameters():
        p.requires_grad_(False)
    blocks = model.model.layers if name == "llama" else model.encoder.layer
    for block in blocks:
        for target in targets:
            *path, leaf = LORA_MODULES[name][target].split(".")
            parent = block
            for part in path:
                parent = getattr(parent, part)
            setattr(parent, leaf, LoRA(getattr(parent, leaf), 8))


@pytest.mark.parametrize("name", ["llama", "bert"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("every", [False, True])
def test_lora_saved_activations(name: str, attention: str, every: bool, tmp_path: Path) -> None:
    """Only the adapters train: a frozen linear saves nothing, RMS norm no normed values."""
    model, spec = random_model(MODELS[name], tmp_path)
    targets = tuple(LORA_MODULES[name]) if every else ("q", "v")
    _with_lora(name, model, targets)
    model.set_attn_implementation(attention)
    model.train()
    ids = _ids(2, 64)
    want = saved_bytes(model, _training_run(name, model, ids), ids)
    got = lora_saved_activations(spec, Workload(2, 64, 4), attention, targets, 8).total
    assert within(got, want, 0.10), (got, want)


def _state_bytes(optimizer: torch.optim.Optimizer) -> int:
    return sum(v.nbytes for state in optimizer.state.values() for v in state.values()
               if isinstance(v, torch.Tensor))


@pytest.mark.parametrize("optimizer", ["adamw", "adam", "sgd"])
def test_optimizer_and_gradient_bytes_are_exact(family: tuple[str, tf.PreTrainedModel, Spec],
                                                optimizer: str) -> None:
    name, model, spec = family
    params = list(model.parameters())
    make = {"adamw": lambda: torch.optim.AdamW(params, lr=1e-3, foreach=True),
            "adam": lambda: torch.optim.Adam(params, lr=1e-3, foreach=True),
            "sgd": lambda: torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=True)}[optimizer]
    opt = make()
    model.train()
    ids = _ids(1, 16)
    out = _training_run(name, model, ids)()
    out.sum().backward() if out.dim() else out.backward()  # type: ignore[union-attr]
    opt.step()
    plan = build_memory_plan(spec, MemoryOptions(batch=1, seq_len=16, dtype="float32", train=True,
                                                 optimizer=optimizer, param_tensors=len(params)))
    assert plan.part("optimizer state") == _state_bytes(opt)
    assert plan.part("gradients") == sum(p.grad.nbytes for p in params if p.grad is not None)
    assert plan.part("weights") == sum(p.nbytes for p in params)
    assert plan.part("master weights") == 0  # float32 training: the weights are the master
    assert optimizer_bytes(optimizer, sum(p.numel() for p in params), len(params)) == _state_bytes(opt)
    # the next step's own temporaries (foreach, as on CUDA): every storage but its new ones known
    out = _training_run(name, model, ids)()
    out.sum().backward() if out.dim() else out.backward()  # type: ignore[union-attr]
    held = [*params, *(p.grad for p in params if p.grad is not None),
            *(v for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor))]
    mode = LiveStorages({storage_key(t) for t in held})
    with mode:
        opt.step()
    assert mode.peak == step_scratch_bytes(optimizer, sum(p.numel() for p in params))
    opt.zero_grad(set_to_none=True)
