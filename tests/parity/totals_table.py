"""One row per model class on one published config: what transformers and tfcli must both count
at full size, the bundled spec import-config must reproduce, and what the reader must make of it.
tests/parity/test_totals.py runs every kind of check over these rows; the configs live in
tests/parity/published_configs.py and tests/parity/encoder_configs.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

from tests.parity import encoder_configs as enc
from tests.parity import published_configs as pub
from tests.parity.meta_totals import hf_config_dict
from tfcli.checkpoints.heads import ARCHITECTURES

Config = Mapping[str, object]


def _named(changes: Config) -> str:
    """A refusal's id: its changed keys and values."""
    return " ".join(f"{key}={value}" for key, value in changes.items())
HF = r"https://huggingface\.co/"  # a bundled spec's source: the published config's page


@dataclass(frozen=True)
class Row:
    id: str
    config: Config | Callable[[], Config]  # the config.json, or a builder (transformers' to_dict)
    cls: str | None = None  # the class to name in `architectures`; None: the config's own
    total: int | None = None  # the published or pinned figure; None: transformers' count alone
    bundled: str | None = None  # import-config of this config must reproduce this bundled spec
    counted: bool = True  # False: transformers' fresh build is not the model (see the row)
    reads: Mapping[str, object] = field(default_factory=dict)  # spec fields the reader must set
    source: str | None = None  # a regex the bundled spec's source must match

    def built(self) -> dict[str, object]:
        config = dict(self.config() if callable(self.config) else self.config)
        return config | {"architectures": [self.cls]} if self.cls else config


def _variant(base: Config, changes: Config) -> dict[str, object]:
    """base | changes, a None n_routed_experts dropped (its aliases stand in for it)."""
    return {k: v for k, v in (dict(base) | dict(changes)).items()
            if v is not None or k != "n_routed_experts"}


def _resaved(name: str) -> Callable[[], Config]:
    """transformers 5's own saved form of a Llama 3.x config (rope_parameters, rope_theta in it)."""
    given = {k: v for k, v in pub.LLAMA_3X[name].items() if k not in ("architectures", "model_type")}
    return partial(hf_config_dict, "LlamaConfig", "LlamaForCausalLM", **given)


DEBERTA = {"deberta-v3-base": enc.DEBERTA_V3_BASE, "deberta-v3-large": enc.DEBERTA_V3_LARGE,
           "deberta-v3-small": enc.DEBERTA_V3_SMALL, "deberta-v3-xsmall": enc.DEBERTA_V3_XSMALL}
DEBERTA_TOTALS = {  # transformers' meta-device counts, pinned
    ("deberta-v3-base", "DebertaV2Model"): 183_831_552,
    ("deberta-v3-large", "DebertaV2Model"): 434_012_160,
    ("deberta-v3-small", "DebertaV2Model"): 141_304_320,
    ("deberta-v3-xsmall", "DebertaV2Model"): 70_682_112,
    ("deberta-v3-base", "DebertaV2ForMaskedLM"): 184_551_780,
    ("deberta-v3-base", "DebertaV2ForSequenceClassification"): 184_423_682,
    ("deberta-v3-base", "DebertaV2ForTokenClassification"): 183_833_090,
    ("deberta-v3-base", "DebertaV2ForQuestionAnswering"): 183_833_090,
    ("deberta-v3-base", "DebertaV2ForMultipleChoice"): 184_422_913,
}
MODERNBERT = {  # (size, class) -> transformers' count (2 labels for the classifiers, the default)
    ("base", "ModernBertModel"): 149_014_272,
    ("base", "ModernBertForMaskedLM"): 149_655_232,  # the published class
    ("base", "ModernBertForSequenceClassification"): 149_606_402,
    ("base", "ModernBertForTokenClassification"): 149_606_402,
    ("base", "ModernBertForQuestionAnswering"): 149_606_402,
    ("base", "ModernBertForMultipleChoice"): 149_605_633,
    ("large", "ModernBertModel"): 394_781_696,
    ("large", "ModernBertForMaskedLM"): 395_881_664,
    ("large", "ModernBertForSequenceClassification"): 395_833_346,
}
ROT_READS = {  # what each reader makes of its config: the variant fields
    "pythia-1.4b": {"rotary_dim": 32, "rope_pairing": "half", "parallel_residual": "two_norms",
                    "attention_bias": True, "ffn_bias": True, "lm_head_bias": False},
    "gpt-j-6b": {"rotary_dim": 64, "rope_pairing": "interleaved", "parallel_residual": "one_norm",
                 "attention_bias": False, "ffn_bias": True, "lm_head_bias": True},
    "phi-2": {"rotary_dim": 32, "rope_pairing": "half", "parallel_residual": "one_norm",
              "attention_bias": True, "ffn_bias": True, "lm_head_bias": True},
    "stablelm-2-1_6b": {"rotary_dim": 16, "rope_pairing": "half", "parallel_residual": "off",
                        "attention_bias": True, "attention_out_bias": False, "ffn_bias": False,
                        "lm_head_bias": False},
}
ROT_BUNDLED = {"pythia-1.4b": "pythia-1.4b", "gpt-j-6b": "gpt-j-6b", "phi-2": "phi-2",
               "stablelm-2-1_6b": "stablelm-2-1.6b"}
ROT_TOTALS = {"pythia-1.4b": 1_414_647_808, "gpt-j-6b": 6_050_882_784, "phi-2": 2_779_683_840,
              "stablelm-2-1_6b": 1_644_515_328}
WIRE_TOTALS = {"OLMo-2-1124-7B": 7_298_617_344, "Falcon-7B": 6_921_720_704}
WIRE_BUNDLED = {"OLMo-2-1124-7B": "olmo-2-7b", "Falcon-7B": "falcon-7b"}
DEEPSEEK_VARIANTS = [
    ("v2-all-dense", pub.DEEPSEEK_V2_LITE, {"first_k_dense_replace": 27}),  # no MoE at all
    ("v2-no-shared", pub.DEEPSEEK_V2_LITE, {"first_k_dense_replace": 0, "n_shared_experts": 0}),
    ("v2-q-lora-bias", pub.DEEPSEEK_V2_LITE, {"q_lora_rank": 768, "attention_bias": True}),
    ("v2-grouped", pub.DEEPSEEK_V2_LITE, {  # DeepSeek-V2's routing
        "topk_method": "group_limited_greedy", "n_group": 8, "topk_group": 3,
        "routed_scaling_factor": 16.0}),
    ("v3-no-q-lora", pub.DEEPSEEK_V3, {"q_lora_rank": None, "first_k_dense_replace": 0,
                                       "num_hidden_layers": 4}),
    ("v3-two-shared", pub.DEEPSEEK_V3, {"n_shared_experts": 2, "rope_interleave": False,
                                        "num_hidden_layers": 4}),
    ("v2-num-experts", pub.DEEPSEEK_V2_LITE, {"n_routed_experts": None, "num_experts": 32}),
    ("v3-num-local-experts", pub.DEEPSEEK_V3, {"n_routed_experts": None,
                                               "num_local_experts": 128}),  # the aliases
]
QWEN_MOE_VARIANTS = [  # blocks made dense
    ("qwen2-step2", pub.QWEN15_MOE, {"decoder_sparse_step": 2}),
    ("qwen2-mlp-only", pub.QWEN15_MOE, {"mlp_only_layers": [0, 5, 23, 99]}),  # 99: no layer
    ("qwen3-first-dense", pub.QWEN3_30B_A3B, {"mlp_only_layers": [0, 1, 2]}),
    ("qwen3-step3-mlp-only", pub.QWEN3_30B_A3B, {"decoder_sparse_step": 3, "mlp_only_layers": [2]}),
    ("qwen3-no-experts", pub.QWEN3_30B_A3B, {"num_experts": 0}),  # a dense model
]
ENCODERS = [  # (id, config, class, total)
    ("distilbert-base-uncased", enc.DISTILBERT_BASE_UNCASED, "DistilBertModel", 66_362_880),
    ("roberta-base", enc.ROBERTA_BASE, "RobertaModel", 124_645_632),
    ("xlm-roberta-large", enc.XLM_ROBERTA_LARGE, "XLMRobertaModel", 559_890_432),
    ("electra-base-discriminator", enc.ELECTRA_BASE_DISCRIMINATOR, "ElectraModel", 108_891_648),
    ("electra-small-discriminator", enc.ELECTRA_SMALL_DISCRIMINATOR, "ElectraModel", 13_483_008),
    ("albert-base-v2", enc.ALBERT_BASE_V2, "AlbertModel", 11_683_584),
    # the published configs' own classes, and classification heads on them (2 labels)
    ("distilbert-base-uncased masked LM", enc.DISTILBERT_BASE_UNCASED, "DistilBertForMaskedLM",
     66_985_530),
    ("roberta-base masked LM", enc.ROBERTA_BASE, "RobertaForMaskedLM", 124_697_433),
    ("xlm-roberta-large masked LM", enc.XLM_ROBERTA_LARGE, "XLMRobertaForMaskedLM", 560_142_482),
    # AlbertModel less its pooler, plus the head on 128-wide embeddings
    ("albert-base-v2 masked LM", enc.ALBERT_BASE_V2, "AlbertForMaskedLM", 11_221_680),
    ("roberta-base classifier", enc.ROBERTA_BASE, "RobertaForSequenceClassification",
     124_647_170),
    ("distilbert-base-uncased classifier", enc.DISTILBERT_BASE_UNCASED,
     "DistilBertForSequenceClassification", 66_955_010),
    ("electra-base-discriminator classifier", enc.ELECTRA_BASE_DISCRIMINATOR,
     "ElectraForSequenceClassification", 109_483_778),
    ("albert-base-v2 classifier", enc.ALBERT_BASE_V2, "AlbertForSequenceClassification",
     11_685_122),
    ("electra-base-discriminator pretraining", enc.ELECTRA_BASE_DISCRIMINATOR,
     "ElectraForPreTraining", 109_483_009),
    ("electra-small-discriminator pretraining", enc.ELECTRA_SMALL_DISCRIMINATOR,
     "ElectraForPreTraining", 13_549_057),
]
# bundled spec -> transformers' config class and model class, from the published numbers
BUILT = {
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {}),
    "gpt2-medium": ("GPT2Config", "GPT2LMHeadModel", {"n_embd": 1024, "n_layer": 24,
                                                      "n_head": 16}),
    "bert-base": ("BertConfig", "BertModel", {}),
    "t5-small": ("T5Config", "T5ForConditionalGeneration", {}),
    "llama-2-7b": ("LlamaConfig", "LlamaForCausalLM", {"max_position_embeddings": 4096,
                                                       "rms_norm_eps": 1e-5}),
    "llama-2-70b": ("LlamaConfig", "LlamaForCausalLM", {
        "hidden_size": 8192, "intermediate_size": 28672, "num_attention_heads": 64,
        "num_key_value_heads": 8, "num_hidden_layers": 80, "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-5}),
    "llama-3-8b": ("LlamaConfig", "LlamaForCausalLM", {
        "vocab_size": 128256, "intermediate_size": 14336, "num_key_value_heads": 8,
        "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 500000.0}),
    "mistral-7b": ("MistralConfig", "MistralForCausalLM", {
        "max_position_embeddings": 32768, "rms_norm_eps": 1e-5, "sliding_window": 4096}),
    "mixtral-8x7b": ("MixtralConfig", "MixtralForCausalLM", {"max_position_embeddings": 32768}),
}

FAMILIES: list[Row] = [
    Row("bart-base BartForConditionalGeneration", pub.BART_BASE,
        cls="BartForConditionalGeneration", total=139_420_416, bundled="bart-base"),
    # the published class; the LM head is tied to `shared`, final_logits_bias a buffer
    Row("bart-base BartModel", pub.BART_BASE, cls="BartModel", total=139_420_416,
        reads={"lm_head": False, "final_logits_bias": False}),
    *[Row(f"{size} {cls}", config, cls=cls, total=DEBERTA_TOTALS.get((size, cls)))
      for cls in ARCHITECTURES["deberta-v2"] for size, config in sorted(DEBERTA.items())],
    # no architectures: the bare model, which the bundled spec counts
    Row("deberta-v3-base bare", enc.DEBERTA_V3_BASE, counted=False, bundled="deberta-v3-base",
        reads={"head": "none", "pooler": False}),
    Row("DeepSeek-V2-Lite", pub.DEEPSEEK_V2_LITE, total=15_706_484_224,
        bundled="deepseek-v2-lite"),
    Row("DeepSeek-V3", pub.DEEPSEEK_V3, total=671_026_404_352, bundled="deepseek-v3"),
    *[Row(f"deepseek {name}", _variant(base, changes)) for name, base, changes in DEEPSEEK_VARIANTS],
    *[Row(name, config, cls=cls, total=total) for name, config, cls, total in ENCODERS],
    Row("Gemma-2B", pub.GEMMA["Gemma-2B"], total=2_506_172_416, bundled="gemma-2b",
        source=HF + "google/"),
    Row("Gemma-2-9B", pub.GEMMA["Gemma-2-9B"], total=9_241_705_984, bundled="gemma-2-9b",
        source=HF + "google/"),
    Row("Gemma-3-1B", pub.GEMMA["Gemma-3-1B"], total=999_885_952, bundled="gemma-3-1b",
        source=HF + "google/"),
    Row("llama-3-8b reward model", pub.LLAMA_3_8B | {"num_labels": 1},
        cls="LlamaForSequenceClassification", total=7_504_928_768),
    Row("t5-v1_1-xxl text encoder", pub.T5_V1_1_XXL, cls="T5EncoderModel", total=4_762_310_656),
    Row("bert-base masked LM", pub.BERT_BASE, cls="BertForMaskedLM", total=109_514_298),
    Row("bert-base 2-label classifier", pub.BERT_BASE | {"num_labels": 2},
        cls="BertForSequenceClassification", total=109_483_778),
    *[Row(name, config, total=total, bundled=name) for name, config, total in (
        ("llama-3.1-8b", pub.LLAMA_3X["llama-3.1-8b"], 8_030_261_248),
        ("llama-3.2-1b", pub.LLAMA_3X["llama-3.2-1b"], 1_235_814_400))],
    *[Row(f"{name} resaved", _resaved(name), total=total, bundled=name) for name, total in (
        ("llama-3.1-8b", 8_030_261_248), ("llama-3.2-1b", 1_235_814_400))],
    *[Row(f"modernbert-{size} {cls}", getattr(enc, f"MODERNBERT_{size.upper()}"), cls=cls,
          total=total, bundled="modernbert-base" if (size, cls) == (
              "base", "ModernBertForMaskedLM") else None)
      for (size, cls), total in sorted(MODERNBERT.items())],
    # transformers 5 ties a fresh mT5's head (tests/parity/test_mt5_as_loaded.py counts it
    # as from_pretrained loads it): the figures are the loaded model's
    Row("mt5-small", pub.MT5_SMALL, total=300_176_768, bundled="mt5-small", counted=False),
    Row("umt5-small", pub.UMT5_SMALL, total=306_601_984, bundled="umt5-small", counted=False),
    *[Row(name, partial(hf_config_dict, config_class, model_class, **values), bundled=name)
      for name, (config_class, model_class, values) in BUILT.items()],
    Row("Phi-3-mini-4k-instruct", pub.PHI3["Phi-3-mini-4k-instruct"], total=3_821_079_552,
        bundled="phi-3-mini"),
    Row("Phi-3-mini-128k-instruct", pub.PHI3["Phi-3-mini-128k-instruct"], total=3_821_079_552),
    # the 128k recipe with retrained factor lists
    Row("Phi-3.5-mini-instruct", pub.PHI3["Phi-3.5-mini-instruct"], total=3_821_079_552),
    # partial_rotary_factor: int(128 * 0.75) = 96 rotated dimensions; a tied head
    Row("Phi-4-mini-instruct", pub.PHI3["Phi-4-mini-instruct"],
        reads={"head_dim": 128, "rotary_width": 96, "tie_embeddings": True}),
    Row("phi-4", pub.PHI3["phi-4"]),
    Row("Phi-3-medium-4k-instruct", pub.PHI3["Phi-3-medium-4k-instruct"]),
    Row("Qwen1.5-MoE-A2.7B", pub.QWEN15_MOE, total=14_315_784_192, bundled="qwen1.5-moe-a2.7b"),
    Row("Qwen3-30B-A3B", pub.QWEN3_30B_A3B, total=30_532_122_624, bundled="qwen3-30b-a3b"),
    *[Row(f"qwen-moe {name}", dict(base) | changes) for name, base, changes in QWEN_MOE_VARIANTS],
    Row("Qwen2.5-0.5B", pub.QWEN["Qwen2.5-0.5B"], total=494_032_768),
    Row("Qwen2.5-7B", pub.QWEN["Qwen2.5-7B"], total=7_615_616_512, bundled="qwen2.5-7b"),
    Row("Qwen3-8B", pub.QWEN["Qwen3-8B"], total=8_190_735_360, bundled="qwen3-8b"),
    Row("SmolLM3-3B", pub.SMOLLM3_3B, total=3_075_098_624, bundled="smollm3-3b", source=HF,
        reads={"nope_layers": list(range(3, 36, 4))}),
    Row("granite-3.3-8b-instruct", pub.GRANITE_3_3_8B, bundled="granite-3.3-8b",
        reads={"attention_scale": 0.0078125, "embedding_multiplier": 12.0,
               "residual_multiplier": 0.22, "logits_scaling": 16.0, "tie_embeddings": True},
        source=HF),
    Row("granite-3.1-3b-a800m-instruct", pub.GRANITE_3_1_3B_A800M, total=3_298_793_472,
        bundled="granite-3.1-3b-a800m", source=HF,
        reads={"n_experts": 40, "experts_per_token": 8, "norm_topk_prob": True,
               "attention_scale": 0.015625, "logits_scaling": 6.0}),
    Row("c4ai-command-r-plus", pub.COMMAND_R_PLUS, total=103_810_674_688,
        reads={"qk_norm": "each_head", "kv_heads": 8, "norm": "layernorm_nobias"}),
    Row("c4ai-command-r7b-12-2024", pub.COMMAND_R7B, total=8_028_033_024, bundled="command-r7b",
        source=HF, reads={"parallel_residual": "one_norm", "norm": "layernorm_nobias",
                          "rope_pairing": "interleaved", "logits_scaling": 4.0,
                          "layer_pattern": ["local", "local", "local", "global"],
                          "nope_layers": list(range(3, 32, 4)), "sliding_window": 4096}),
    Row("c4ai-command-r-v01", pub.COMMAND_R_V01, total=34_980_831_232,
        reads={"logits_scaling": 16.0, "rope_pairing": "interleaved"}),
    Row("glm-4-9b-chat-hf", pub.GLM_4_9B_CHAT, total=9_399_951_360, bundled="glm-4-9b",
        source=HF, reads={"rotary_dim": 64, "rope_pairing": "interleaved",
                          "attention_out_bias": False, "norm_placement": "pre"}),
    Row("GLM-4-9B-0414", pub.GLM_4_9B_0414, total=9_400_279_040,
        reads={"norm_placement": "sandwich", "rotary_dim": 64}),
    Row("GLM-4.5-Air", pub.GLM_4_5_AIR, total=106_852_245_504, bundled="glm-4.5-air", source=HF,
        reads={"router_scoring": "sigmoid", "router_bias": True, "n_shared_experts": 1,
               "dense_layers": [0], "rotary_dim": 64, "rope_pairing": "half", "d_head": 128}),
    Row("Seed-OSS-36B-Instruct", pub.SEED_OSS_36B, total=36_151_104_512,
        reads={"attention_bias": True, "attention_out_bias": False, "d_head": 128}),
    Row("ERNIE-4.5-0.3B-PT", pub.ERNIE_4_5_0_3B, total=360_748_032,
        reads={"rope_pairing": "interleaved", "bias": False, "tie_embeddings": True}),
    Row("ERNIE-4.5-21B-A3B-PT", pub.ERNIE_4_5_21B_A3B, total=21_825_437_888,
        bundled="ernie-4.5-21b-a3b", source=HF,
        reads={"router_scoring": "softmax", "router_bias": True, "router_bias_parameter": True,
               "norm_topk_prob": True, "n_experts": 64, "experts_per_token": 6,
               "n_shared_experts": 2, "expert_d_ff": 1536, "dense_layers": [0],
               "rope_pairing": "interleaved"}),
    # HunYuanDenseV1Config() leaves head_dim None, which transformers' attention cannot build
    # (None ** ...): 128, as Hunyuan's published configs set it
    Row("HunYuanDenseV1Config(head_dim=128)",
        partial(hf_config_dict, "HunYuanDenseV1Config", "HunYuanDenseV1ForCausalLM",
                head_dim=128),
        reads={"qk_norm": "per_head", "qk_norm_after_rope": True, "ffn_bias": False}),
    Row("Exaone4Config()", partial(hf_config_dict, "Exaone4Config", "Exaone4ForCausalLM"),
        reads={"norm_placement": "sublayer_post", "qk_norm": "per_head",
               "layer_pattern": ["local", "local", "local", "global"],
               "nope_layers": list(range(3, 32, 4))}),
    Row("Phi-3.5-MoE-instruct", pub.PHI_3_5_MOE, cls="PhimoeForCausalLM",
        total=41_873_153_344,
        reads={"router_scoring": "sparsemixer", "router_jitter": 0.01, "norm": "layernorm",
               "lm_head_bias": True, "n_experts": 16, "experts_per_token": 2}),
    Row("starcoder2-3b", pub.STARCODER2_3B, total=3_030_371_328, bundled="starcoder2-3b",
        source=HF, reads={"norm": "layernorm", "activation": "gelu_tanh", "bias": True,
                          "sliding_window": 4096, "kv_heads": 2, "tie_embeddings": True}),
    Row("OLMoE-1B-7B-0924", pub.OLMOE_1B_7B, total=6_919_161_856, bundled="olmoe-1b-7b",
        source=HF, reads={"qk_norm": "full", "n_experts": 64, "experts_per_token": 8,
                          "norm_topk_prob": False}),
    Row("gpt-oss-20b", pub.GPT_OSS_20B, total=20_914_757_184, bundled="gpt-oss-20b", source=HF,
        reads={"attention_sinks": True, "activation": "swiglu_clamped", "swiglu_limit": 7.0,
               "router_logits_bias": True, "layer_pattern": ["local", "global"],
               "sliding_window": 128, "n_experts": 32, "experts_per_token": 4}),
    Row("Llama-4-Scout-17B-16E", pub.LLAMA_4_SCOUT, total=107_769_861_120,
        bundled="llama-4-scout", source=HF,
        reads={"chunked_attention": True, "sliding_window": 8192, "qk_norm": "l2",
               "layer_pattern": ["local", "local", "local", "global"],
               "nope_layers": list(range(3, 48, 4)), "nope_temperature_scale": 0.1,
               "nope_temperature_floor": 8192, "router_scales_input": True,
               "n_shared_experts": 1, "experts_per_token": 1, "d_ff": 16384,
               "expert_d_ff": 8192, "rope_pairing": "interleaved"}),
    Row("Llama-4-Maverick-17B-128E", pub.LLAMA_4_MAVERICK, total=400_711_848_960,
        reads={"moe_layer_step": 2, "n_experts": 128, "qk_norm": "none",
               "dense_layers": None}),
    Row("gpt-oss-120b", pub.GPT_OSS_120B, total=116_829_156_672, bundled="gpt-oss-120b",
        source=HF),
    Row("granite-3.1-1b-a400m-instruct", pub.GRANITE_3_1_1B_A400M),
    *[Row(name, pub.ROT[name], total=ROT_TOTALS[name], bundled=ROT_BUNDLED[name],
          reads=ROT_READS[name], source=HF) for name in pub.ROT],
    *[Row(name, config, total=WIRE_TOTALS.get(name), bundled=WIRE_BUNDLED.get(name),
          source=HF + r".*/config\.json$" if name in WIRE_BUNDLED else None)
      for name, config in pub.WIRE.items()],
]

_MINIMAL = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1,
            "intermediate_size": 32, "vocab_size": 20, "n_embd": 64, "n_head": 4, "n_layer": 1}
REFUSED: list[tuple[str, Config, Config, str]] = [  # (id, base config, changes, text named)
    *[(f"deepseek {key}", base, changes, key) for base, changes, key in (
        (pub.DEEPSEEK_V2_LITE, {"num_key_value_heads": 8}, "num_key_value_heads"),
        (pub.DEEPSEEK_V2_LITE, {"topk_method": "noaux_tc"}, "topk_method"),
        (pub.DEEPSEEK_V2_LITE, {"mlp_bias": True}, "mlp_bias"),
        (pub.DEEPSEEK_V3, {"n_group": 3}, "n_group"),
        (pub.DEEPSEEK_V3, {"topk_group": 9}, "topk_group"),
        (pub.DEEPSEEK_V3, {"num_experts_per_tok": 200}, "num_experts_per_tok"))],
    *[(f"{family} {_named(changes)}", base, changes, key)
      for changes, key in (
          ({"use_sliding_window": True}, "use_sliding_window"),
          ({"mlp_only_layers": "0,1"}, "mlp_only_layers"),
          ({"mlp_only_layers": [-1]}, "mlp_only_layers"),
          ({"num_experts_per_tok": 200}, "experts_per_token"))
      for family, base in (("qwen2_moe", pub.QWEN15_MOE), ("qwen3_moe", pub.QWEN3_30B_A3B))],
    *[(f"llama rope {kind}", pub.LLAMA_3X["llama-3.2-1b"],
       {"rope_scaling": {"rope_type": kind, "factor": 2.0}},
       f"RoPE scaling '{kind}' is not supported") for kind in ("proportional", "mrope", "su")],
    *[(_named(changes), _MINIMAL, changes, named) for changes, named in (
        ({"model_type": "phi", "qk_layernorm": True}, "qk_layernorm"),
        ({"model_type": "stablelm", "qk_layernorm": True}, "qk_layernorm"),
        ({"model_type": "stablelm", "hidden_act": "relu"}, "hidden_act"),
        ({"model_type": "phi", "tie_word_embeddings": True}, "tie_word_embeddings"),
        ({"model_type": "gptj", "rotary_dim": None}, "rotary_dim"),
        ({"model_type": "gptj", "rotary_dim": 7}, "rotary_dim"),
        ({"model_type": "gpt_neox", "rotary_pct": 1.5}, "rotary_pct"),
        ({"model_type": "gpt_neox", "rope_scaling": {"type": "su", "factor": 2.0}}, "'su'"))],
    *[(f"falcon {_named(changes)}", pub.WIRE["Falcon-7B"], changes, named) for changes, named in (
        ({"alibi": True}, "alibi"),
        ({"new_decoder_architecture": True, "parallel_attn": False}, "parallel_attn"),
        ({"num_ln_in_parallel_attn": 2}, "num_ln_in_parallel_attn"),
        ({"multi_query": False, "num_kv_heads": 7}, "num_kv_heads"),
        ({"activation": "swiglu"}, "activation"))],
    ("olmo2 hidden_act", pub.WIRE["OLMo-2-0425-1B"], {"hidden_act": "gelu"}, "hidden_act"),
]
