"""The issue's head figures at full size: the class named in `architectures` counted by
transformers' num_parameters() on the meta device (tests/parity/meta_totals.py) and by tfcli,
from the published config.json values written out here."""

from __future__ import annotations

import pytest

from tests.parity.meta_totals import hf_total
from tfcli.checkpoints import spec_from_config
from tfcli.spec.counts import components, total_parameters

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

CASES = {  # (config, class, extra keys) -> transformers' and tfcli's total
    "llama-3-8b reward model": (LLAMA_3_8B, "LlamaForSequenceClassification", {"num_labels": 1},
                                7_504_928_768),
    "t5-v1_1-xxl text encoder": (T5_V1_1_XXL, "T5EncoderModel", {}, 4_762_310_656),
    "bert-base masked LM": (BERT_BASE, "BertForMaskedLM", {}, 109_514_298),
    "bert-base 2-label classifier": (BERT_BASE, "BertForSequenceClassification",
                                     {"num_labels": 2}, 109_483_778),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_head_class_totals_match_transformers(case: str) -> None:
    config, name, extra, expected = CASES[case]
    config = config | extra | {"architectures": [name]}
    assert hf_total(config) == expected
    assert total_parameters(spec_from_config(config, "x")) == expected


def test_the_reward_model_has_no_lm_head_and_one_score_row() -> None:
    config = LLAMA_3_8B | {"architectures": ["LlamaForSequenceClassification"], "num_labels": 1}
    spec = spec_from_config(config, "x")
    head = [(c.name, c.shape, c.count) for c in components(spec) if c.group == "head"]
    assert head == [("head.classifier.weight", (4096, 1), 4096)]
    # the causal LM it was fine-tuned from: its (4096, 128256) head replaced by that row
    lm = total_parameters(spec_from_config(LLAMA_3_8B, "x"))
    assert lm == 8_030_261_248 == 7_504_928_768 - 4096 + 4096 * 128256
