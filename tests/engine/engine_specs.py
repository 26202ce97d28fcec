"""Small specs for engine tests: every architectural switch, at sizes that run in milliseconds.

Imported by the test modules as `engine_specs` (pytest puts this folder on sys.path).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tfcli.core.errors import SpecConsistencyError
from tfcli.spec.model import Spec

BASE = dict(name="tiny", family="decoder", vocab_size=61, max_seq_len=48, d_model=32,
            n_heads=4, d_ff=48, n_layers=2)

# name -> overrides of BASE; one entry per feature the engine must run.
VARIANTS: dict[str, dict[str, object]] = {
    "gpt": {"activation": "gelu_tanh"},
    "llama_gqa": {"n_kv_heads": 2, "positions": "rope", "activation": "swiglu", "norm": "rmsnorm",
                  "bias": False, "tie_embeddings": False},
    "mqa_sinusoidal": {"n_kv_heads": 1, "positions": "sinusoidal", "activation": "relu"},
    "mistral_window": {"n_kv_heads": 2, "positions": "rope", "activation": "swiglu",
                       "norm": "rmsnorm", "bias": False, "sliding_window": 3},
    "moe": {"n_experts": 4, "experts_per_token": 2, "activation": "swiglu", "positions": "rope",
            "norm": "rmsnorm", "bias": False},
    "qwen_moe": {"n_experts": 4, "experts_per_token": 2, "activation": "swiglu",
                 "positions": "rope", "norm": "rmsnorm", "bias": False, "n_layers": 4,
                 "expert_d_ff": 16, "n_shared_experts": 1, "shared_expert_d_ff": 24,
                 "shared_expert_gate": True, "moe_layer_step": 2, "dense_layers": [3],
                 "norm_topk_prob": False},
    "deepseek_v3": {"n_experts": 8, "experts_per_token": 3, "activation": "swiglu",
                    "positions": "rope", "norm": "rmsnorm", "bias": False, "n_layers": 3,
                    "tie_embeddings": False, "expert_d_ff": 16, "n_shared_experts": 1,
                    "dense_layers": [0], "router_scoring": "sigmoid", "router_bias": True,
                    "expert_groups": 4, "topk_groups": 2, "group_score": "top2_sum",
                    "routed_scaling_factor": 2.5, "kv_lora_rank": 12, "q_lora_rank": 20,
                    "qk_nope_head_dim": 6, "qk_rope_head_dim": 4, "v_head_dim": 5,
                    "rope_pairing": "interleaved",
                    "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_seq_len": 16,
                                     "mscale": 1.0, "mscale_all_dim": 1.0}},
    "deepseek_v2": {"n_experts": 6, "experts_per_token": 2, "activation": "swiglu",
                    "positions": "rope", "norm": "rmsnorm", "bias": False, "n_layers": 2,
                    "expert_d_ff": 16, "n_shared_experts": 2, "norm_topk_prob": False,
                    "expert_groups": 3, "topk_groups": 2, "routed_scaling_factor": 1.5,
                    "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8,
                    "v_head_dim": 8, "rope_pairing": "interleaved", "attention_bias": True},
    "geglu_post": {"activation": "geglu", "norm_placement": "post", "positions": "learned"},
    "geglu_tanh": {"activation": "geglu_tanh", "norm": "rmsnorm", "bias": False},
    "relative_decoder": {"positions": "relative", "norm": "rmsnorm", "activation": "silu"},
    "bert": {"family": "encoder", "norm_placement": "post", "embedding_norm": True,
             "type_vocab_size": 2, "pooler": True, "lm_head": False, "activation": "gelu"},
    # ALBERT-like: factorised embeddings, one shared block run 3 times, RoBERTa's offset rows
    "albert": {"family": "encoder", "norm_placement": "post", "embedding_norm": True,
               "type_vocab_size": 2, "pooler": True, "lm_head": False, "activation": "gelu_tanh",
               "embedding_dim": 16, "shared_layers": True, "n_layers": 3, "position_offset": 2},
    "t5": {"family": "encoder-decoder", "positions": "relative", "norm": "rmsnorm", "bias": False,
           "attention_scale": 1.0, "tied_head_rescale": True, "activation": "relu",
           "n_encoder_layers": 2, "n_decoder_layers": 3},
    "parallel_one_norm": {"parallel_residual": "one_norm", "positions": "rope",
                          "activation": "gelu_tanh", "tie_embeddings": False, "lm_head_bias": True},
    "parallel_two_norms": {"parallel_residual": "two_norms", "positions": "rope", "n_kv_heads": 2,
                           "activation": "gelu"},
    "sublayer_post": {"norm_placement": "sublayer_post", "norm": "rmsnorm", "positions": "rope",
                      "activation": "swiglu", "bias": False},
    "sandwich": {"norm_placement": "sandwich", "norm": "rmsnorm", "positions": "rope",
                 "activation": "geglu_tanh", "bias": False, "n_kv_heads": 2},
    "vaswani": {"family": "encoder-decoder", "positions": "sinusoidal", "norm_placement": "post",
                "activation": "relu", "tie_embeddings": False},
    # DeBERTa-v2-like: disentangled attention (both terms, own projections, log buckets past
    # offset 4 up to 20), a normed relative table, no absolute positions, a factorised
    # embedding projected (no bias) before its norm
    "deberta": {"family": "encoder", "norm_placement": "post", "embedding_norm": True,
                "lm_head": False, "positions": "none", "disentangled_attention": ["c2p", "p2c"],
                "position_buckets": 8, "max_relative_positions": 20,
                "relative_embedding_norm": True, "embedding_dim": 16,
                "embedding_project_first": True, "embedding_project_bias": False},
    # ModernBERT-like: a pre-norm encoder whose block 0 reads the embedding norm, LayerNorms
    # without bias, RoPE with a local base, a bidirectional window on the local layer, GeGLU,
    # hidden states alone (its heads: tests/parity/test_modernbert_parity.py)
    "modernbert": {"family": "encoder", "embedding_norm": True, "first_attn_norm": False,
                   "norm": "layernorm_nobias", "positions": "rope", "activation": "geglu",
                   "bias": False, "sliding_window": 3, "layer_pattern": ["global", "local"],
                   "rope_local_theta": 100.0, "lm_head": False},
    "gemma_hybrid": {"norm": "rmsnorm", "norm_unit_offset": True, "positions": "rope",
                     "activation": "geglu_tanh", "bias": False, "n_kv_heads": 2,
                     "scale_embeddings": True, "attn_logit_softcap": 2.0,
                     "final_logit_softcap": 3.0, "sliding_window": 3,
                     "layer_pattern": ["local", "global"], "rope_local_theta": 100.0,
                     "attention_scale": 0.3},
}


def make_spec(variant: str = "gpt", **changes: object) -> Spec:
    """A tiny Spec with one variant's switches, plus any field changes."""
    return Spec(**(BASE | VARIANTS[variant] | {"name": variant} | changes))



def assert_refused(build: Callable[[], object], field: str, message: str) -> None:
    """`build()` fails with one SpecConsistencyError naming `field`, `message` in its detail."""
    with pytest.raises(SpecConsistencyError) as info:
        build()
    assert info.value.field == field and message in info.value.detail
