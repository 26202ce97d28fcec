"""Qwen2-MoE (Qwen1.5-MoE: a gated shared expert, routed weights not renormalised) and Qwen3-MoE
(q/k norms, top-k renormalised) against transformers: small random models saved, loaded
through tfcli, compared logit by logit with right and left padding, greedy generation token for
token, `tfcli generate --check-cache`. The mixed cases make some blocks dense
(decoder_sparse_step 2, mlp_only_layers), with a dense width apart from the experts'.

Tolerance: float32 rtol = atol = 1e-4 (as test_hf_parity.py), on the real positions only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.parity.greedy import hf_greedy, tfcli_greedy
from tests.parity.saved_models import assert_check_cache, assert_trace_execute, real_logits, save_random
from tests.parity.test_hf_parity import F32
from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.engine.weights import MoEWeights, count_parameters
from tfcli.spec.counts import total_parameters

if TYPE_CHECKING:
    from transformers import PreTrainedModel

VOCAB, BATCH, LENGTH, NEW_TOKENS = 96, 2, 12, 10
SMALL = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
         "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": VOCAB,
         "max_position_embeddings": 64, "rope_theta": 1000.0, "moe_intermediate_size": 32,
         "num_experts": 6, "num_experts_per_tok": 2}
PROMPTS = [[5, 17, 33, 2, 80], [9, 1, 4]]


def _qwen2_moe() -> PreTrainedModel:
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM
    return Qwen2MoeForCausalLM(Qwen2MoeConfig(**SMALL, shared_expert_intermediate_size=48))


def _qwen2_moe_mixed() -> PreTrainedModel:
    """Blocks 1 and 3 sparse by the step, block 3 dense again by mlp_only_layers; top-k
    renormalised, no q/k/v bias."""
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM
    small = SMALL | {"num_hidden_layers": 4}
    return Qwen2MoeForCausalLM(Qwen2MoeConfig(**small, shared_expert_intermediate_size=40,
                                              decoder_sparse_step=2, mlp_only_layers=[3],
                                              norm_topk_prob=True, qkv_bias=False))


def _qwen3_moe() -> PreTrainedModel:
    """head_dim 8 != hidden / heads (16), top-k renormalised as Qwen3-30B-A3B."""
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM
    return Qwen3MoeForCausalLM(Qwen3MoeConfig(**SMALL, head_dim=8, norm_topk_prob=True))


def _qwen3_moe_mixed() -> PreTrainedModel:
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM
    small = SMALL | {"num_hidden_layers": 3}
    return Qwen3MoeForCausalLM(Qwen3MoeConfig(**small, head_dim=16, mlp_only_layers=[0]))


CASES: dict[str, Callable[[], PreTrainedModel]] = {
    "qwen2-moe": _qwen2_moe, "qwen2-moe-mixed": _qwen2_moe_mixed, "qwen3-moe": _qwen3_moe,
    "qwen3-moe-mixed": _qwen3_moe_mixed,
}


@pytest.fixture(scope="module", params=list(CASES))
def saved(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[PreTrainedModel, Path]:
    path = tmp_path_factory.mktemp(request.param)
    return save_random(CASES[request.param], path), path


def _tokens() -> np.ndarray:
    return np.random.default_rng(1).integers(1, VOCAB, size=(BATCH, LENGTH))


def test_float32_logits_match_with_right_padding(saved: tuple[PreTrainedModel, Path]) -> None:
    tokens, mask = _tokens(), np.ones((BATCH, LENGTH), dtype=np.int64)
    mask[1, -4:] = 0
    np.testing.assert_allclose(*real_logits(*saved, tokens, mask), **F32)


def test_float32_logits_match_with_left_padding(saved: tuple[PreTrainedModel, Path]) -> None:
    tokens, mask = _tokens(), np.ones((BATCH, LENGTH), dtype=np.int64)
    mask[1, :5] = 0
    positions = np.maximum(np.cumsum(mask, axis=1) - 1, 0)
    np.testing.assert_allclose(*real_logits(*saved, tokens, mask, positions), **F32)


def test_parameter_count_and_block_kinds_match(saved: tuple[PreTrainedModel, Path]) -> None:
    model, path = saved
    spec = spec_from_config_dir(path)
    hf_total = sum(p.numel() for p in model.parameters())
    weights = load_weights(path, spec)
    assert total_parameters(spec) == count_parameters(weights) == hf_total
    hf_sparse = [hasattr(layer.mlp, "experts") for layer in model.model.layers]
    assert [isinstance(b.ffn, MoEWeights) for b in weights.decoder.blocks] == hf_sparse


@pytest.mark.parametrize("name", list(CASES))
def test_greedy_tokens_match_transformers(name: str, tmp_path: Path) -> None:
    model = save_random(CASES[name], tmp_path, std=0.2)
    expected = [hf_greedy(model, p, NEW_TOKENS) for p in PROMPTS]
    assert tfcli_greedy(tmp_path, PROMPTS, NEW_TOKENS) == expected  # one left-padded batch
    assert tfcli_greedy(tmp_path, PROMPTS[:1], NEW_TOKENS, use_cache=False) == expected[:1]


def test_check_cache_passes(saved: tuple[PreTrainedModel, Path], invoke) -> None:  # noqa: ANN001
    assert_check_cache(invoke, saved[1], PROMPTS[0], 12)


def test_trace_execute_matches_the_analytic_rows(saved: tuple[PreTrainedModel, Path],
                                                 invoke) -> None:  # noqa: ANN001
    assert_trace_execute(invoke, saved[1])
