"""DeepSeek-V2 and DeepSeek-V3 against transformers: small random models saved, loaded through
tfcli, compared logit by logit with right and left padding, greedy generation token for token,
`tfcli generate --check-cache` (the latent cache), `tfcli trace --execute`.

Every variant is on in some case: queries with and without the q_lora_rank bottleneck, a
dense first block (first_k_dense_replace 1) or none, V2's greedy and group_limited_greedy
routing, V3's groups with a nonzero random e_score_correction_bias (zero at init, which would
test nothing), YaRN with mscale_all_dim at factor 4 (the softmax scale correction and the
cos/sin attention factor both away from 1), routed_scaling_factor != 1, rope_interleave true
and false, attention biases, two shared experts.

Tolerance: float32 rtol = atol = 1e-4 (as test_hf_parity.py), on the real positions only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.parity.greedy import hf_greedy, tfcli_greedy
from tests.parity.saved_models import assert_check_cache, assert_counts_match, assert_trace_execute, real_logits, save_random
from tests.parity.test_hf_parity import F32
from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.engine.weights import MoEWeights

if TYPE_CHECKING:
    from transformers import PreTrainedModel

VOCAB, BATCH, LENGTH, NEW_TOKENS = 96, 2, 12, 10
SMALL = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4,
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
PROMPTS = [[5, 17, 33, 2, 80], [9, 1, 4]]


def _v2_greedy() -> PreTrainedModel:
    """No query bottleneck, greedy top-k, two shared experts, biases on q_a / kv_a / o."""
    from transformers import DeepseekV2Config, DeepseekV2ForCausalLM
    return DeepseekV2ForCausalLM(DeepseekV2Config(
        **SMALL, q_lora_rank=None, n_routed_experts=6, num_experts_per_tok=2,
        n_shared_experts=2, topk_method="greedy", routed_scaling_factor=1.5,
        attention_bias=True, rope_parameters=YARN))


def _v2_grouped() -> PreTrainedModel:
    """The query bottleneck; 3 groups of 2 experts, a token's from its best 2 groups. The
    config's norm_topk_prob and scoring_func say what the V2 router never reads (it neither
    renormalises nor scores by anything but softmax): tfcli must not read them either."""
    from transformers import DeepseekV2Config, DeepseekV2ForCausalLM
    small = SMALL | {"num_hidden_layers": 3}
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


def _v3() -> PreTrainedModel:
    """DeepSeek-V3's recipe: bottleneck, 4 groups of 2, best 2 groups, renormalised x 2.5."""
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM
    return _with_random_bias(DeepseekV3ForCausalLM(DeepseekV3Config(
        **SMALL, q_lora_rank=20, n_routed_experts=8, num_experts_per_tok=3, n_shared_experts=1,
        n_group=4, topk_group=2, norm_topk_prob=True, routed_scaling_factor=2.5,
        rope_interleave=True, rope_parameters=YARN)))


def _v3_half() -> PreTrainedModel:
    """rotate_half RoPE (rope_interleave false), no bottleneck, every block MoE, not
    renormalised, 2 groups of 3, one chosen."""
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM
    small = SMALL | {"first_k_dense_replace": 0}
    return _with_random_bias(DeepseekV3ForCausalLM(DeepseekV3Config(
        **small, q_lora_rank=None, n_routed_experts=6, num_experts_per_tok=2,
        n_shared_experts=2, n_group=2, topk_group=1, norm_topk_prob=False,
        routed_scaling_factor=1.5, rope_interleave=False, rope_parameters=YARN)))


CASES: dict[str, Callable[[], PreTrainedModel]] = {
    "v2-greedy": _v2_greedy, "v2-grouped": _v2_grouped, "v3": _v3, "v3-half": _v3_half,
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


def test_counts_and_block_kinds_match(saved: tuple[PreTrainedModel, Path]) -> None:
    from transformers import DeepseekV3ForCausalLM
    model, path = saved
    assert_counts_match(model, path)
    spec = spec_from_config_dir(path)
    weights = load_weights(path, spec)
    hf_sparse = [hasattr(layer.mlp, "experts") for layer in model.model.layers]
    assert [isinstance(b.ffn, MoEWeights) for b in weights.decoder.blocks] == hf_sparse
    biases = [b.ffn.router_bias for b in weights.decoder.blocks if isinstance(b.ffn, MoEWeights)]
    if isinstance(model, DeepseekV3ForCausalLM):  # the random bias, loaded as it was saved
        stored = [layer.mlp.gate.e_score_correction_bias.numpy() for layer in model.model.layers
                  if hasattr(layer.mlp, "experts")]
        for ours, theirs in zip(biases, stored, strict=True):
            np.testing.assert_array_equal(ours, theirs)
            assert np.abs(theirs).max() > 0.1
    else:
        assert biases and all(b is None for b in biases)


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


def _add_mtp_layer(path: Path) -> list[str]:
    """The released DeepSeek-V3 layout: the multi-token-prediction module stored as
    model.layers.61 (a block, its enorm / hnorm / eh_proj and shared head) beside the model."""
    import torch
    from safetensors.torch import load_file, save_file

    file = path / "model.safetensors"
    tensors = load_file(file)
    mtp = {name.replace("model.layers.1.", "model.layers.61."): t.clone()
           for name, t in tensors.items() if name.startswith("model.layers.1.")}
    mtp |= {"model.layers.61.enorm.weight": torch.ones(64), "model.layers.61.hnorm.weight":
            torch.ones(64), "model.layers.61.eh_proj.weight": torch.zeros(64, 128),
            "model.layers.61.shared_head.head.weight": torch.zeros(VOCAB, 64)}
    save_file(tensors | mtp, file, metadata={"format": "pt"})
    return sorted(mtp)


def test_the_multi_token_prediction_layer_is_ignored_and_said_to_be(tmp_path: Path) -> None:
    """transformers' DeepseekV3 ignores model.layers.61 on load; tfcli loads the same 2
    blocks, counts the same parameters, compares the headers as equal, and says so."""
    from transformers import AutoModelForCausalLM

    from tfcli.analysis.params_report import build_params_report
    from tfcli.analysis.stored import stored_for

    model = save_random(_v3, tmp_path)
    assert len(_add_mtp_layer(tmp_path)) > 20
    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path, attn_implementation="eager")
    counts = [sum(p.numel() for p in m.parameters()) for m in (reloaded, model)]
    assert counts[0] == counts[1]
    tokens, mask = _tokens(), np.ones((BATCH, LENGTH), dtype=np.int64)
    np.testing.assert_allclose(*real_logits(reloaded.eval(), tmp_path, tokens, mask), **F32)
    spec = spec_from_config_dir(tmp_path)
    stored = stored_for(str(tmp_path), spec)
    assert stored is not None and stored.differences == (), stored and stored.verdict
    notes = build_params_report(spec, stored=stored).notes
    assert any("1 multi-token-prediction layer(s) (num_nextn_predict_layers) not built or "
               "counted" in n for n in notes), notes


def test_a_v2_checkpoint_with_a_layer_past_its_last_is_refused(tmp_path: Path) -> None:
    """DeepSeek-V2 has no multi-token-prediction layer: transformers ignores nothing there,
    and tfcli names the stray tensors."""
    from tfcli.core.errors import BadInputError

    save_random(_v2_greedy, tmp_path)
    _add_mtp_layer(tmp_path)
    with pytest.raises(BadInputError, match=r"unexpected tensor\(s\) model\.layers\.61\."):
        load_weights(tmp_path, spec_from_config_dir(tmp_path))
