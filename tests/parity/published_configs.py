"""Published config.json values at full size (the keys that shape the model), as the
checkpoints ship them: the rows of tests/parity/totals_table.py and the subject tests beside it.
The encoders' configs are in tests/parity/encoder_configs.py."""

from __future__ import annotations

# https://huggingface.co/facebook/bart-base/blob/main/config.json (id2label, label2id and
# task_specific_params left out: no architecture in them)
BART_BASE = {
    "activation_dropout": 0.1, "activation_function": "gelu", "add_bias_logits": False,
    "add_final_layer_norm": False, "architectures": ["BartModel"], "attention_dropout": 0.1,
    "bos_token_id": 0, "classif_dropout": 0.1, "classifier_dropout": 0.0, "d_model": 768,
    "decoder_attention_heads": 12, "decoder_ffn_dim": 3072, "decoder_layerdrop": 0.0,
    "decoder_layers": 6, "decoder_start_token_id": 2, "dropout": 0.1, "early_stopping": True,
    "encoder_attention_heads": 12, "encoder_ffn_dim": 3072, "encoder_layerdrop": 0.0,
    "encoder_layers": 6, "eos_token_id": 2, "forced_eos_token_id": 2,
    "gradient_checkpointing": False, "init_std": 0.02, "is_encoder_decoder": True,
    "max_position_embeddings": 1024, "model_type": "bart", "no_repeat_ngram_size": 3,
    "normalize_before": False, "normalize_embedding": True, "num_beams": 4,
    "num_hidden_layers": 6, "pad_token_id": 1, "scale_embedding": False, "use_cache": True,
    "vocab_size": 50265,
}

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

# published config.json values (the keys that shape the model)
GEMMA: dict[str, dict[str, object]] = {
    "Gemma-2B": {
        "architectures": ["GemmaForCausalLM"], "model_type": "gemma", "attention_bias": False,
        "head_dim": 256, "hidden_act": "gelu", "hidden_size": 2048,
        "intermediate_size": 16384, "max_position_embeddings": 8192, "num_attention_heads": 8,
        "num_hidden_layers": 18, "num_key_value_heads": 1, "pad_token_id": 0,
        "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 10000.0,
        "vocab_size": 256000,
    },
    "Gemma-2-9B": {
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "attention_bias": False,
        "attn_logit_softcapping": 50.0, "cache_implementation": "hybrid",
        "final_logit_softcapping": 30.0, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh",
        "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3584,
        "intermediate_size": 14336, "max_position_embeddings": 8192, "num_attention_heads": 16,
        "num_hidden_layers": 42, "num_key_value_heads": 8, "pad_token_id": 0,
        "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
        "sliding_window": 4096, "sliding_window_size": 4096, "vocab_size": 256000,
    },
    "Gemma-3-1B": {
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
        "attention_bias": False, "attn_logit_softcapping": None,
        "cache_implementation": "hybrid", "final_logit_softcapping": None, "head_dim": 256,
        "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152,
        "intermediate_size": 6912, "max_position_embeddings": 32768, "num_attention_heads": 4,
        "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0,
        "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
        "rope_scaling": None, "rope_theta": 1000000, "sliding_window": 512,
        "sliding_window_pattern": 6, "vocab_size": 262144,
    },
}

# meta-llama/Meta-Llama-3-8B config.json
LLAMA_3_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": False,
    "hidden_act": "silu", "attention_bias": False, "mlp_bias": False, "bos_token_id": 128000,
    "eos_token_id": 128001}
# google/t5-v1_1-xxl config.json
T5_V1_1_XXL = {
    "architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "d_ff": 10240,
    "d_kv": 64, "d_model": 4096, "num_heads": 64, "num_layers": 24, "num_decoder_layers": 24,
    "relative_attention_num_buckets": 32, "layer_norm_epsilon": 1e-6,
    "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False, "vocab_size": 32128,
    "dropout_rate": 0.1, "initializer_factor": 1.0, "is_encoder_decoder": True,
    "decoder_start_token_id": 0, "eos_token_id": 1, "pad_token_id": 0}
# google-bert/bert-base-uncased config.json
BERT_BASE = {
    "architectures": ["BertForMaskedLM"], "model_type": "bert", "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768,
    "initializer_range": 0.02, "intermediate_size": 3072, "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12,
    "pad_token_id": 0, "type_vocab_size": 2, "vocab_size": 30522,
    "position_embedding_type": "absolute"}


ROPE_31 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}
# published config.json values (meta-llama/Llama-3.1-8B, meta-llama/Llama-3.2-1B)
LLAMA_3X: dict[str, dict[str, object]] = {
    "llama-3.1-8b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "rope_scaling": ROPE_31,
        "tie_word_embeddings": False, "hidden_act": "silu", "attention_bias": False,
        "mlp_bias": False, "head_dim": 128},
    "llama-3.2-1b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
        "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "rope_scaling": ROPE_31 | {"factor": 32.0},
        "tie_word_embeddings": True, "hidden_act": "silu", "attention_bias": False,
        "mlp_bias": False, "head_dim": 64},
}

# https://huggingface.co/google/mt5-small/blob/main/config.json
MT5_SMALL = {
    "architectures": ["MT5ForConditionalGeneration"], "d_ff": 1024, "d_kv": 64, "d_model": 512,
    "decoder_start_token_id": 0, "dropout_rate": 0.1, "eos_token_id": 1,
    "feed_forward_proj": "gated-gelu", "initializer_factor": 1.0, "is_encoder_decoder": True,
    "layer_norm_epsilon": 1e-06, "model_type": "mt5", "num_decoder_layers": 8, "num_heads": 6,
    "num_layers": 8, "pad_token_id": 0, "relative_attention_num_buckets": 32,
    "tie_word_embeddings": False, "tokenizer_class": "T5Tokenizer", "vocab_size": 250112,
}
# https://huggingface.co/google/umt5-small/blob/main/config.json
UMT5_SMALL = {
    "architectures": ["UMT5ForConditionalGeneration"], "d_ff": 1024, "d_kv": 64, "d_model": 512,
    "decoder_start_token_id": 0, "dense_act_fn": "gelu_new", "dropout_rate": 0.1,
    "eos_token_id": 1, "feed_forward_proj": "gated-gelu", "initializer_factor": 1.0,
    "is_encoder_decoder": True, "is_gated_act": True, "layer_norm_epsilon": 1e-06,
    "model_type": "umt5", "num_decoder_layers": 8, "num_heads": 6, "num_layers": 8,
    "output_past": True, "pad_token_id": 0, "relative_attention_max_distance": 128,
    "relative_attention_num_buckets": 32, "scalable_attention": True,
    "tie_word_embeddings": False, "tokenizer_class": "T5Tokenizer", "use_cache": True,
    "vocab_size": 256384,
}

MINI = {  # microsoft/Phi-3-mini-4k-instruct config.json
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "attention_bias": False,
    "attention_dropout": 0.0, "bos_token_id": 1, "embd_pdrop": 0.0, "eos_token_id": 32000,
    "hidden_act": "silu", "hidden_size": 3072, "initializer_range": 0.02,
    "intermediate_size": 8192, "max_position_embeddings": 4096, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "original_max_position_embeddings": 4096,
    "pad_token_id": 32000, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05, "rope_scaling": None,
    "rope_theta": 10000.0, "sliding_window": 2047, "tie_word_embeddings": False,
    "use_cache": True, "vocab_size": 32064,
}
# the long-context configs carry LongRoPE factor lists of d_head / 2 = 48 values each; their
# values change no count, so they are lists of the right length here (the real ones are read by
# the parity tests' small models)
LONGROPE = {"type": "longrope", "short_factor": [1.0] * 48, "long_factor": [1.5] * 48}
PHI3: dict[str, dict[str, object]] = {
    "Phi-3-mini-4k-instruct": MINI,
    "Phi-3-mini-128k-instruct": MINI | {
        "max_position_embeddings": 131072, "rope_scaling": LONGROPE, "sliding_window": 262144,
    },
    "Phi-3.5-mini-instruct": MINI | {
        "max_position_embeddings": 131072, "rope_scaling": LONGROPE, "sliding_window": 262144,
    },  # the 128k recipe with retrained factor lists
    "Phi-4-mini-instruct": MINI | {  # partial rotary: 96 of each 128-wide head; tied head
        "bos_token_id": 199999, "eos_token_id": 199999, "full_attn_mod": 1,
        "interpolate_factor": 1, "lm_head_bias": False, "max_position_embeddings": 131072,
        "mlp_bias": False, "num_attention_heads": 24, "num_key_value_heads": 8,
        "pad_token_id": 199999, "partial_rotary_factor": 0.75, "rope_scaling": LONGROPE,
        "sliding_window": 262144, "tie_word_embeddings": True, "vocab_size": 200064,
    },
    "phi-4": MINI | {  # Phi-4 (14B) is a phi3 too: GQA, RoPE theta 250000, no window
        "bos_token_id": 100257, "eos_token_id": 100265, "hidden_size": 5120,
        "intermediate_size": 17920, "max_position_embeddings": 16384, "num_attention_heads": 40,
        "num_hidden_layers": 40, "num_key_value_heads": 10,
        "original_max_position_embeddings": 16384, "pad_token_id": 100349, "rope_theta": 250000,
        "sliding_window": None, "vocab_size": 100352,
    },
    "Phi-3-medium-4k-instruct": MINI | {  # grouped-query: qkv_proj is 5120 + 2 * 1280 wide
        "hidden_size": 5120, "intermediate_size": 17920, "num_attention_heads": 40,
        "num_hidden_layers": 40, "num_key_value_heads": 10,
    },
}

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
GRANITE_3_3_8B = {  # ibm-granite/granite-3.3-8b-instruct config.json (3.1 / 3.2 8B share it)
    "architectures": ["GraniteForCausalLM"], "model_type": "granite", "attention_bias": False,
    "attention_dropout": 0.0, "attention_multiplier": 0.0078125, "bos_token_id": 0,
    "embedding_multiplier": 12.0, "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 12800, "logits_scaling": 16.0,
    "max_position_embeddings": 131072, "mlp_bias": False, "num_attention_heads": 32,
    "num_hidden_layers": 40, "num_key_value_heads": 8, "pad_token_id": 0,
    "residual_multiplier": 0.22, "rms_norm_eps": 1e-05, "rope_scaling": None,
    "rope_theta": 10000000.0, "tie_word_embeddings": True, "vocab_size": 49159,
}
GPT_OSS_20B = {  # openai/gpt-oss-20b config.json (the experts stored MXFP4)
    "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "attention_bias": True,
    "attention_dropout": 0.0, "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 64,
    "hidden_act": "silu", "hidden_size": 2880, "initial_context_length": 4096,
    "initializer_range": 0.02, "intermediate_size": 2880,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "max_position_embeddings": 131072, "num_attention_heads": 64, "num_experts_per_tok": 4,
    "num_hidden_layers": 24, "num_key_value_heads": 8, "num_local_experts": 32,
    "output_router_logits": False, "pad_token_id": 199999,
    "quantization_config": {"modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"],
        "quant_method": "mxfp4"},
    "rms_norm_eps": 1e-05, "rope_scaling": {
        "beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
        "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False},
    "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128,
    "swiglu_limit": 7.0, "tie_word_embeddings": False, "use_cache": True, "vocab_size": 201088,
}
GPT_OSS_120B = GPT_OSS_20B | {  # openai/gpt-oss-120b config.json
    "num_hidden_layers": 36, "num_local_experts": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 18,
}
LLAMA_4_SCOUT = {  # meta-llama/Llama-4-Scout-17B-16E config.json's text_config, as its
    # language model (Llama4ForCausalLM); Meta's file says attn_temperature_tuning: 4, which
    # transformers 5.24's strict config class refuses (it wants a bool; tfcli reads 4 by its
    # truth, tests/checkpoints/test_llama4_reader.py), so the bool stands here
    "architectures": ["Llama4ForCausalLM"], "model_type": "llama4_text",
    "attention_bias": False, "attention_chunk_size": 8192, "attention_dropout": 0.0,
    "attn_scale": 0.1, "attn_temperature_tuning": True, "bos_token_id": 200000,
    "eos_token_id": [200001, 200007, 200008], "floor_scale": 8192, "head_dim": 128,
    "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02,
    "interleave_moe_layer_step": 1, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
    "max_position_embeddings": 262144, "moe_layers": list(range(48)),
    "no_rope_layers": [1, 1, 1, 0] * 12, "num_attention_heads": 40, "num_experts_per_tok": 1,
    "num_hidden_layers": 48, "num_key_value_heads": 8, "num_local_experts": 16,
    "pad_token_id": 200018, "rms_norm_eps": 1e-05, "rope_scaling": {
        "factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "router_aux_loss_coef": 0.001, "router_jitter_noise": 0.0,
    "tie_word_embeddings": False, "use_qk_norm": True, "vocab_size": 202048,
}
LLAMA_4_MAVERICK = LLAMA_4_SCOUT | {  # meta-llama/Llama-4-Maverick-17B-128E's text_config
    "interleave_moe_layer_step": 2, "moe_layers": list(range(1, 48, 2)),
    "num_local_experts": 128, "use_qk_norm": False, "max_position_embeddings": 1048576,
    "rope_scaling": None,
}
QWEN2_5_VL_7B = {  # Qwen/Qwen2.5-VL-7B-Instruct config.json, flat (its vision_config shortened
    # to the keys that differ from Qwen2_5_VLVisionConfig's defaults)
    "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
    "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
    "vision_start_token_id": 151652, "vision_end_token_id": 151653,
    "vision_token_id": 151654, "image_token_id": 151655, "video_token_id": 151656,
    "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02,
    "intermediate_size": 18944, "max_position_embeddings": 128000, "max_window_layers": 28,
    "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
    "tie_word_embeddings": False, "use_cache": True, "use_sliding_window": False,
    "vision_config": {"depth": 32, "hidden_act": "silu", "hidden_size": 1280,
                      "intermediate_size": 3420, "num_heads": 16, "in_chans": 3,
                      "out_hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2,
                      "spatial_patch_size": 14, "window_size": 112,
                      "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2,
                      "temporal_patch_size": 2},
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vocab_size": 152064,
}
OLMOE_1B_7B = {  # allenai/OLMoE-1B-7B-0924 config.json
    "architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "attention_bias": False,
    "attention_dropout": 0.0, "clip_qkv": None, "eos_token_id": 50279, "hidden_act": "silu",
    "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 1024,
    "max_position_embeddings": 4096, "norm_topk_prob": False, "num_attention_heads": 16,
    "num_experts": 64, "num_experts_per_tok": 8, "num_hidden_layers": 16,
    "num_key_value_heads": 16, "output_router_logits": False, "pad_token_id": 1,
    "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0,
    "router_aux_loss_coef": 0.01, "tie_word_embeddings": False, "vocab_size": 50304,
}
STARCODER2_3B = {  # bigcode/starcoder2-3b config.json (mlp_type / norm_type: read by nothing)
    "architectures": ["Starcoder2ForCausalLM"], "model_type": "starcoder2",
    "attention_dropout": 0.1, "residual_dropout": 0.1, "embedding_dropout": 0.1,
    "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "gelu_pytorch_tanh", "hidden_size": 3072,
    "initializer_range": 0.018042, "intermediate_size": 12288, "layer_norm_epsilon": 1e-05,
    "max_position_embeddings": 16384, "mlp_type": "default", "norm_epsilon": 1e-05,
    "norm_type": "layer_norm", "num_attention_heads": 24, "num_hidden_layers": 30,
    "num_key_value_heads": 2, "rope_theta": 999999.4420358813, "sliding_window": 4096,
    "use_bias": True, "use_cache": True, "vocab_size": 49152,
}
COMMAND_R7B = {  # CohereForAI/c4ai-command-r7b-12-2024 config.json (keys transformers reads
    # for nothing kept: use_parallel_block, rotary_pct, position_embedding_type, ...)
    "architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2", "attention_bias": False,
    "attention_dropout": 0.0, "bos_token_id": 5, "cache_implementation": "hybrid",
    "eos_token_id": 255001, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "layer_norm_eps": 1e-05,
    "logit_scale": 0.25, "max_position_embeddings": 8192, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8,
    "order_of_interleaved_layers": "local_attn_first", "pad_token_id": 0,
    "position_embedding_type": "rope_gptj", "rope_scaling": None, "rope_theta": 50000,
    "rotary_pct": 1.0, "sliding_window": 4096, "sliding_window_pattern": 4,
    "tie_word_embeddings": True, "use_cache": True, "use_embedding_sharing": True,
    "use_gated_activation": True, "use_parallel_block": True, "use_parallel_embedding": True,
    "vocab_size": 256000,
}
COMMAND_R_V01 = {  # CohereForAI/c4ai-command-r-v01 config.json
    "architectures": ["CohereForCausalLM"], "model_type": "cohere", "attention_bias": False,
    "attention_dropout": 0.0, "bos_token_id": 5, "eos_token_id": 255001, "hidden_act": "silu",
    "hidden_size": 8192, "initializer_range": 0.02, "intermediate_size": 22528,
    "layer_norm_eps": 1e-05, "logit_scale": 0.0625, "max_position_embeddings": 8192,
    "num_attention_heads": 64, "num_hidden_layers": 40, "num_key_value_heads": 64,
    "pad_token_id": 0, "rope_theta": 8000000.0, "use_cache": True, "use_qk_norm": False,
    "vocab_size": 256000,
}
COMMAND_R_PLUS = COMMAND_R_V01 | {  # CohereForAI/c4ai-command-r-plus config.json: GQA and
    # per-head q/k LayerNorms (use_qk_norm), 128k context
    "hidden_size": 12288, "intermediate_size": 33792, "num_hidden_layers": 64,
    "num_attention_heads": 96, "num_key_value_heads": 8, "logit_scale": 0.8333333333333334,
    "max_position_embeddings": 131072, "rope_theta": 75000000.0, "use_qk_norm": True,
}
GLM_4_9B_CHAT = {  # THUDM/glm-4-9b-chat-hf config.json
    "architectures": ["GlmForCausalLM"], "model_type": "glm", "attention_bias": True,
    "attention_dropout": 0.0, "eos_token_id": [151329, 151336, 151338], "head_dim": 128,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 13696, "max_position_embeddings": 131072, "num_attention_heads": 32,
    "num_hidden_layers": 40, "num_key_value_heads": 2, "pad_token_id": 151329,
    "partial_rotary_factor": 0.5, "rms_norm_eps": 1.5625e-07, "rope_theta": 10000.0,
    "tie_word_embeddings": False, "vocab_size": 151552,
}
GLM_4_9B_0414 = GLM_4_9B_CHAT | {  # THUDM/GLM-4-9B-0414 config.json: glm4's post-sublayer norms
    "architectures": ["Glm4ForCausalLM"], "model_type": "glm4", "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-05,
}
GLM_4_5_AIR = {  # zai-org/GLM-4.5-Air config.json (its MTP layer stored as model.layers.46)
    "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "attention_bias": True,
    "attention_dropout": 0.0, "pad_token_id": 151329, "eos_token_id": [151329, 151336, 151338],
    "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "partial_rotary_factor": 0.5,
    "initializer_range": 0.02, "intermediate_size": 10944, "max_position_embeddings": 131072,
    "moe_intermediate_size": 1408, "norm_topk_prob": True, "num_attention_heads": 96,
    "n_group": 1, "topk_group": 1, "n_routed_experts": 128, "n_shared_experts": 1,
    "routed_scaling_factor": 1.0, "num_experts_per_tok": 8, "first_k_dense_replace": 1,
    "num_hidden_layers": 46, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_scaling": None, "rope_theta": 1000000, "num_nextn_predict_layers": 1,
    "tie_word_embeddings": False, "use_cache": True, "use_qk_norm": False, "vocab_size": 151552,
}
SEED_OSS_36B = {  # ByteDance-Seed/Seed-OSS-36B-Instruct config.json
    "architectures": ["SeedOssForCausalLM"], "model_type": "seed_oss", "attention_bias": True,
    "attention_dropout": 0.1, "attention_out_bias": False, "bos_token_id": 0, "pad_token_id": 1,
    "eos_token_id": 2, "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120,
    "initializer_range": 0.02, "intermediate_size": 27648, "max_position_embeddings": 524288,
    "mlp_bias": False, "num_attention_heads": 80, "num_hidden_layers": 64,
    "num_key_value_heads": 8, "residual_dropout": 0.1, "rms_norm_eps": 1e-06,
    "rope_scaling": {"rope_type": "default"}, "rope_theta": 10000000.0,
    "tie_word_embeddings": False, "vocab_size": 155136,
}
ERNIE_4_5_0_3B = {  # baidu/ERNIE-4.5-0.3B-PT config.json
    "architectures": ["Ernie4_5ForCausalLM"], "model_type": "ernie4_5", "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 1024, "intermediate_size": 3072,
    "max_position_embeddings": 131072, "num_attention_heads": 16, "num_key_value_heads": 2,
    "head_dim": 128, "num_hidden_layers": 18, "pad_token_id": 0, "rms_norm_eps": 1e-05,
    "rope_theta": 500000, "tie_word_embeddings": True, "use_bias": False, "vocab_size": 103424,
}
ERNIE_4_5_21B_A3B = {  # baidu/ERNIE-4.5-21B-A3B-PT config.json (28 layers, 20/4 heads, 64
    # experts top-6 and 2 shared, from block 1, as its model card lists them)
    "architectures": ["Ernie4_5_MoeForCausalLM"], "model_type": "ernie4_5_moe",
    "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0, "hidden_act": "silu",
    "hidden_size": 2560, "intermediate_size": 12288, "max_position_embeddings": 131072,
    "moe_intermediate_size": 1536, "moe_k": 6, "moe_layer_end_index": 27,
    "moe_layer_interval": 1, "moe_layer_start_index": 1, "moe_num_experts": 64,
    "moe_num_shared_experts": 2, "num_attention_heads": 20, "num_hidden_layers": 28,
    "num_key_value_heads": 4, "rms_norm_eps": 1e-05, "rope_theta": 500000,
    "tie_word_embeddings": True, "use_bias": False, "vocab_size": 103424,
}
PHI_3_5_MOE = {  # microsoft/Phi-3.5-MoE-instruct config.json; its LongRoPE factor lists (64
    # numbers each, no parameter) abbreviated to ones here
    "architectures": ["PhiMoEForCausalLM"], "model_type": "phimoe", "attention_bias": True,
    "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 32000, "hidden_act": "silu",
    "hidden_dropout": 0.0, "hidden_size": 4096, "initializer_range": 0.02,
    "input_jitter_noise": 0.01, "intermediate_size": 6400, "lm_head_bias": True,
    "max_position_embeddings": 131072, "num_attention_heads": 32, "num_experts_per_tok": 2,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 16,
    "original_max_position_embeddings": 4096, "output_router_logits": False,
    "rms_norm_eps": 1e-05, "rope_scaling": {
        "long_factor": [1.0] * 64, "long_mscale": 1.243163121016122,
        "original_max_position_embeddings": 4096, "short_factor": [1.0] * 64,
        "short_mscale": 1.243163121016122, "type": "longrope"},
    "rope_theta": 10000.0, "router_aux_loss_coef": 0.0, "router_jitter_noise": 0.01,
    "sliding_window": 131072, "tie_word_embeddings": False, "vocab_size": 32064,
}
GRANITE_3_1_3B_A800M = {  # ibm-granite/granite-3.1-3b-a800m-instruct config.json
    "architectures": ["GraniteMoeForCausalLM"], "model_type": "granitemoe",
    "attention_bias": False, "attention_dropout": 0.1, "attention_multiplier": 0.015625,
    "bos_token_id": 0, "embedding_multiplier": 12.0, "eos_token_id": 0, "hidden_act": "silu",
    "hidden_size": 1536, "initializer_range": 0.02, "intermediate_size": 512,
    "logits_scaling": 6.0, "max_position_embeddings": 131072, "num_attention_heads": 24,
    "num_experts_per_tok": 8, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "num_local_experts": 40, "output_router_logits": False, "pad_token_id": 0,
    "residual_multiplier": 0.22, "rms_norm_eps": 1e-06, "rope_scaling": None,
    "rope_theta": 10000000, "router_aux_loss_coef": 0.0, "tie_word_embeddings": True,
    "vocab_size": 49155,
}
GRANITE_3_1_1B_A400M = GRANITE_3_1_3B_A800M | {  # ibm-granite/granite-3.1-1b-a400m-instruct
    "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
    "num_local_experts": 32, "logits_scaling": 6.0,
}
SMOLLM3_3B = {  # HuggingFaceTB/SmolLM3-3B config.json (the keys it sets; every 4th layer NoPE)
    "architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3", "attention_bias": False,
    "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 11008,
    "max_position_embeddings": 65536, "mlp_bias": False, "num_attention_heads": 16,
    "num_hidden_layers": 36, "num_key_value_heads": 4, "rms_norm_eps": 1e-06,
    "rope_theta": 5000000.0, "sliding_window": None, "tie_word_embeddings": True,
    "use_sliding_window": False, "vocab_size": 128256, "pad_token_id": 128004,
    "no_rope_layers": [int((i + 1) % 4 != 0) for i in range(36)], "no_rope_layer_interval": 4,
}

QWEN: dict[str, dict[str, object]] = {
    "Qwen2.5-0.5B": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
        "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
        "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
        "tie_word_embeddings": True, "use_sliding_window": False, "vocab_size": 151936,
        "hidden_act": "silu",
    },
    "Qwen2.5-7B": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
        "intermediate_size": 18944, "max_position_embeddings": 131072, "max_window_layers": 28,
        "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072,
        "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 152064,
        "hidden_act": "silu",
    },
    "Qwen3-8B": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False,
        "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 12288,
        "max_position_embeddings": 40960, "max_window_layers": 36, "num_attention_heads": 32,
        "num_hidden_layers": 36, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
        "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None,
        "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 151936,
    },
}

ROT: dict[str, dict[str, object]] = {
    "pythia-1.4b": {  # EleutherAI/pythia-1.4b
        "architectures": ["GPTNeoXForCausalLM"], "bos_token_id": 0, "eos_token_id": 0,
        "hidden_act": "gelu", "hidden_size": 2048, "initializer_range": 0.02,
        "intermediate_size": 8192, "layer_norm_eps": 1e-05, "max_position_embeddings": 2048,
        "model_type": "gpt_neox", "num_attention_heads": 16, "num_hidden_layers": 24,
        "rotary_emb_base": 10000, "rotary_pct": 0.25, "tie_word_embeddings": False,
        "torch_dtype": "float16", "use_cache": True, "use_parallel_residual": True,
        "vocab_size": 50304,
    },
    "gpt-j-6b": {  # EleutherAI/gpt-j-6b
        "activation_function": "gelu_new", "architectures": ["GPTJForCausalLM"],
        "attn_pdrop": 0.0, "bos_token_id": 50256, "embd_pdrop": 0.0, "eos_token_id": 50256,
        "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gptj",
        "n_embd": 4096, "n_head": 16, "n_inner": None, "n_layer": 28, "n_positions": 2048,
        "resid_pdrop": 0.0, "rotary": True, "rotary_dim": 64, "scale_attn_weights": True,
        "tie_word_embeddings": False, "use_cache": True, "vocab_size": 50400,
    },
    "phi-2": {  # microsoft/phi-2
        "architectures": ["PhiForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 50256,
        "embd_pdrop": 0.0, "eos_token_id": 50256, "hidden_act": "gelu_new",
        "hidden_size": 2560, "initializer_range": 0.02, "intermediate_size": 10240,
        "layer_norm_eps": 1e-05, "max_position_embeddings": 2048, "model_type": "phi",
        "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
        "partial_rotary_factor": 0.4, "qk_layernorm": False, "resid_pdrop": 0.1,
        "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": False,
        "torch_dtype": "float16", "use_cache": True, "vocab_size": 51200,
    },
    "stablelm-2-1_6b": {  # stabilityai/stablelm-2-1_6b
        "architectures": ["StableLmForCausalLM"], "bos_token_id": 100257,
        "eos_token_id": 100257, "hidden_act": "silu", "hidden_dropout": 0.0,
        "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 5632,
        "layer_norm_eps": 1e-05, "max_position_embeddings": 4096, "model_type": "stablelm",
        "num_attention_heads": 32, "num_hidden_layers": 24, "num_key_value_heads": 32,
        "partial_rotary_factor": 0.25, "qk_layernorm": False, "rope_scaling": None,
        "rope_theta": 10000, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "use_cache": True, "use_parallel_residual": False, "use_qkv_bias": True,
        "vocab_size": 100352,
    },
}

WIRE: dict[str, dict[str, object]] = {
    "OLMo-2-1124-7B": {
        "architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "attention_bias": False,
        "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 11008,
        "max_position_embeddings": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
        "num_key_value_heads": 32, "rms_norm_eps": 1e-06, "rope_scaling": None,
        "rope_theta": 500000, "tie_word_embeddings": False, "vocab_size": 100352,
        "pad_token_id": 100277, "eos_token_id": 100257,
    },
    "OLMo-2-0425-1B": {
        "architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "attention_bias": False,
        "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 8192,
        "max_position_embeddings": 4096, "num_attention_heads": 16, "num_hidden_layers": 16,
        "num_key_value_heads": 16, "rms_norm_eps": 1e-06, "rope_scaling": None,
        "rope_theta": 500000, "tie_word_embeddings": False, "vocab_size": 100352,
        "pad_token_id": 100277, "eos_token_id": 100257,
    },
    "Falcon-7B": {
        "architectures": ["FalconForCausalLM"], "model_type": "falcon", "alibi": False,
        "apply_residual_connection_post_layernorm": False, "bias": False, "hidden_size": 4544,
        "layer_norm_epsilon": 1e-05, "multi_query": True, "new_decoder_architecture": False,
        "num_attention_heads": 71, "num_hidden_layers": 32, "parallel_attn": True,
        "vocab_size": 65024, "bos_token_id": 11, "eos_token_id": 11,
    },
    "Falcon-40B": {
        "architectures": ["FalconForCausalLM"], "model_type": "falcon", "alibi": False,
        "apply_residual_connection_post_layernorm": False, "bias": False, "hidden_size": 8192,
        "layer_norm_epsilon": 1e-05, "new_decoder_architecture": True,
        "num_attention_heads": 128, "num_hidden_layers": 60, "num_kv_heads": 8,
        "parallel_attn": True, "vocab_size": 65024, "bos_token_id": 11, "eos_token_id": 11,
    },
    # Falcon 2 11B's recipe: new_decoder_architecture with one shared norm, an untied head
    "Falcon-11B": {
        "architectures": ["FalconForCausalLM"], "model_type": "falcon", "activation": "gelu",
        "alibi": False, "bias": False, "ffn_hidden_size": 16384, "hidden_size": 4096,
        "layer_norm_epsilon": 1e-05, "max_position_embeddings": 8192, "multi_query": True,
        "new_decoder_architecture": True, "num_attention_heads": 32, "num_hidden_layers": 60,
        "num_kv_heads": 8, "num_ln_in_parallel_attn": 1, "parallel_attn": True,
        "rope_theta": 500042.0, "tie_word_embeddings": False, "vocab_size": 65024,
    },
    # the sequential form (parallel_attn false) with biases and every head its own k/v
    "Falcon-sequential": {
        "architectures": ["FalconForCausalLM"], "model_type": "falcon", "alibi": False,
        "bias": True, "hidden_size": 2048, "multi_query": False, "new_decoder_architecture": False,
        "num_attention_heads": 32, "num_hidden_layers": 24, "parallel_attn": False,
        "vocab_size": 50304,
    },
}
