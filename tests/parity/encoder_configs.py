"""Published config.json files of the encoder families (issue 16), written out as dicts for the
totals tests and the bundled specs' sources (the huggingface.co URL of each is its comment)."""

from __future__ import annotations

# https://huggingface.co/distilbert/distilbert-base-uncased/blob/main/config.json
DISTILBERT_BASE_UNCASED = {
    "activation": "gelu", "architectures": ["DistilBertForMaskedLM"], "attention_dropout": 0.1,
    "dim": 768, "dropout": 0.1, "hidden_dim": 3072, "initializer_range": 0.02,
    "max_position_embeddings": 512, "model_type": "distilbert", "n_heads": 12, "n_layers": 6,
    "pad_token_id": 0, "qa_dropout": 0.1, "seq_classif_dropout": 0.2,
    "sinusoidal_pos_embds": False, "tie_weights_": True, "vocab_size": 30522}
# https://huggingface.co/FacebookAI/roberta-base/blob/main/config.json
ROBERTA_BASE = {
    "architectures": ["RobertaForMaskedLM"], "attention_probs_dropout_prob": 0.1,
    "bos_token_id": 0, "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
    "layer_norm_eps": 1e-05, "max_position_embeddings": 514, "model_type": "roberta",
    "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 1,
    "type_vocab_size": 1, "vocab_size": 50265}
# https://huggingface.co/FacebookAI/xlm-roberta-large/blob/main/config.json
XLM_ROBERTA_LARGE = {
    "architectures": ["XLMRobertaForMaskedLM"], "attention_probs_dropout_prob": 0.1,
    "bos_token_id": 0, "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 4096,
    "layer_norm_eps": 1e-05, "max_position_embeddings": 514, "model_type": "xlm-roberta",
    "num_attention_heads": 16, "num_hidden_layers": 24, "output_past": True,
    "pad_token_id": 1, "position_embedding_type": "absolute", "type_vocab_size": 1,
    "vocab_size": 250002}
# https://huggingface.co/google/electra-base-discriminator/blob/main/config.json
ELECTRA_BASE_DISCRIMINATOR = {
    "architectures": ["ElectraForPreTraining"], "attention_probs_dropout_prob": 0.1,
    "embedding_size": 768, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
    "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "electra",
    "num_attention_heads": 12, "num_hidden_layers": 12, "type_vocab_size": 2,
    "vocab_size": 30522}
# https://huggingface.co/google/electra-small-discriminator/blob/main/config.json
ELECTRA_SMALL_DISCRIMINATOR = {
    "architectures": ["ElectraForPreTraining"], "attention_probs_dropout_prob": 0.1,
    "embedding_size": 128, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": 256, "initializer_range": 0.02, "intermediate_size": 1024,
    "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "electra",
    "num_attention_heads": 4, "num_hidden_layers": 12, "type_vocab_size": 2,
    "vocab_size": 30522}
# https://huggingface.co/albert/albert-base-v2/blob/main/config.json
ALBERT_BASE_V2 = {
    "architectures": ["AlbertForMaskedLM"], "attention_probs_dropout_prob": 0,
    "bos_token_id": 2, "classifier_dropout_prob": 0.1, "down_scale_factor": 1,
    "embedding_size": 128, "eos_token_id": 3, "gap_size": 0, "hidden_act": "gelu_new",
    "hidden_dropout_prob": 0, "hidden_size": 768, "initializer_range": 0.02,
    "inner_group_num": 1, "intermediate_size": 3072, "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512, "model_type": "albert", "net_structure_type": 0,
    "num_attention_heads": 12, "num_hidden_groups": 1, "num_hidden_layers": 12,
    "num_memory_blocks": 0, "pad_token_id": 0, "type_vocab_size": 2, "vocab_size": 30000}
# https://huggingface.co/microsoft/deberta-v3-base/blob/main/config.json (no `architectures`:
# DebertaV2Model, the first class)
DEBERTA_V3_BASE = {
    "model_type": "deberta-v2", "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02,
    "intermediate_size": 3072, "max_position_embeddings": 512, "relative_attention": True,
    "position_buckets": 256, "norm_rel_ebd": "layer_norm", "share_att_key": True,
    "pos_att_type": "p2c|c2p", "layer_norm_eps": 1e-7, "max_relative_positions": -1,
    "position_biased_input": False, "num_attention_heads": 12, "num_hidden_layers": 12,
    "type_vocab_size": 0, "vocab_size": 128100}
# microsoft/deberta-v3-large, -small, -xsmall: v3-base's config but for these sizes
DEBERTA_V3_LARGE = DEBERTA_V3_BASE | {"hidden_size": 1024, "num_hidden_layers": 24,
                                      "num_attention_heads": 16, "intermediate_size": 4096}
DEBERTA_V3_SMALL = DEBERTA_V3_BASE | {"num_hidden_layers": 6}
DEBERTA_V3_XSMALL = DEBERTA_V3_BASE | {"hidden_size": 384, "num_attention_heads": 6,
                                       "intermediate_size": 1536}
# https://huggingface.co/answerdotai/ModernBERT-base/blob/main/config.json
MODERNBERT_BASE = {
    "_name_or_path": "ModernBERT-base", "architectures": ["ModernBertForMaskedLM"],
    "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 50281,
    "classifier_activation": "gelu", "classifier_bias": False, "classifier_dropout": 0.0,
    "classifier_pooling": "mean", "cls_token_id": 50281, "decoder_bias": True,
    "deterministic_flash_attn": False, "embedding_dropout": 0.0, "eos_token_id": 50282,
    "global_attn_every_n_layers": 3, "global_rope_theta": 160000.0,
    "gradient_checkpointing": False, "hidden_activation": "gelu", "hidden_size": 768,
    "initializer_cutoff_factor": 2.0, "initializer_range": 0.02, "intermediate_size": 1152,
    "layer_norm_eps": 1e-05, "local_attention": 128, "local_rope_theta": 10000.0,
    "max_position_embeddings": 8192, "mlp_bias": False, "mlp_dropout": 0.0,
    "model_type": "modernbert", "norm_bias": False, "norm_eps": 1e-05,
    "num_attention_heads": 12, "num_hidden_layers": 22, "pad_token_id": 50283,
    "position_embedding_type": "absolute", "reference_compile": True, "sep_token_id": 50282,
    "sparse_pred_ignore_index": -100, "sparse_prediction": False,
    "tie_word_embeddings": True, "torch_dtype": "float32",
    "transformers_version": "4.47.0.dev0", "vocab_size": 50368}
# https://huggingface.co/answerdotai/ModernBERT-large/blob/main/config.json: base's recipe,
# wider and deeper
MODERNBERT_LARGE = MODERNBERT_BASE | {
    "_name_or_path": "ModernBERT-large", "hidden_size": 1024, "intermediate_size": 2624,
    "num_attention_heads": 16, "num_hidden_layers": 28}
