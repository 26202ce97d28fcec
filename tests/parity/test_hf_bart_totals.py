"""BART-base at full size against transformers on the meta device, from its published
config.json (written out below), and import-config reproducing the bundled spec.

The published file names BartModel; the checkpoint is the body of BartForConditionalGeneration
as well, and both classes count the same: the LM head is tied to `shared` and final_logits_bias
is a buffer (num_parameters() leaves it out, as tfcli's params does).
"""

from __future__ import annotations

import pytest

from tests.parity.meta_totals import hf_total
from tfcli.checkpoints import spec_from_config
from tfcli.spec.counts import components, total_parameters
from tfcli.spec.model import Spec
from tfcli.spec.load import load_spec

IDENTITY = ("name", "description", "source")
BART_BASE_TOTAL = 139_420_416

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
CLASSES = ["BartForConditionalGeneration", "BartModel"]


def _architecture(spec: Spec) -> dict[str, object]:
    return {k: v for k, v in spec.model_dump().items() if k not in IDENTITY}


@pytest.mark.parametrize("model_class", CLASSES)
def test_meta_device_total_equals_tfcli(model_class: str) -> None:
    config = BART_BASE | {"architectures": [model_class]}
    imported = spec_from_config(config, source="bart-base config")
    assert total_parameters(imported) == hf_total(config) == BART_BASE_TOTAL


def test_config_import_reproduces_bundled_spec() -> None:
    config = BART_BASE | {"architectures": ["BartForConditionalGeneration"]}
    imported = spec_from_config(config, source="bart-base config")
    assert _architecture(imported) == _architecture(load_spec("bart-base"))
    assert total_parameters(load_spec("bart-base")) == BART_BASE_TOTAL


def test_bart_model_has_no_head_and_no_logits_bias() -> None:
    spec = spec_from_config(BART_BASE, source="bart-base config")
    assert (spec.lm_head, spec.final_logits_bias) == (False, False)


def test_each_stack_counts_its_own_position_table_of_1026_rows() -> None:
    shapes = {c.path: (c.shape, c.count) for c in components(load_spec("bart-base"))}
    for stack in ("encoder", "decoder"):
        assert shapes[f"{stack}.position_embedding"] == ((1026, 768), 1026 * 768)
        assert shapes[f"{stack}.embedding_norm.scale"] == ((768,), 768)
    assert shapes["final_logits_bias"] == ((1, 50265), 0)  # a buffer
    assert "position_embedding" not in shapes and "embedding_norm.scale" not in shapes
