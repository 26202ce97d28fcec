"""Qwen1.5-MoE-A2.7B (qwen2_moe) and Qwen3-30B-A3B (qwen3_moe) at full size against
transformers on the meta device, from the published config.json values (written out below).

Checks: tfcli's total equals transformers' `num_parameters()` and the issue's figure; the
active parameters per token equal a derivation by hand (written out in the test); import-config
reproduces the bundled spec field for field, which round-trips through YAML; variants of the
published configs that make blocks dense (decoder_sparse_step, mlp_only_layers) count as
transformers does; the keys tfcli does not model are refused by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parity.meta_totals import hf_total
from tfcli.analysis.params_report import build_params_report
from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.export import spec_to_yaml
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import inactive_expert_parameters, total_parameters
from tfcli.spec.load import load_spec

IDENTITY = ("name", "description", "source")

QWEN15_MOE = {  # Qwen/Qwen1.5-MoE-A2.7B config.json
    "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe",
    "decoder_sparse_step": 1, "hidden_act": "silu", "hidden_size": 2048,
    "intermediate_size": 5632, "max_position_embeddings": 8192, "max_window_layers": 21,
    "moe_intermediate_size": 1408, "norm_topk_prob": False, "num_attention_heads": 16,
    "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24,
    "num_key_value_heads": 16, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "shared_expert_intermediate_size": 5632, "sliding_window": 32768,
    "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 151936,
}
QWEN3_30B_A3B = {  # Qwen/Qwen3-30B-A3B config.json
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
    "attention_bias": False, "decoder_sparse_step": 1, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 2048, "intermediate_size": 6144, "max_position_embeddings": 40960,
    "max_window_layers": 48, "mlp_only_layers": [], "moe_intermediate_size": 768,
    "norm_topk_prob": True, "num_attention_heads": 32, "num_experts": 128,
    "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0,
    "sliding_window": None, "tie_word_embeddings": False, "use_sliding_window": False,
    "vocab_size": 151936,
}
# name -> (config, published total, bundled spec)
CONFIGS = {
    "Qwen1.5-MoE-A2.7B": (QWEN15_MOE, 14_315_784_192, "qwen1.5-moe-a2.7b"),
    "Qwen3-30B-A3B": (QWEN3_30B_A3B, 30_532_122_624, "qwen3-30b-a3b"),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_total_equals_transformers_on_meta_device(name: str) -> None:
    config, published, _ = CONFIGS[name]
    spec = spec_from_config(config, source=name)
    assert total_parameters(spec) == hf_total(config) == published


def test_active_parameters_per_token_by_hand() -> None:
    """Qwen3-30B-A3B: attention q (2048, 4096), k and v (2048, 512), o (4096, 2048), q/k norms
    (128,) each = 18,874,624; router (2048, 128); 8 experts of 3 x 2048 x 768 = 4,718,592.
    Per block 18,874,624 + 4,096 + 262,144 + 37,748,736 = 56,889,600; x 48 = 2,730,700,800;
    + embedding and head 2 x 151,936 x 2048 = 622,329,856 + final norm 2,048 = 3,353,032,704.

    Qwen1.5-MoE-A2.7B: attention 4 x 2048^2 + q, k, v biases 3 x 2048 = 16,783,360; router
    (2048, 60); 4 experts of 3 x 2048 x 1408 = 8,650,752; the shared expert 3 x 2048 x 5632 =
    34,603,008 and its gate 2,048. Per block 16,783,360 + 4,096 + 122,880 + 34,603,008 +
    34,605,056 = 86,118,400; x 24 = 2,066,841,600; + 622,329,856 + 2,048 = 2,689,173,504.
    """
    qwen3 = 18_874_624 + 4_096 + 2048 * 128 + 8 * 3 * 2048 * 768
    assert qwen3 == 56_889_600
    qwen3_active = 48 * qwen3 + 2 * 151_936 * 2048 + 2048
    qwen15 = 16_783_360 + 4_096 + 2048 * 60 + 4 * 3 * 2048 * 1408 + 3 * 2048 * 5632 + 2048
    assert qwen15 == 86_118_400
    qwen15_active = 24 * qwen15 + 2 * 151_936 * 2048 + 2048
    assert (qwen3_active, qwen15_active) == (3_353_032_704, 2_689_173_504)
    for bundled, active in (("qwen3-30b-a3b", qwen3_active), ("qwen1.5-moe-a2.7b", qwen15_active)):
        spec = load_spec(bundled)
        assert total_parameters(spec) - inactive_expert_parameters(spec) == active
        assert build_params_report(spec).to_dict()["active"] == active


@pytest.mark.parametrize("name", list(CONFIGS))
def test_import_reproduces_the_bundled_spec(name: str, tmp_path: Path) -> None:
    config, published, bundled = CONFIGS[name]
    imported = spec_from_config(config, source=name).model_dump()
    expected = load_spec(bundled)
    assert {k: v for k, v in imported.items() if k not in IDENTITY} == \
        {k: v for k, v in expected.model_dump().items() if k not in IDENTITY}
    assert total_parameters(expected) == published
    file = tmp_path / f"{bundled}.yaml"
    file.write_text(spec_to_yaml(expected))
    assert load_spec(str(file)) == expected


@pytest.mark.parametrize(("base", "changes"), [
    (QWEN15_MOE, {"decoder_sparse_step": 2}),
    (QWEN15_MOE, {"mlp_only_layers": [0, 5, 23, 99]}),  # 99: past the last layer, no layer
    (QWEN3_30B_A3B, {"mlp_only_layers": [0, 1, 2]}),  # DeepSeek-like first dense blocks
    (QWEN3_30B_A3B, {"decoder_sparse_step": 3, "mlp_only_layers": [2]}),
    (QWEN3_30B_A3B, {"num_experts": 0}),  # a dense model
], ids=["qwen2-step2", "qwen2-mlp-only", "qwen3-first-dense", "qwen3-step3-mlp-only",
        "qwen3-no-experts"])
def test_dense_blocks_count_as_transformers(base: dict[str, object],
                                            changes: dict[str, object]) -> None:
    config = base | changes
    assert total_parameters(spec_from_config(config, source="variant")) == hf_total(config)


@pytest.mark.parametrize(("changes", "key"), [
    ({"use_sliding_window": True}, "use_sliding_window"),
    ({"mlp_only_layers": "0,1"}, "mlp_only_layers"),
    ({"mlp_only_layers": [-1]}, "mlp_only_layers"),
    ({"num_experts_per_tok": 200}, "experts_per_token"),
])
def test_what_tfcli_does_not_model_is_refused_by_name(changes: dict[str, object],
                                                      key: str) -> None:
    for base in (QWEN15_MOE, QWEN3_30B_A3B):
        with pytest.raises(BadInputError, match=key):
            spec_from_config(base | changes, source="variant")
