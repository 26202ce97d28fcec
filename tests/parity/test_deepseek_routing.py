"""DeepSeek routing against transformers' own router modules, on the same logits' inputs: which
experts each token picks and with what weight. DeepseekV2TopkRouter: softmax, greedy or
group-limited by each group's best score, no renormalisation, times routed_scaling_factor.
DeepseekV3TopkRouter: sigmoid, experts chosen on score + e_score_correction_bias within the
topk_group groups of the largest top-2 sums, the unbiased scores renormalised, times the factor.

transformers' routers compute in float32 whatever the model's dtype (they cast the hidden
states and weight); tfcli here in float64. The picked ids are compared exactly (random logits
leave no near-ties at float32 spacing), the weights to float32 rounding of a d-term product and
an E-term softmax.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.engine.engine_specs import make_spec
from tests.tolerance import assert_close
from tfcli.engine.ffn import route_scored

if TYPE_CHECKING:
    import torch

D_MODEL, TOKENS = 16, 64


def _sorted(ids: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each token's (ids, weights) in expert-id order: transformers' topk(sorted=False) leaves
    the k ids in no promised order."""
    order = np.argsort(ids, axis=-1)
    return np.take_along_axis(ids, order, -1), np.take_along_axis(weights, order, -1)


def _inputs(seed: int, n_experts: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((TOKENS, D_MODEL)), rng.standard_normal((n_experts, D_MODEL))


def _torch_route(router: torch.nn.Module, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import torch
    with torch.no_grad():
        _, weights, ids = router(torch.from_numpy(x))
    return _sorted(ids.numpy(), weights.double().numpy())


def _ours(spec, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    ids, weights = route_scored(spec, x @ w.T, bias)  # router (d, E) = transformers' weight^T
    return _sorted(ids, weights)


@pytest.mark.parametrize(("method", "groups", "topk_groups"), [
    ("greedy", 1, 1), ("group_limited_greedy", 4, 2), ("group_limited_greedy", 8, 3)])
@pytest.mark.parametrize("scale", [1.0, 16.0])
def test_v2_router(method: str, groups: int, topk_groups: int, scale: float) -> None:
    import torch
    from transformers import DeepseekV2Config
    from transformers.models.deepseek_v2.modeling_deepseek_v2 import DeepseekV2TopkRouter
    config = DeepseekV2Config(hidden_size=D_MODEL, num_attention_heads=4, n_routed_experts=16, num_experts_per_tok=4,
                              topk_method=method, n_group=groups, topk_group=topk_groups,
                              routed_scaling_factor=scale)
    router = DeepseekV2TopkRouter(config).double()
    x, w = _inputs(1, 16)
    router.weight.data = torch.from_numpy(w)
    limited = {"expert_groups": groups, "topk_groups": topk_groups} if method != "greedy" else {}
    spec = make_spec("deepseek_v2", n_experts=16, experts_per_token=4, routed_scaling_factor=scale,
                     **({"expert_groups": 1, "topk_groups": None} | limited))
    ids, weights = _ours(spec, x, w, None)
    hf_ids, hf_weights = _torch_route(router, x)
    np.testing.assert_array_equal(ids, hf_ids)
    assert_close(weights, hf_weights, ops=D_MODEL + 32, dtype=np.float32)


@pytest.mark.parametrize(("groups", "topk_groups", "renormalise"), [
    (1, 1, True), (4, 2, True), (8, 4, True), (4, 1, False)])
def test_v3_router(groups: int, topk_groups: int, renormalise: bool) -> None:
    import torch
    from transformers import DeepseekV3Config
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3TopkRouter
    config = DeepseekV3Config(hidden_size=D_MODEL, num_attention_heads=4, n_routed_experts=32, num_experts_per_tok=4,
                              n_group=groups, topk_group=topk_groups, norm_topk_prob=renormalise,
                              routed_scaling_factor=2.5)
    router = DeepseekV3TopkRouter(config).double()
    x, w = _inputs(2, 32)
    bias = np.random.default_rng(3).standard_normal(32) * 0.3  # large enough to change picks
    router.weight.data = torch.from_numpy(w)
    router.e_score_correction_bias.data = torch.from_numpy(bias)
    spec = make_spec("deepseek_v3", n_experts=32, experts_per_token=4, expert_groups=groups,
                     topk_groups=topk_groups, norm_topk_prob=renormalise)
    ids, weights = _ours(spec, x, w, bias)
    hf_ids, hf_weights = _torch_route(router, x)
    np.testing.assert_array_equal(ids, hf_ids)
    assert_close(weights, hf_weights, ops=D_MODEL + 32, dtype=np.float32)
    unbiased, _ = _ours(spec, x, w, None)
    assert (unbiased != ids).any(), "the bias changed no pick: the test would not see it ignored"
