"""DeepSeek-V2-Lite (deepseek_v2) and DeepSeek-V3 (deepseek_v3) at full size against
transformers on the meta device, from the published config.json values (written out below).

Checks: tfcli's total equals transformers' `num_parameters()` and the issue's figure; the
active parameters per token equal a derivation by hand (written out in the test); import-config
reproduces the bundled spec field for field, which round-trips through YAML; variants of the
published configs (every block dense, no shared expert, no query bottleneck, V2's grouped
routing) count as transformers does; the keys tfcli does not model are refused by name.
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

DEEPSEEK_V2_LITE = {  # deepseek-ai/DeepSeek-V2-Lite config.json
    "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
    "attention_bias": False, "bos_token_id": 100000, "eos_token_id": 100001,
    "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048,
    "intermediate_size": 10944, "kv_lora_rank": 512, "max_position_embeddings": 163840,
    "moe_intermediate_size": 1408, "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 64,
    "n_shared_experts": 2, "norm_topk_prob": False, "num_attention_heads": 16,
    "num_experts_per_tok": 6, "num_hidden_layers": 27, "num_key_value_heads": 16,
    "q_lora_rank": None, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
                     "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096,
                     "type": "yarn"},
    "rope_theta": 10000, "routed_scaling_factor": 1.0, "scoring_func": "softmax",
    "tie_word_embeddings": False, "topk_group": 1, "topk_method": "greedy", "v_head_dim": 128,
    "vocab_size": 102400,
}
DEEPSEEK_V3 = {  # deepseek-ai/DeepSeek-V3 config.json
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
    "attention_bias": False, "bos_token_id": 0, "eos_token_id": 1, "first_k_dense_replace": 3,
    "hidden_act": "silu", "hidden_size": 7168, "intermediate_size": 18432,
    "kv_lora_rank": 512, "max_position_embeddings": 163840, "moe_intermediate_size": 2048,
    "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1,
    "norm_topk_prob": True, "num_attention_heads": 128, "num_experts_per_tok": 8,
    "num_hidden_layers": 61, "num_key_value_heads": 128, "num_nextn_predict_layers": 1,
    "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                     "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                     "type": "yarn"},
    "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid",
    "tie_word_embeddings": False, "topk_group": 4, "topk_method": "noaux_tc",
    "v_head_dim": 128, "vocab_size": 129280,
}
# name -> (config, published total, bundled spec)
CONFIGS = {
    "DeepSeek-V2-Lite": (DEEPSEEK_V2_LITE, 15_706_484_224, "deepseek-v2-lite"),
    "DeepSeek-V3": (DEEPSEEK_V3, 671_026_404_352, "deepseek-v3"),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_total_equals_transformers_on_meta_device(name: str) -> None:
    config, published, _ = CONFIGS[name]
    spec = spec_from_config(config, source=name)
    assert total_parameters(spec) == hf_total(config) == published


def test_active_parameters_per_token_by_hand() -> None:
    """Active = every parameter but the routed experts a token does not run (the router and
    the shared experts run on every token; e_score_correction_bias is a buffer, counted 0).

    DeepSeek-V3, d 7168, 128 heads of 128 + 64, values 128. Attention: q_a (7168, 1536) +
    q_a_norm 1536 + q_b (1536, 128 x 192) + kv_a (7168, 512 + 64) + kv_a_norm 512 + kv_b
    (512, 128 x 256) + o (128 x 128, 7168) = 11,010,048 + 1,536 + 37,748,736 + 4,128,768 + 512
    + 16,777,216 + 117,440,512 = 187,107,328; two block norms 14,336. Dense blocks (3): SwiGLU
    3 x 7168 x 18432 = 396,361,728. MoE blocks (58): router (7168, 256) = 1,835,008; shared
    expert 3 x 7168 x 2048 = 44,040,192; 8 routed experts of 44,040,192 = 352,321,536.
    3 x (187,107,328 + 14,336 + 396,361,728) + 58 x (187,107,328 + 14,336 + 1,835,008 +
    44,040,192 + 352,321,536) = 1,750,450,176 + 33,948,467,200; + embedding and head
    2 x 129,280 x 7168 = 1,853,358,080 + final norm 7,168 = 37,552,282,624.

    DeepSeek-V2-Lite, d 2048, 16 heads of 128 + 64, values 128, no query bottleneck.
    Attention: q (2048, 16 x 192) + kv_a (2048, 576) + kv_a_norm 512 + kv_b (512, 16 x 256) +
    o (16 x 128, 2048) = 6,291,456 + 1,179,648 + 512 + 2,097,152 + 4,194,304 = 13,763,072;
    block norms 4,096. Dense block (1): 3 x 2048 x 10944 = 67,239,936. MoE blocks (26): router
    (2048, 64) = 131,072; shared experts 3 x 2048 x 2816 = 17,301,504; 6 routed of 3 x 2048 x
    1408 = 8,650,752 each = 51,904,512. 1 x 81,007,104 + 26 x 83,104,256 = 2,241,717,760; +
    2 x 102,400 x 2048 = 419,430,400 + 2,048 = 2,661,150,208.
    """
    v3_attn = (7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256
               + 128 * 128 * 7168)
    assert v3_attn == 187_107_328
    v3_expert = 3 * 7168 * 2048
    v3_dense = v3_attn + 2 * 7168 + 3 * 7168 * 18432
    v3_moe = v3_attn + 2 * 7168 + 7168 * 256 + v3_expert + 8 * v3_expert
    v3_active = 3 * v3_dense + 58 * v3_moe + 2 * 129_280 * 7168 + 7168
    v2_attn = 2048 * 16 * 192 + 2048 * 576 + 512 + 512 * 16 * 256 + 16 * 128 * 2048
    assert v2_attn == 13_763_072
    v2_dense = v2_attn + 2 * 2048 + 3 * 2048 * 10944
    v2_moe = v2_attn + 2 * 2048 + 2048 * 64 + 3 * 2048 * 2816 + 6 * 3 * 2048 * 1408
    v2_active = v2_dense + 26 * v2_moe + 2 * 102_400 * 2048 + 2048
    assert (v3_active, v2_active) == (37_552_282_624, 2_661_150_208)
    for bundled, active in (("deepseek-v3", v3_active), ("deepseek-v2-lite", v2_active)):
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


def test_the_multi_token_prediction_layer_is_said_to_be_left_out() -> None:
    """transformers builds 61 blocks and ignores the stored layer 61; both specs say so, and
    `tfcli params` shows it among its notes."""
    imported = spec_from_config(DEEPSEEK_V3, source="DeepSeek-V3")
    bundled = load_spec("deepseek-v3")
    for spec, said in ((imported, "1 multi-token-prediction layer(s) (num_nextn_predict_layers) "
                        "not built or counted"),
                       (bundled, "the multi-token-prediction layer 61 is not counted")):
        assert said in spec.description
        assert any(said in note for note in build_params_report(spec).notes)
    assert "multi-token" not in spec_from_config(DEEPSEEK_V2_LITE, source="x").description


@pytest.mark.parametrize(("base", "changes"), [
    (DEEPSEEK_V2_LITE, {"first_k_dense_replace": 27}),  # every block dense: no MoE at all
    (DEEPSEEK_V2_LITE, {"first_k_dense_replace": 0, "n_shared_experts": 0}),
    (DEEPSEEK_V2_LITE, {"q_lora_rank": 768, "attention_bias": True}),
    (DEEPSEEK_V2_LITE, {"topk_method": "group_limited_greedy", "n_group": 8, "topk_group": 3,
                        "routed_scaling_factor": 16.0}),  # DeepSeek-V2's routing
    (DEEPSEEK_V3, {"q_lora_rank": None, "first_k_dense_replace": 0, "num_hidden_layers": 4}),
    (DEEPSEEK_V3, {"n_shared_experts": 2, "rope_interleave": False, "num_hidden_layers": 4}),
    (DEEPSEEK_V2_LITE, {"n_routed_experts": None, "num_experts": 32}),  # the config's aliases
    (DEEPSEEK_V3, {"n_routed_experts": None, "num_local_experts": 128}),
], ids=["v2-all-dense", "v2-no-shared", "v2-q-lora-bias", "v2-grouped", "v3-no-q-lora",
        "v3-two-shared", "v2-num-experts", "v3-num-local-experts"])
def test_variants_count_as_transformers(base: dict[str, object],
                                        changes: dict[str, object]) -> None:
    config = {k: v for k, v in (base | changes).items() if v is not None or k != "n_routed_experts"}
    assert total_parameters(spec_from_config(config, source="variant")) == hf_total(config)


@pytest.mark.parametrize(("base", "changes", "key"), [
    (DEEPSEEK_V2_LITE, {"num_key_value_heads": 8}, "num_key_value_heads"),
    (DEEPSEEK_V2_LITE, {"topk_method": "noaux_tc"}, "topk_method"),
    (DEEPSEEK_V2_LITE, {"mlp_bias": True}, "mlp_bias"),
    (DEEPSEEK_V3, {"n_group": 3}, "n_group"),
    (DEEPSEEK_V3, {"topk_group": 9}, "topk_group"),
    (DEEPSEEK_V3, {"num_experts_per_tok": 200}, "num_experts_per_tok"),
])
def test_what_tfcli_does_not_model_is_refused_by_name(base: dict[str, object],
                                                      changes: dict[str, object],
                                                      key: str) -> None:
    with pytest.raises(BadInputError, match=key):
        spec_from_config(base | changes, source="variant")


def test_what_the_v2_router_does_not_read_is_not_read() -> None:
    """DeepseekV2TopkRouter always scores by softmax and never renormalises: a config saying
    otherwise gives the same spec, with a note for scoring_func."""
    spec = spec_from_config(DEEPSEEK_V2_LITE | {"scoring_func": "sigmoid", "norm_topk_prob": True,
                                                "moe_layer_freq": 3}, source="x")
    assert (spec.router_scoring, spec.norm_topk_prob) == ("softmax", False)
    assert spec.moe_layer_count(27) == 26  # every block past the first, whatever the frequency
    assert "scoring_func 'sigmoid' ignored" in spec.description


def test_v3_flags_typed_bool_or_none_read_null_as_false() -> None:
    """DeepseekV3Config types rope_interleave and norm_topk_prob `bool | None`; the modeling
    code's `if` reads null as false: rotate_half RoPE, no renormalisation."""
    spec = spec_from_config(DEEPSEEK_V3 | {"rope_interleave": None, "norm_topk_prob": None},
                            source="x")
    assert (spec.rope_pairing, spec.norm_topk_prob) == ("half", False)
