"""Engine + checkpoint-loader parity against Hugging Face transformers (never skipped).

Each case builds a small random model with transformers, saves it with save_pretrained
(safetensors), loads it back through tfcli's own loader (spec_from_config_dir + load_weights),
runs the same token ids through `tfcli.engine.model.forward` and compares the outputs.

Tolerances: float32 rtol = atol = 1e-4 for every family, against transformers as shipped.
float64 rtol = 1e-10, atol = 1e-12 (torch `.double()`; tfcli dtype float64; the same
float32-saved weights, widened exactly). transformers deliberately keeps four computations in
float32 even in a float64 model -- RMSNorm (LLaMA, Mixtral, T5), the RoPE cos/sin tables,
Mixtral's router softmax and the softmax of LLaMA/Mixtral eager attention -- which alone limits
agreement to ~1e-7. The float64 test therefore swaps the first three for the same formulas
evaluated in float64 (`float64_reference`) and runs attention through transformers' "sdpa"
implementation (float64 throughout), so it checks the formulas, not float32 rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from tests.parity.saved_models import assert_counts_match
from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.engine.model import ModelInput, forward
from tfcli.engine.layout import fused_projection

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

VOCAB, BATCH, LENGTH = 128, 2, 12
F32 = {"rtol": 1e-4, "atol": 1e-4}
F64 = {"rtol": 1e-10, "atol": 1e-12}

# Small but non-trivial: d_model 64, 2 layers (T5 v1.1 variant: 3 decoder layers).
SMALL_DECODER = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
                 "intermediate_size": 128, "vocab_size": VOCAB, "max_position_embeddings": 64}


def _gpt2() -> PreTrainedModel:
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=64, n_head=4,
                                      n_layer=2))


def _bert() -> PreTrainedModel:
    from transformers import BertConfig, BertModel
    return BertModel(BertConfig(vocab_size=VOCAB, hidden_size=64, num_attention_heads=4,
                                num_hidden_layers=2, intermediate_size=128,
                                max_position_embeddings=32, type_vocab_size=2))


def _llama_gqa() -> PreTrainedModel:
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(**SMALL_DECODER, num_key_value_heads=2, rope_theta=500.0))


def _llama_variant() -> PreTrainedModel:
    """Biases on attention and MLP, tied head, head_dim (8) != d_model / n_heads (16)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(**SMALL_DECODER, num_key_value_heads=1, head_dim=8,
                                        attention_bias=True, mlp_bias=True,
                                        tie_word_embeddings=True))


def _mixtral() -> PreTrainedModel:
    from transformers import MixtralConfig, MixtralForCausalLM
    return MixtralForCausalLM(MixtralConfig(**SMALL_DECODER, num_key_value_heads=2,
                                            num_local_experts=4, num_experts_per_tok=2))


def _mistral_window() -> PreTrainedModel:
    """Mistral's sliding window, 5 of the 12 tokens: later tokens lose their early context."""
    from transformers import MistralConfig, MistralForCausalLM
    return MistralForCausalLM(MistralConfig(**SMALL_DECODER, num_key_value_heads=2,
                                            sliding_window=5))


def _mixtral_window() -> PreTrainedModel:
    from transformers import MixtralConfig, MixtralForCausalLM
    return MixtralForCausalLM(MixtralConfig(**SMALL_DECODER, num_key_value_heads=2,
                                            num_local_experts=4, num_experts_per_tok=2,
                                            sliding_window=3))


def _t5() -> PreTrainedModel:
    # max_distance 20 so the 12-token source reaches T5's logarithmic buckets.
    from transformers import T5Config, T5ForConditionalGeneration
    return T5ForConditionalGeneration(T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128,
                                               num_layers=2, num_heads=4,
                                               relative_attention_max_distance=20))


def _t5_v1_1() -> PreTrainedModel:
    """T5 v1.1 recipe: gated FFN (SiLU: exact in both), no output rescale, 2 + 3 layers."""
    from transformers import T5Config, T5ForConditionalGeneration
    return T5ForConditionalGeneration(T5Config(vocab_size=VOCAB, d_model=64, d_kv=8, d_ff=96,
                                               num_layers=2, num_decoder_layers=3, num_heads=4,
                                               feed_forward_proj="gated-silu",
                                               tie_word_embeddings=False))


def _flan_t5() -> PreTrainedModel:
    """FLAN-T5 / T5 v1.1 as released: gated-gelu, which HF runs with the tanh GELU (geglu_tanh)."""
    from transformers import T5Config, T5ForConditionalGeneration
    return T5ForConditionalGeneration(T5Config(vocab_size=VOCAB, d_model=64, d_kv=8, d_ff=96,
                                               num_layers=2, num_decoder_layers=3, num_heads=4,
                                               feed_forward_proj="gated-gelu",
                                               tie_word_embeddings=False))


CASES: dict[str, Callable[[], PreTrainedModel]] = {
    "gpt2": _gpt2, "bert": _bert, "llama-gqa": _llama_gqa, "llama-bias-tied": _llama_variant,
    "mixtral": _mixtral, "mistral-window": _mistral_window, "mixtral-window": _mixtral_window,
    "t5": _t5, "t5-v1_1": _t5_v1_1, "flan-t5": _flan_t5,
}


# --- float64 versions of the pieces transformers runs in float32 -----------------------------


def _rms_norm_f64(self: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    import torch
    variance = x.pow(2).mean(-1, keepdim=True)
    return self.weight * (x * torch.rsqrt(variance + self.variance_epsilon))


def _rope_f64(self: torch.nn.Module, x: torch.Tensor, position_ids: torch.Tensor) -> tuple:
    import torch
    dim = 2 * self.inv_freq.shape[0]
    theta = self.config.rope_parameters["rope_theta"]
    inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = position_ids[..., None].double() * inv_freq  # (B, T, dim/2)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().to(x.dtype), angles.sin().to(x.dtype)


def _router_f64(self: torch.nn.Module, x: torch.Tensor) -> tuple:
    import torch
    logits = torch.nn.functional.linear(x.reshape(-1, self.hidden_dim), self.weight)
    top, index = torch.topk(logits.softmax(dim=-1), self.top_k, dim=-1)
    return logits, top / top.sum(dim=-1, keepdim=True), index


@pytest.fixture
def float64_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers.models.llama import modeling_llama as llama
    from transformers.models.mistral import modeling_mistral as mistral
    from transformers.models.mixtral import modeling_mixtral as mixtral
    from transformers.models.t5 import modeling_t5 as t5
    for norm in (llama.LlamaRMSNorm, mistral.MistralRMSNorm, mixtral.MixtralRMSNorm,
                 t5.T5LayerNorm):
        monkeypatch.setattr(norm, "forward", _rms_norm_f64)
    for rope in (llama.LlamaRotaryEmbedding, mistral.MistralRotaryEmbedding,
                 mixtral.MixtralRotaryEmbedding):
        monkeypatch.setattr(rope, "forward", _rope_f64)
    monkeypatch.setattr(mixtral.MixtralTopKRouter, "forward", _router_f64)


@dataclass
class Saved:
    name: str
    model: PreTrainedModel
    path: Path


@pytest.fixture(scope="module", params=list(CASES))
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Saved:
    """Each case's model, built once per module and saved as safetensors."""
    import torch
    torch.manual_seed(0)
    model = CASES[request.param]()
    model.set_attn_implementation("eager")
    if model.config.model_type == "mixtral":
        model.set_experts_implementation("eager")  # grouped_mm has no float64 kernel
    model.eval()
    path = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(path, safe_serialization=True)
    return Saved(request.param, model, path)


def _inputs(model: PreTrainedModel) -> dict[str, np.ndarray]:
    """Token ids; for the encoders, a padding mask (the second sequence ends in three pads)."""
    rng = np.random.default_rng(1)
    inputs = {"tokens": rng.integers(1, VOCAB, size=(BATCH, LENGTH))}
    mask = np.ones((BATCH, LENGTH), dtype=np.int64)
    mask[1, -3:] = 0
    if model.config.model_type == "bert":
        segments = (np.arange(LENGTH) >= 6).astype(np.int64)  # two segments of 6
        inputs |= {"attention_mask": mask, "token_types": np.stack([segments] * BATCH)}
    if model.config.model_type == "t5":
        inputs |= {"attention_mask": mask, "decoder_tokens": rng.integers(0, VOCAB, size=(BATCH, 7))}
    return inputs


def _hf_outputs(model: PreTrainedModel, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import torch
    t = {k: torch.from_numpy(v) for k, v in inputs.items()}
    with torch.no_grad():
        if model.config.model_type == "bert":
            out = model(input_ids=t["tokens"], attention_mask=t["attention_mask"],
                        token_type_ids=t["token_types"])
            return {"hidden": out.last_hidden_state.numpy(), "pooled": out.pooler_output.numpy()}
        if model.config.model_type == "t5":
            out = model(input_ids=t["tokens"], attention_mask=t["attention_mask"],
                        decoder_input_ids=t["decoder_tokens"])
            return {"logits": out.logits.numpy(),
                    "encoder_hidden": out.encoder_last_hidden_state.numpy()}
        return {"logits": model(input_ids=t["tokens"]).logits.numpy()}


def _tfcli_outputs(path: Path, dtype: type, inputs: dict[str, np.ndarray]) -> dict[str, Any]:
    spec = spec_from_config_dir(path)
    weights = load_weights(path, spec, dtype=dtype)
    out = forward(spec, weights, ModelInput(
        inputs["tokens"], attention_mask=inputs.get("attention_mask"),
        token_types=inputs.get("token_types"), decoder_tokens=inputs.get("decoder_tokens")))
    return {"hidden": out.hidden, "pooled": out.pooled, "logits": out.logits,
            "encoder_hidden": out.encoder_hidden}


def _compare(saved: Saved, dtype: type, tolerance: dict[str, float]) -> None:
    inputs = _inputs(saved.model)
    expected = _hf_outputs(saved.model, inputs)
    actual = _tfcli_outputs(saved.path, dtype, inputs)
    for key, want in expected.items():
        assert actual[key].dtype == np.dtype(dtype), key
        np.testing.assert_allclose(actual[key], want, err_msg=key, **tolerance)


def test_float32_outputs_match_transformers(saved: Saved) -> None:
    _compare(saved, np.float32, F32)


def test_float64_outputs_match_transformers(saved: Saved, float64_reference: None) -> None:
    saved.model.double().set_attn_implementation("sdpa")
    try:
        _compare(saved, np.float64, F64)
    finally:
        saved.model.float().set_attn_implementation("eager")


def test_parameter_count_matches_transformers(saved: Saved) -> None:
    assert_counts_match(saved.model, saved.path)


def test_loaded_checkpoints_are_laid_out_for_decoding(saved: Saved) -> None:
    """Every family's self-attention Q/K/V load fused, down projections Fortran-ordered."""
    spec = spec_from_config_dir(saved.path)
    for stack in load_weights(saved.path, spec).stacks:
        for block in stack.blocks:
            assert fused_projection(block.attn, ("wq", "wk", "wv"), ("bq", "bk", "bv")) is not None
            experts = getattr(block.ffn, "experts", [block.ffn])
            assert all(e.w_down.flags.f_contiguous for e in experts)
            assert block.attn.wo.flags.f_contiguous



@pytest.mark.parametrize("build", [_mistral_window, _mixtral_window])
def test_sliding_window_is_what_makes_the_windowed_cases_match(build: Callable[[], PreTrainedModel],
                                                               tmp_path: Path) -> None:
    """Without its window the same checkpoint drifts from transformers at every position past
    the window: the window cases above do not pass by accident (12 tokens, windows 5 and 3)."""
    import torch
    torch.manual_seed(0)
    model = build().eval()
    model.save_pretrained(tmp_path, safe_serialization=True)
    spec = spec_from_config_dir(tmp_path)
    window = spec.sliding_window
    assert window in (3, 5)
    weights = load_weights(tmp_path, spec)
    inputs = _inputs(model)
    want = _hf_outputs(model, inputs)["logits"]
    windowed = forward(spec, weights, inputs["tokens"]).logits
    windowless = forward(spec.replace(sliding_window=None), weights, inputs["tokens"]).logits
    np.testing.assert_allclose(windowed, want, **F32)
    # the first `window` positions see their whole past anyway; every later one must not
    np.testing.assert_allclose(windowless[:, :window], want[:, :window], **F32)
    drift = np.abs(windowless - want).max(axis=-1)[:, window:]  # (B, T - window)
    assert drift.min() > 10 * F32["atol"], drift


def test_sliding_window_over_many_query_blocks_with_padding(tmp_path: Path) -> None:
    """48 tokens (the engine's attention then runs in several query blocks on its thread pool),
    window 5, the second sequence right-padded by 11: real positions equal transformers'."""
    import torch
    from transformers import MistralConfig, MistralForCausalLM
    torch.manual_seed(0)
    model = MistralForCausalLM(MistralConfig(**SMALL_DECODER, num_key_value_heads=2,
                                             sliding_window=5)).eval()
    model.save_pretrained(tmp_path, safe_serialization=True)
    tokens = np.random.default_rng(4).integers(1, VOCAB, size=(2, 48))
    mask = np.ones_like(tokens)
    mask[1, -11:] = 0
    with torch.no_grad():
        want = model(input_ids=torch.from_numpy(tokens),
                     attention_mask=torch.from_numpy(mask)).logits.numpy()
    spec = spec_from_config_dir(tmp_path)
    got = forward(spec, load_weights(tmp_path, spec), ModelInput(tokens, attention_mask=mask)).logits
    real = mask.astype(bool)
    np.testing.assert_allclose(got[real], want[real], **F32)
