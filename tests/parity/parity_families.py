"""The table of decoder families checked against transformers by the table-driven parity
modules (test_parity_logits.py, test_parity_generation.py, test_parity_counts.py): each row a
tiny random model (its builder), the prompts it generates from, and which checks it takes.

Tolerance: float32 rtol = atol = 1e-4 (tests/parity/test_hf_parity.py's F32), on the real
(unpadded) positions only. Family-unique checks stay in a file named for the family
(test_deepseek_parity.py, test_gemma_parity.py, test_qwen_moe_parity.py), which builds its
models from the builders here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.parity.saved_models import save_random

if TYPE_CHECKING:
    from transformers import PreTrainedModel

VOCAB, BATCH, LENGTH, NEW_TOKENS = 96, 2, 12, 10
PROMPTS = ([5, 17, 33, 2, 80], [9, 1, 4])


@dataclass(frozen=True)
class Family:
    """One row: `build` makes the untrained transformers model (save_random seeds it)."""

    name: str
    build: Callable[[], PreTrainedModel]
    prompts: tuple[list[int], ...] = PROMPTS
    # transformers' logits of a left-padded sequence differ from that sequence run alone (Llama
    # 4's temperature counts the padding as positions): tfcli's are checked against it alone
    left_padded_alone: bool = False


def tokens() -> np.ndarray:
    """The (BATCH, LENGTH) ids every row's logits are compared on."""
    return np.random.default_rng(1).integers(1, VOCAB, size=(BATCH, LENGTH))


def right_padded() -> tuple[np.ndarray, None]:
    """(mask, positions): the second sequence right-padded by 4."""
    mask = np.ones((BATCH, LENGTH), dtype=np.int64)
    mask[1, -4:] = 0
    return mask, None


def left_padded() -> tuple[np.ndarray, np.ndarray]:
    """(mask, positions): the second sequence left-padded by 5; positions count real tokens
    only, on both sides."""
    mask = np.ones((BATCH, LENGTH), dtype=np.int64)
    mask[1, :5] = 0
    return mask, np.maximum(np.cumsum(mask, axis=1) - 1, 0)


@dataclass(frozen=True)
class Saved:
    family: Family
    model: PreTrainedModel
    path: Path


def saved_family(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Saved:
    """A module-scoped fixture's body: the row named `request.param`, saved by save_random."""
    family = FAMILIES[request.param]
    path = tmp_path_factory.mktemp(family.name)
    return Saved(family, save_random(family.build, path), path)


# --- DeepSeek-V2 / V3 ------------------------------------------------------------------------
# Every variant is on in some case: queries with and without the q_lora_rank bottleneck, a
# dense first block (first_k_dense_replace 1) or none, V2's greedy and group_limited_greedy
# routing, V3's groups with a nonzero random e_score_correction_bias (zero at init, which would
# test nothing), YaRN with mscale_all_dim at factor 4 (the softmax scale correction and the
# cos/sin attention factor both away from 1), routed_scaling_factor != 1, rope_interleave true
# and false, attention biases, two shared experts.

DEEPSEEK = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4,
         "num_hidden_layers": 2, "intermediate_size": 96, "vocab_size": VOCAB,
         "max_position_embeddings": 64, "moe_intermediate_size": 24, "kv_lora_rank": 16,
         "qk_nope_head_dim": 8, "qk_rope_head_dim": 6, "v_head_dim": 10,
         "first_k_dense_replace": 1}
# factor 4 over 16 positions; mscale != mscale_all_dim: cos/sin scaled by their ratio, and the
# softmax scale by mscale(4, 0.8)^2
YARN = {"rope_type": "yarn", "rope_theta": 1000.0, "factor": 4.0,
        "original_max_position_embeddings": 16, "beta_fast": 32.0, "beta_slow": 1.0,
        "mscale": 1.0, "mscale_all_dim": 0.8}
PLAIN = {"rope_type": "default", "rope_theta": 1000.0}


def deepseek_v2_greedy() -> PreTrainedModel:
    """No query bottleneck, greedy top-k, two shared experts, biases on q_a / kv_a / o."""
    from transformers import DeepseekV2Config, DeepseekV2ForCausalLM
    return DeepseekV2ForCausalLM(DeepseekV2Config(
        **DEEPSEEK, q_lora_rank=None, n_routed_experts=6, num_experts_per_tok=2,
        n_shared_experts=2, topk_method="greedy", routed_scaling_factor=1.5,
        attention_bias=True, rope_parameters=YARN))


def deepseek_v2_grouped() -> PreTrainedModel:
    """The query bottleneck; 3 groups of 2 experts, a token's from its best 2 groups. The
    config's norm_topk_prob and scoring_func say what the V2 router never reads (it neither
    renormalises nor scores by anything but softmax): tfcli must not read them either."""
    from transformers import DeepseekV2Config, DeepseekV2ForCausalLM
    small = DEEPSEEK | {"num_hidden_layers": 3}
    return DeepseekV2ForCausalLM(DeepseekV2Config(
        **small, q_lora_rank=20, n_routed_experts=6, num_experts_per_tok=3, n_shared_experts=1,
        topk_method="group_limited_greedy", n_group=3, topk_group=2, routed_scaling_factor=2.0,
        norm_topk_prob=True, scoring_func="sigmoid", rope_parameters=PLAIN))


def _with_random_bias(model: PreTrainedModel) -> PreTrainedModel:
    """e_score_correction_bias drawn at the scale of the sigmoid scores, so it changes which
    experts are chosen (transformers initialises it to zero)."""
    import torch
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for layer in model.model.layers:
            gate = getattr(layer.mlp, "gate", None)
            if gate is not None:
                bias = gate.e_score_correction_bias
                bias.copy_(torch.randn(bias.shape, generator=generator) * 0.3)
    return model


def deepseek_v3() -> PreTrainedModel:
    """DeepSeek-V3's recipe: bottleneck, 4 groups of 2, best 2 groups, renormalised x 2.5."""
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM
    return _with_random_bias(DeepseekV3ForCausalLM(DeepseekV3Config(
        **DEEPSEEK, q_lora_rank=20, n_routed_experts=8, num_experts_per_tok=3, n_shared_experts=1,
        n_group=4, topk_group=2, norm_topk_prob=True, routed_scaling_factor=2.5,
        rope_interleave=True, rope_parameters=YARN)))


def deepseek_v3_half() -> PreTrainedModel:
    """rotate_half RoPE (rope_interleave false), no bottleneck, every block MoE, not
    renormalised, 2 groups of 3, one chosen."""
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM
    small = DEEPSEEK | {"first_k_dense_replace": 0}
    return _with_random_bias(DeepseekV3ForCausalLM(DeepseekV3Config(
        **small, q_lora_rank=None, n_routed_experts=6, num_experts_per_tok=2,
        n_shared_experts=2, n_group=2, topk_group=1, norm_topk_prob=False,
        routed_scaling_factor=1.5, rope_interleave=False, rope_parameters=YARN)))



# --- Qwen2-MoE / Qwen3-MoE -------------------------------------------------------------------
# Qwen2-MoE (Qwen1.5-MoE: a gated shared expert, routed weights not renormalised) and Qwen3-MoE
# (q/k norms, top-k renormalised). The mixed cases make some blocks dense (decoder_sparse_step
# 2, mlp_only_layers), with a dense width apart from the experts'.

QWEN_MOE = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
         "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": VOCAB,
         "max_position_embeddings": 64, "rope_theta": 1000.0, "moe_intermediate_size": 32,
         "num_experts": 6, "num_experts_per_tok": 2}


def qwen2_moe() -> PreTrainedModel:
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM
    return Qwen2MoeForCausalLM(Qwen2MoeConfig(**QWEN_MOE, shared_expert_intermediate_size=48))


def qwen2_moe_mixed() -> PreTrainedModel:
    """Blocks 1 and 3 sparse by the step, block 3 dense again by mlp_only_layers; top-k
    renormalised, no q/k/v bias."""
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM
    small = QWEN_MOE | {"num_hidden_layers": 4}
    return Qwen2MoeForCausalLM(Qwen2MoeConfig(**small, shared_expert_intermediate_size=40,
                                              decoder_sparse_step=2, mlp_only_layers=[3],
                                              norm_topk_prob=True, qkv_bias=False))


def qwen3_moe() -> PreTrainedModel:
    """head_dim 8 != hidden / heads (16), top-k renormalised as Qwen3-30B-A3B."""
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM
    return Qwen3MoeForCausalLM(Qwen3MoeConfig(**QWEN_MOE, head_dim=8, norm_topk_prob=True))


def qwen3_moe_mixed() -> PreTrainedModel:
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM
    small = QWEN_MOE | {"num_hidden_layers": 3}
    return Qwen3MoeForCausalLM(Qwen3MoeConfig(**small, head_dim=16, mlp_only_layers=[0]))



# --- Gemma 1 / 2 / 3 -------------------------------------------------------------------------
# Every variant the family uses switched on: scaled embeddings, (1 + weight) RMSNorms, GeGLU
# tanh, query_pre_attn_scalar, sandwich norms, soft-capped scores and logits, local / global
# layers with a sliding window shorter than the inputs, Gemma 3's q/k norms, local RoPE base and
# scaled global RoPE. save_random's non-trivial norms matter here: Gemma's zero norm weights
# would hide a missing (1 + w).

WINDOW = 4  # shorter than the 12-token inputs and the prompts plus their new tokens
GEMMA = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
         "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": VOCAB,
         "max_position_embeddings": 64, "pad_token_id": 0}


def gemma() -> PreTrainedModel:
    """Gemma 1 (multi-query as Gemma 2B) with the legacy hidden_act 'gelu' (read as tanh)."""
    from transformers import GemmaConfig, GemmaForCausalLM
    small = GEMMA | {"num_key_value_heads": 1}
    return GemmaForCausalLM(GemmaConfig(**small, hidden_act="gelu", rope_theta=1000.0))


def gemma2() -> PreTrainedModel:
    """Gemma 2: 4 alternating layers, window 4, caps low enough to bite (scores of random
    weights are small), query_pre_attn_scalar unlike head_dim (Gemma 2 27B's shape)."""
    from transformers import Gemma2Config, Gemma2ForCausalLM
    return Gemma2ForCausalLM(Gemma2Config(
        **GEMMA | {"num_hidden_layers": 4}, sliding_window=WINDOW, query_pre_attn_scalar=24,
        attn_logit_softcapping=0.5, final_logit_softcapping=2.0, rope_theta=1000.0))


def gemma3() -> PreTrainedModel:
    """Gemma 3: 5 local : 1 global over 7 layers (the pattern wraps), q/k norms, a local base of
    its own and linear scaling on the global layers (Gemma 3 4B+), a final cap, untied."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig
    return Gemma3ForCausalLM(Gemma3TextConfig(
        **GEMMA | {"num_hidden_layers": 7}, sliding_window=WINDOW, query_pre_attn_scalar=16,
        final_logit_softcapping=3.0, tie_word_embeddings=False,
        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 4.0,
                                            "rope_theta": 5000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 100.0}}))


def gemma3_layer_types() -> PreTrainedModel:
    """Gemma 3 with an explicit layer_types list (newer configs) and attention biases."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig
    types = ["sliding_attention", "full_attention", "sliding_attention"]
    return Gemma3ForCausalLM(Gemma3TextConfig(
        **GEMMA | {"num_hidden_layers": 3}, sliding_window=WINDOW, layer_types=types,
        attention_bias=True))


# --- SmolLM3 ---------------------------------------------------------------------------------
# NoPE layers: every fourth by no_rope_layer_interval (layers 3 and 7 of 8), or an explicit
# no_rope_layers list; GQA, tied embeddings as SmolLM3-3B.

SMOLLM3 = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
           "num_hidden_layers": 8, "intermediate_size": 96, "vocab_size": VOCAB,
           "max_position_embeddings": 64, "pad_token_id": 0, "bos_token_id": 1,
           "eos_token_id": 2, "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0}}


def smollm3() -> PreTrainedModel:
    from transformers import SmolLM3Config, SmolLM3ForCausalLM
    return SmolLM3ForCausalLM(SmolLM3Config(**SMOLLM3))


def smollm3_flags() -> PreTrainedModel:
    """An explicit per-layer list: layers 0 and 2 unrotated, untied."""
    from transformers import SmolLM3Config, SmolLM3ForCausalLM
    small = SMOLLM3 | {"num_hidden_layers": 3}
    return SmolLM3ForCausalLM(SmolLM3Config(**small, no_rope_layers=[0, 1, 0],
                                            tie_word_embeddings=False))


# --- Granite ---------------------------------------------------------------------------------
# Granite-3.x's four multipliers at their published values (embedding 12, residual 0.22,
# logits / 16) but the attention multiplier at 1/head_dim of this head size; GQA, tied.

GRANITE = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
           "num_hidden_layers": 3, "intermediate_size": 96, "vocab_size": VOCAB,
           "max_position_embeddings": 64, "pad_token_id": 0, "bos_token_id": 1,
           "eos_token_id": 2, "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0},
           "embedding_multiplier": 12.0, "residual_multiplier": 0.22,
           "attention_multiplier": 1 / 16, "logits_scaling": 16.0, "tie_word_embeddings": True}


def granite(**changes: object) -> PreTrainedModel:
    from transformers import GraniteConfig, GraniteForCausalLM
    return GraniteForCausalLM(GraniteConfig(**GRANITE | changes))


def granite_biased() -> PreTrainedModel:
    """Untied, with attention and MLP biases."""
    return granite(tie_word_embeddings=False, attention_bias=True, mlp_bias=True)


# GraniteMoE: the same multipliers, every FFN top-2 of 5 SwiGLU experts stored stacked (E, ., .)
GRANITE_MOE = GRANITE | {"intermediate_size": 32, "num_local_experts": 5, "num_experts_per_tok": 2}


def granitemoe(**changes: object) -> PreTrainedModel:
    from transformers import GraniteMoeConfig, GraniteMoeForCausalLM
    model = GraniteMoeForCausalLM(GraniteMoeConfig(**GRANITE_MOE | changes))
    model.set_experts_implementation("eager")  # grouped_mm has no float64 kernel
    return model


def granitemoe_untied() -> PreTrainedModel:
    """Untied, top-1 routing (a softmax over one logit: weight 1), attention biases."""
    return granitemoe(tie_word_embeddings=False, num_experts_per_tok=1, attention_bias=True)


# --- gpt-oss ---------------------------------------------------------------------------------
# Attention sinks, q/k/v/o biases, [sliding, full] layers with a window shorter than the inputs,
# YaRN at factor 4 over a 16-token pretraining context, top-2 of 4 experts behind a biased
# router, biased experts and the clamped SwiGLU at a limit low enough to clip (0.5: random
# weights' activations are small); experts stored stacked, gate and up interleaved.

GPT_OSS = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
           "num_hidden_layers": 3, "intermediate_size": 32, "vocab_size": VOCAB,
           "max_position_embeddings": 64, "num_local_experts": 4, "num_experts_per_tok": 2,
           "sliding_window": WINDOW, "swiglu_limit": 0.5, "pad_token_id": 0, "bos_token_id": 1,
           "eos_token_id": 2, "rope_parameters": {
               "rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0,
               "truncate": False, "original_max_position_embeddings": 16, "rope_theta": 1000.0}}


def gpt_oss(**changes: object) -> PreTrainedModel:
    from transformers import GptOssConfig, GptOssForCausalLM
    model = GptOssForCausalLM(GptOssConfig(**GPT_OSS | changes))
    model.set_experts_implementation("eager")  # grouped_mm has no float64 kernel
    return model


def gpt_oss_full() -> PreTrainedModel:
    """Every layer full attention (layer_types), plain RoPE, tied, top-1, no attention bias."""
    return gpt_oss(layer_types=["full_attention"] * 3, tie_word_embeddings=True,
                   num_experts_per_tok=1, attention_bias=False,
                   rope_parameters={"rope_type": "default", "rope_theta": 1000.0})


# --- OLMoE -----------------------------------------------------------------------------------
# RMSNorm over the whole q and k projections, top-2 of 5 experts: the softmax probabilities as
# they are (OLMoE-1B-7B's norm_topk_prob false), or renormalised, with attention biases.

OLMOE = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
         "num_hidden_layers": 2, "intermediate_size": 32, "vocab_size": VOCAB,
         "max_position_embeddings": 64, "num_experts": 5, "num_experts_per_tok": 2,
         "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
         "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0}}


def olmoe(**changes: object) -> PreTrainedModel:
    from transformers import OlmoeConfig, OlmoeForCausalLM
    model = OlmoeForCausalLM(OlmoeConfig(**OLMOE | changes))
    model.set_experts_implementation("eager")  # grouped_mm has no float64 kernel
    return model


def olmoe_renormalised() -> PreTrainedModel:
    return olmoe(norm_topk_prob=True, attention_bias=True, tie_word_embeddings=True)


# --- StarCoder2 -------------------------------------------------------------------------------
# LayerNorm with biases, a biased GELU (tanh) MLP, GQA, every layer windowed (4 keys, shorter
# than the inputs), tied; and without biases or window, untied.

STARCODER2 = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
              "num_hidden_layers": 2, "intermediate_size": 96, "vocab_size": VOCAB,
              "max_position_embeddings": 64, "sliding_window": WINDOW, "bos_token_id": 1,
              "eos_token_id": 2, "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0}}


def starcoder2(**changes: object) -> PreTrainedModel:
    from transformers import Starcoder2Config, Starcoder2ForCausalLM
    return Starcoder2ForCausalLM(Starcoder2Config(**STARCODER2 | changes))


def starcoder2_plain() -> PreTrainedModel:
    return starcoder2(use_bias=False, sliding_window=None, tie_word_embeddings=False)


# --- Command R / R7B (cohere, cohere2) ----------------------------------------------------------
# One bias-free LayerNorm feeding attention and MLP in parallel, interleaved RoPE, logits times
# logit_scale (0.25, R7B's), tied; cohere with attention biases, or with Command R+'s per-head
# q/k LayerNorms; cohere2 three sliding layers (window 4) to one global layer without RoPE.

COHERE = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
          "num_hidden_layers": 4, "intermediate_size": 96, "vocab_size": VOCAB,
          "max_position_embeddings": 64, "logit_scale": 0.25, "pad_token_id": 0,
          "bos_token_id": 1, "eos_token_id": 2,
          "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0}}


def cohere() -> PreTrainedModel:
    from transformers import CohereConfig, CohereForCausalLM
    return CohereForCausalLM(CohereConfig(**COHERE, attention_bias=True))


def cohere_qk_norm() -> PreTrainedModel:
    """Command R+'s q/k LayerNorms: a (heads, d_head) weight each, one row per head."""
    from transformers import CohereConfig, CohereForCausalLM
    return CohereForCausalLM(CohereConfig(**COHERE, use_qk_norm=True))


def cohere2(**changes: object) -> PreTrainedModel:
    from transformers import Cohere2Config, Cohere2ForCausalLM
    return Cohere2ForCausalLM(Cohere2Config(**COHERE | {"head_dim": 16, "sliding_window": WINDOW}
                                            | changes))


# --- GLM-4 / GLM-4-0414 ------------------------------------------------------------------------
# RoPE on half of each 16-wide head in interleaved pairs, fused gate_up, q/k/v biases (none on
# o), GQA; glm4 adds the post-sublayer norms.

GLM = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
       "num_hidden_layers": 2, "intermediate_size": 96, "vocab_size": VOCAB,
       "max_position_embeddings": 64, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
       "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0,
                           "partial_rotary_factor": 0.5}}


def glm() -> PreTrainedModel:
    from transformers import GlmConfig, GlmForCausalLM
    return GlmForCausalLM(GlmConfig(**GLM))


def glm4() -> PreTrainedModel:
    from transformers import Glm4Config, Glm4ForCausalLM
    return Glm4ForCausalLM(Glm4Config(**GLM, tie_word_embeddings=True))


# --- GLM-4.5 (glm4_moe) -------------------------------------------------------------------------
# GQA with q/k/v biases and per-head q/k norms, RoPE on half of each head (rotate_half's pairs),
# a dense first block, then DeepSeek-V3 routing: 8 experts in 2 groups (the best 1), top-2 of
# the sigmoid scores plus a nonzero correction bias, renormalised, x 2.5, one shared expert.

GLM4_MOE = GLM | {"num_hidden_layers": 3, "moe_intermediate_size": 32, "n_routed_experts": 8,
                  "num_experts_per_tok": 2, "n_group": 2, "topk_group": 1,
                  "n_shared_experts": 1, "first_k_dense_replace": 1,
                  "routed_scaling_factor": 2.5, "attention_bias": True, "use_qk_norm": True}


def glm4_moe(**changes: object) -> PreTrainedModel:
    from transformers import Glm4MoeConfig, Glm4MoeForCausalLM
    model = Glm4MoeForCausalLM(Glm4MoeConfig(**GLM4_MOE | changes))
    model.set_experts_implementation("eager")  # grouped_mm has no float64 kernel
    return _with_random_bias(model)


# --- Seed-OSS, ERNIE 4.5, EXAONE 4.0: LLaMA variants -------------------------------------------
# Seed-OSS: q/k/v biases, an o bias of its own and MLP biases, head_dim apart from d / heads;
# ERNIE 4.5: biases everywhere, RoPE in interleaved pairs, tied; EXAONE 4.0: per-head q/k norms,
# post-sublayer norms, three sliding layers (window 4) to one full one without RoPE, or (full)
# no window and every layer rotated.

DENSE = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
         "num_hidden_layers": 4, "intermediate_size": 96, "vocab_size": VOCAB,
         "max_position_embeddings": 64, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
         "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0}}


def seed_oss() -> PreTrainedModel:
    from transformers import SeedOssConfig, SeedOssForCausalLM
    return SeedOssForCausalLM(SeedOssConfig(**DENSE, attention_out_bias=True, mlp_bias=True,
                                            attention_dropout=0.0, residual_dropout=0.0))


def ernie4_5() -> PreTrainedModel:
    from transformers import Ernie4_5Config, Ernie4_5ForCausalLM
    return Ernie4_5ForCausalLM(Ernie4_5Config(**DENSE | {"head_dim": 16}, use_bias=True))


def exaone4(**changes: object) -> PreTrainedModel:
    from transformers import Exaone4Config, Exaone4ForCausalLM
    return Exaone4ForCausalLM(Exaone4Config(**DENSE | {"head_dim": 16, "sliding_window": WINDOW,
                                                       "sliding_window_pattern": 4} | changes))


def exaone4_full() -> PreTrainedModel:
    return exaone4(sliding_window=None, layer_types=["full_attention"] * 4,
                   tie_word_embeddings=True)


# --- Phi-3.5-MoE (phimoe) -----------------------------------------------------------------------
# Mixtral's experts routed by sparsemixer (jitter 0.1: the relative masks bite on random
# logits), LayerNorms with biases, attention and head biases.

PHIMOE = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
          "num_hidden_layers": 2, "intermediate_size": 32, "vocab_size": VOCAB,
          "max_position_embeddings": 64, "num_local_experts": 6, "num_experts_per_tok": 2,
          "router_jitter_noise": 0.1, "attention_bias": True, "lm_head_bias": True,
          "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
          "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0}}


def phimoe() -> PreTrainedModel:
    from transformers import PhimoeConfig, PhimoeForCausalLM
    model = PhimoeForCausalLM(PhimoeConfig(**PHIMOE))
    model.set_experts_implementation("eager")  # grouped_mm has no float64 kernel
    return model


# --- Qwen2 / Qwen3 sliding windows -------------------------------------------------------------
# use_sliding_window: the layers from max_window_layers on attend within sliding_window (4,
# shorter than the inputs), the first ones to every earlier token.

QWEN_SLIDING = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
                "num_hidden_layers": 3, "intermediate_size": 96, "vocab_size": VOCAB,
                "max_position_embeddings": 64, "use_sliding_window": True,
                "sliding_window": WINDOW, "max_window_layers": 1,
                "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0}}


def qwen2_sliding() -> PreTrainedModel:
    from transformers import Qwen2Config, Qwen2ForCausalLM
    return Qwen2ForCausalLM(Qwen2Config(**QWEN_SLIDING))


def qwen3_sliding() -> PreTrainedModel:
    """Every layer sliding (max_window_layers 0), head_dim apart from hidden / heads."""
    from transformers import Qwen3Config, Qwen3ForCausalLM
    return Qwen3ForCausalLM(Qwen3Config(**QWEN_SLIDING | {"max_window_layers": 0,
                                                          "head_dim": 8}))


# --- Llama 4 text (llama4_text) ---------------------------------------------------------------
# Scout's recipe at a tiny size: chunked attention (chunks of 4, shorter than the inputs) on
# the rotated layers, NoPE every second layer with the attention temperature biting from the
# second position on (floor_scale 2), weightless L2 q/k norms, a shared expert beside top-1
# sigmoid experts that scale their inputs. The second row: Maverick's kind (MoE on listed
# layers, NoPE by flags, top-2, no q/k norm, no temperature, tied).

LLAMA4 = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
          "head_dim": 16, "num_hidden_layers": 4, "intermediate_size": 32,
          "intermediate_size_mlp": 96, "vocab_size": VOCAB, "max_position_embeddings": 64,
          "num_local_experts": 4, "num_experts_per_tok": 1, "no_rope_layer_interval": 2,
          "attention_chunk_size": WINDOW, "floor_scale": 2, "attn_scale": 0.5,
          "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
          "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0}}


def llama4() -> PreTrainedModel:
    """MoE on every layer (interleave_moe_layer_step 1), NoPE on layers 1 and 3."""
    from transformers import Llama4ForCausalLM, Llama4TextConfig
    return Llama4ForCausalLM(Llama4TextConfig(**LLAMA4))


def llama4_listed() -> PreTrainedModel:
    from transformers import Llama4ForCausalLM, Llama4TextConfig
    return Llama4ForCausalLM(Llama4TextConfig(**LLAMA4 | {
        "moe_layers": [0, 2], "no_rope_layers": [1, 0, 1, 1], "num_experts_per_tok": 2,
        "use_qk_norm": False, "attn_temperature_tuning": False, "tie_word_embeddings": True}))


# --- ERNIE 4.5 MoE (ernie4_5_moe) ------------------------------------------------------------
# Experts chosen on softmax + a correction bias (drawn at the scale of the probabilities: zero at
# init would test nothing) and renormalised, shared experts run as one MLP, the first block
# dense (moe_layer_start_index 1); the second row: every other block from 0 to 2 (block 1 alone
# MoE) and no shared expert.

ERNIE_MOE = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
             "num_hidden_layers": 3, "intermediate_size": 96, "vocab_size": VOCAB,
             "max_position_embeddings": 64, "moe_intermediate_size": 32, "moe_num_experts": 6,
             "moe_k": 2, "moe_num_shared_experts": 2, "pad_token_id": 0, "bos_token_id": 1,
             "eos_token_id": 2, "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0}}


def _ernie_bias(model: PreTrainedModel) -> PreTrainedModel:
    import torch
    generator = torch.Generator().manual_seed(7)
    model.set_experts_implementation("eager")  # grouped_mm has no float64 kernel
    with torch.no_grad():
        for layer in model.model.layers:
            statics = getattr(getattr(layer.mlp, "gate", None), "moe_statics", None)
            if statics is not None:
                bias = statics.e_score_correction_bias
                bias.copy_(torch.rand(bias.shape, generator=generator) * 0.3)
    return model


def ernie4_5_moe() -> PreTrainedModel:
    from transformers import Ernie4_5_MoeConfig, Ernie4_5_MoeForCausalLM
    return _ernie_bias(Ernie4_5_MoeForCausalLM(Ernie4_5_MoeConfig(**ERNIE_MOE)))


def ernie4_5_moe_interval() -> PreTrainedModel:
    from transformers import Ernie4_5_MoeConfig, Ernie4_5_MoeForCausalLM
    return _ernie_bias(Ernie4_5_MoeForCausalLM(Ernie4_5_MoeConfig(**ERNIE_MOE | {
        "num_hidden_layers": 4, "moe_layer_interval": 2, "moe_layer_start_index": 0,
        "moe_layer_end_index": 2, "moe_num_shared_experts": 0, "tie_word_embeddings": False})))


# --- Hunyuan dense (hunyuan_v1_dense) ----------------------------------------------------------
# Per-head q/k RMSNorms on the rotated queries and keys, biases on q, k, v, o, and the published
# RoPE scaling - `dynamic` with an alpha, NTK-alpha's fixed base - at alpha 1000.

HUNYUAN = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
           "num_hidden_layers": 2, "intermediate_size": 96, "vocab_size": VOCAB,
           "max_position_embeddings": 64, "attention_bias": True, "pad_token_id": 0,
           "bos_token_id": 1, "eos_token_id": 2,
           "rope_parameters": {"rope_type": "dynamic", "alpha": 1000.0, "factor": 1.0,
                               "rope_theta": 10000.0}}


def hunyuan() -> PreTrainedModel:
    from transformers import HunYuanDenseV1Config, HunYuanDenseV1ForCausalLM
    return HunYuanDenseV1ForCausalLM(HunYuanDenseV1Config(**HUNYUAN))


GEMMA_PROMPTS = ([5, 17, 33, 2, 80, 41], [9, 1, 4])
ROWS = [
    Family("deepseek-v2-greedy", deepseek_v2_greedy),
    Family("deepseek-v2-grouped", deepseek_v2_grouped),
    Family("deepseek-v3", deepseek_v3),
    Family("deepseek-v3-half", deepseek_v3_half),
    Family("qwen2-moe", qwen2_moe),
    Family("qwen2-moe-mixed", qwen2_moe_mixed),
    Family("qwen3-moe", qwen3_moe),
    Family("qwen3-moe-mixed", qwen3_moe_mixed),
    Family("gemma", gemma, GEMMA_PROMPTS),
    Family("gemma2", gemma2, GEMMA_PROMPTS),
    Family("gemma3", gemma3, GEMMA_PROMPTS),
    Family("gemma3-layer-types", gemma3_layer_types, GEMMA_PROMPTS),
    Family("smollm3", smollm3),
    Family("smollm3-flags", smollm3_flags),
    Family("granite", granite),
    Family("granite-biased", granite_biased),
    Family("granitemoe", granitemoe),
    Family("granitemoe-untied", granitemoe_untied),
    Family("gpt-oss", gpt_oss, GEMMA_PROMPTS),
    Family("gpt-oss-full", gpt_oss_full),
    Family("olmoe", olmoe),
    Family("olmoe-renormalised", olmoe_renormalised),
    Family("starcoder2", starcoder2, GEMMA_PROMPTS),
    Family("starcoder2-plain", starcoder2_plain),
    Family("cohere", cohere),
    Family("cohere-qk-norm", cohere_qk_norm),
    Family("cohere2", cohere2, GEMMA_PROMPTS),
    Family("glm", glm),
    Family("glm4", glm4),
    Family("glm4-moe", glm4_moe),
    Family("seed-oss", seed_oss),
    Family("ernie4_5", ernie4_5),
    Family("exaone4", exaone4, GEMMA_PROMPTS),
    Family("exaone4-full", exaone4_full),
    Family("phimoe", phimoe),
    Family("qwen2-sliding", qwen2_sliding, GEMMA_PROMPTS),
    Family("qwen3-sliding", qwen3_sliding, GEMMA_PROMPTS),
    Family("llama4", llama4, GEMMA_PROMPTS, left_padded_alone=True),
    Family("llama4-listed", llama4_listed, GEMMA_PROMPTS),
    Family("ernie4_5-moe", ernie4_5_moe),
    Family("ernie4_5-moe-interval", ernie4_5_moe_interval),
    Family("hunyuan", hunyuan),
]
FAMILIES: dict[str, Family] = {row.name: row for row in ROWS}
