"""Head classes: a config.json's `architectures` decides the head (spec.head), and every class
tfcli accepts is counted exactly as transformers builds it, checked on the meta device (shapes
only, no memory); every other class is refused by name.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.checkpoints.test_configs import GPT2_CONFIG, gpt2_tensors, write_config, write_model
from tfcli.spec.counts import components, total_parameters
from tfcli.checkpoints import load_weights, spec_from_config, spec_from_config_dir
from tfcli.checkpoints.export import spec_to_yaml
from tfcli.checkpoints.families import CLASSES as ARCHITECTURES
from tfcli.checkpoints.families import multimodal
from tfcli.checkpoints.heads import REFUSED
from tfcli.engine.weights import count_parameters
from tfcli.core.errors import BadInputError, SpecError
from tfcli.spec.load import parse_spec_text

if TYPE_CHECKING:
    import transformers


@functools.cache
def tiny_configs() -> dict[str, transformers.PretrainedConfig]:
    """A small config of each family in ARCHITECTURES, by its key; built on first use, so that
    collecting these tests imports no transformers."""
    import transformers

    return {
        "gpt2": transformers.GPT2Config(n_embd=16, n_head=2, n_layer=2, vocab_size=50, n_positions=32),
        "bert": transformers.BertConfig(num_labels=3, hidden_size=16, intermediate_size=32, num_attention_heads=2,
                                        num_hidden_layers=2, vocab_size=50, max_position_embeddings=32),
        "llama": transformers.LlamaConfig(hidden_size=16, intermediate_size=32, num_attention_heads=2,
                                          num_hidden_layers=2, vocab_size=50, num_labels=3),
        "mistral": transformers.MistralConfig(hidden_size=16, intermediate_size=32, num_attention_heads=4,
                                              num_key_value_heads=2, num_hidden_layers=2, vocab_size=50),
        "mixtral": transformers.MixtralConfig(hidden_size=16, intermediate_size=32, num_attention_heads=2,
                                              num_key_value_heads=1, num_hidden_layers=2, vocab_size=50,
                                              num_local_experts=3),
        "qwen2": transformers.Qwen2Config(hidden_size=16, intermediate_size=32, num_attention_heads=2,
                                          num_key_value_heads=1, num_hidden_layers=2, vocab_size=50),
        "qwen3": transformers.Qwen3Config(hidden_size=16, intermediate_size=32, num_attention_heads=2,
                                          num_key_value_heads=1, head_dim=8, num_hidden_layers=2,
                                          vocab_size=50),
        "qwen2_moe": transformers.Qwen2MoeConfig(hidden_size=16, intermediate_size=32,
                                                 num_attention_heads=2, num_key_value_heads=1,
                                                 num_hidden_layers=2, vocab_size=50, num_experts=3,
                                                 num_experts_per_tok=2, moe_intermediate_size=8,
                                                 shared_expert_intermediate_size=24, num_labels=3),
        "qwen3_moe": transformers.Qwen3MoeConfig(hidden_size=16, intermediate_size=32,
                                                 num_attention_heads=2, num_key_value_heads=1,
                                                 head_dim=8, num_hidden_layers=2, vocab_size=50,
                                                 num_experts=3, num_experts_per_tok=2,
                                                 moe_intermediate_size=8, num_labels=3),
        "phi3": transformers.Phi3Config(hidden_size=16, intermediate_size=32, num_attention_heads=2,
                                        num_key_value_heads=1, num_hidden_layers=2, vocab_size=50,
                                        pad_token_id=0, num_labels=3),
        "smollm3": transformers.SmolLM3Config(hidden_size=16, intermediate_size=32,
                                              num_attention_heads=2, num_key_value_heads=1,
                                              num_hidden_layers=4, vocab_size=50, pad_token_id=0,
                                              bos_token_id=1, eos_token_id=2, num_labels=3),
        "granite": transformers.GraniteConfig(hidden_size=16, intermediate_size=32,
                                              num_attention_heads=2, num_key_value_heads=1,
                                              num_hidden_layers=2, vocab_size=50,
                                              embedding_multiplier=12.0, residual_multiplier=0.22,
                                              attention_multiplier=0.125, logits_scaling=8.0),
        "glm": transformers.GlmConfig(hidden_size=16, intermediate_size=32, num_attention_heads=2,
                                      num_key_value_heads=1, head_dim=8, num_hidden_layers=2,
                                      vocab_size=50, pad_token_id=0, eos_token_id=1),
        "glm4": transformers.Glm4Config(hidden_size=16, intermediate_size=32,
                                        num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                                        num_hidden_layers=2, vocab_size=50, pad_token_id=0,
                                        eos_token_id=1),
        "glm4_moe": transformers.Glm4MoeConfig(hidden_size=16, intermediate_size=32,
                                               num_attention_heads=2, num_key_value_heads=1,
                                               head_dim=8, num_hidden_layers=2, vocab_size=50,
                                               moe_intermediate_size=8, n_routed_experts=4,
                                               num_experts_per_tok=2, pad_token_id=0),
        **{kind: getattr(transformers, cls)(hidden_size=16, intermediate_size=32,
                                            num_attention_heads=2, num_key_value_heads=1,
                                            head_dim=8, num_hidden_layers=4, vocab_size=50,
                                            pad_token_id=0, bos_token_id=1, eos_token_id=2)
           for kind, cls in (("seed_oss", "SeedOssConfig"), ("ernie4_5", "Ernie4_5Config"),
                             ("exaone4", "Exaone4Config"))},
        "phimoe": transformers.PhimoeConfig(hidden_size=16, intermediate_size=32,
                                            num_attention_heads=2, num_key_value_heads=1,
                                            num_hidden_layers=2, vocab_size=50,
                                            num_local_experts=3, lm_head_bias=True),
        "llama4_text": transformers.Llama4TextConfig(hidden_size=16, intermediate_size=8,
                                                     intermediate_size_mlp=32,
                                                     num_attention_heads=2, num_key_value_heads=1,
                                                     head_dim=8, num_hidden_layers=4,
                                                     vocab_size=50, num_local_experts=3,
                                                     attention_chunk_size=4, pad_token_id=0),
        "ernie4_5_moe": transformers.Ernie4_5_MoeConfig(
            hidden_size=16, intermediate_size=32, num_attention_heads=2, num_key_value_heads=1,
            num_hidden_layers=3, vocab_size=50, moe_intermediate_size=8, moe_num_experts=3,
            moe_k=2, moe_num_shared_experts=1),
        "hunyuan_v1_dense": transformers.HunYuanDenseV1Config(
            hidden_size=16, intermediate_size=32, num_attention_heads=2, num_key_value_heads=1,
            head_dim=8, num_hidden_layers=2, vocab_size=50),
        "qwen2_5_vl_text": transformers.Qwen2_5_VLTextConfig(
            hidden_size=16, intermediate_size=32, num_attention_heads=2, num_key_value_heads=1,
            num_hidden_layers=2, vocab_size=50, bos_token_id=0, eos_token_id=1),
        "cohere": transformers.CohereConfig(hidden_size=16, intermediate_size=32,
                                            num_attention_heads=2, num_key_value_heads=1,
                                            num_hidden_layers=2, vocab_size=50, pad_token_id=0,
                                            bos_token_id=1, eos_token_id=2),
        "cohere2": transformers.Cohere2Config(hidden_size=16, intermediate_size=32,
                                              num_attention_heads=2, num_key_value_heads=1,
                                              head_dim=8, num_hidden_layers=4, vocab_size=50,
                                              pad_token_id=0, bos_token_id=1, eos_token_id=2),
        "starcoder2": transformers.Starcoder2Config(hidden_size=16, intermediate_size=32,
                                                    num_attention_heads=2, num_key_value_heads=1,
                                                    num_hidden_layers=2, vocab_size=50,
                                                    bos_token_id=0, eos_token_id=0),
        "olmoe": transformers.OlmoeConfig(hidden_size=16, intermediate_size=32,
                                          num_attention_heads=2, num_key_value_heads=1,
                                          num_hidden_layers=2, vocab_size=50, num_experts=3,
                                          num_experts_per_tok=2),
        "gpt_oss": transformers.GptOssConfig(hidden_size=16, intermediate_size=32,
                                             num_attention_heads=2, num_key_value_heads=1,
                                             head_dim=8, num_hidden_layers=2, vocab_size=50,
                                             num_local_experts=3, num_experts_per_tok=2,
                                             sliding_window=4),
        "granitemoe": transformers.GraniteMoeConfig(hidden_size=16, intermediate_size=32,
                                                    num_attention_heads=2, num_key_value_heads=1,
                                                    num_hidden_layers=2, vocab_size=50,
                                                    num_local_experts=3, num_experts_per_tok=2,
                                                    embedding_multiplier=12.0,
                                                    logits_scaling=8.0),
        "olmo2": transformers.Olmo2Config(hidden_size=16, intermediate_size=32, num_attention_heads=2,
                                          num_key_value_heads=1, num_hidden_layers=2, vocab_size=50,
                                          pad_token_id=0, num_labels=3),
        "gpt_neox": transformers.GPTNeoXConfig(hidden_size=16, intermediate_size=32,
                                               num_attention_heads=2, num_hidden_layers=2,
                                               vocab_size=50, num_labels=3),
        "gptj": transformers.GPTJConfig(n_embd=16, n_head=2, n_layer=2, rotary_dim=4, vocab_size=50,
                                        n_positions=32, num_labels=3, bos_token_id=0, eos_token_id=0),
        "phi": transformers.PhiConfig(hidden_size=16, intermediate_size=32, num_attention_heads=2,
                                      num_hidden_layers=2, vocab_size=50, num_labels=3),
        "stablelm": transformers.StableLmConfig(hidden_size=16, intermediate_size=32,
                                                num_attention_heads=2, num_key_value_heads=1,
                                                num_hidden_layers=2, vocab_size=50, num_labels=3),
        "falcon": transformers.FalconConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=2,
                                            vocab_size=50, bias=True, num_labels=3),
        "gemma": transformers.GemmaConfig(hidden_size=16, intermediate_size=32, num_attention_heads=2,
                                          num_key_value_heads=1, head_dim=8, num_hidden_layers=2,
                                          vocab_size=50, num_labels=3),
        "gemma2": transformers.Gemma2Config(hidden_size=16, intermediate_size=32,
                                            num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                                            num_hidden_layers=2, vocab_size=50, num_labels=3),
        "gemma3_text": transformers.Gemma3TextConfig(hidden_size=16, intermediate_size=32,
                                                     num_attention_heads=2, num_key_value_heads=1,
                                                     head_dim=8, num_hidden_layers=2, vocab_size=50,
                                                     num_labels=3),
        "deepseek_v2": transformers.DeepseekV2Config(
            hidden_size=16, intermediate_size=32, moe_intermediate_size=8, num_attention_heads=2,
            num_hidden_layers=2, vocab_size=50, n_routed_experts=4, num_experts_per_tok=2,
            n_shared_experts=1, kv_lora_rank=8, q_lora_rank=None, qk_nope_head_dim=4,
            qk_rope_head_dim=4, v_head_dim=4, first_k_dense_replace=1, num_labels=3),
        "deepseek_v3": transformers.DeepseekV3Config(
            hidden_size=16, intermediate_size=32, moe_intermediate_size=8, num_attention_heads=2,
            num_key_value_heads=2, num_hidden_layers=2, vocab_size=50, n_routed_experts=4,
            num_experts_per_tok=2, n_shared_experts=1, n_group=2, topk_group=1, kv_lora_rank=8,
            q_lora_rank=8, qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=4,
            first_k_dense_replace=1, num_labels=3),
        # the encoder families of issue 16 (their configs, when their families are registered)
        "mt5": transformers.MT5Config(num_labels=3, d_model=16, d_ff=32, num_heads=2, d_kv=8, num_layers=2,
                                      num_decoder_layers=3, vocab_size=50),
        "umt5": transformers.UMT5Config(num_labels=3, d_model=16, d_ff=32, num_heads=2, d_kv=8, num_layers=2,
                                        num_decoder_layers=3, vocab_size=50),
        "roberta": transformers.RobertaConfig(num_labels=3, hidden_size=16, intermediate_size=32,
                                              num_attention_heads=2, num_hidden_layers=2,
                                              vocab_size=50, max_position_embeddings=34),
        "xlm-roberta": transformers.XLMRobertaConfig(num_labels=3, hidden_size=16, intermediate_size=32,
                                                     num_attention_heads=2, num_hidden_layers=2,
                                                     vocab_size=50, max_position_embeddings=34),
        "distilbert": transformers.DistilBertConfig(dim=16, hidden_dim=32, n_heads=2, n_layers=2,
                                                    vocab_size=50, max_position_embeddings=32),
        "electra": transformers.ElectraConfig(num_labels=3, embedding_size=8, hidden_size=16, intermediate_size=32,
                                              num_attention_heads=2, num_hidden_layers=2,
                                              vocab_size=50, max_position_embeddings=32),
        "albert": transformers.AlbertConfig(num_labels=3, embedding_size=8, hidden_size=16, intermediate_size=32,
                                            num_attention_heads=2, num_hidden_layers=2,
                                            vocab_size=50, max_position_embeddings=32),
        "deberta-v2": transformers.DebertaV2Config(
            num_labels=3, hidden_size=16, intermediate_size=32, num_attention_heads=2,
            num_hidden_layers=2, vocab_size=50, max_position_embeddings=32, relative_attention=True,
            position_buckets=8, pos_att_type="p2c|c2p", norm_rel_ebd="layer_norm",
            position_biased_input=False),
        "bart": transformers.BartConfig(num_labels=3, d_model=16, encoder_layers=2, decoder_layers=2,
                                        encoder_attention_heads=2, decoder_attention_heads=2,
                                        encoder_ffn_dim=32, decoder_ffn_dim=32, vocab_size=50,
                                        max_position_embeddings=32),
        "t5": transformers.T5Config(num_labels=3, d_model=16, d_ff=32, num_heads=2, d_kv=8, num_layers=2,
                                    num_decoder_layers=3, vocab_size=50),
        # classifier_bias true: the prediction head's dense has a bias (the classifier always has)
        "modernbert": transformers.ModernBertConfig(
            num_labels=3, hidden_size=16, intermediate_size=24, num_attention_heads=2,
            num_hidden_layers=4, vocab_size=50, max_position_embeddings=32, local_attention=4,
            classifier_bias=True, pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1,
            sep_token_id=2),
    }


# a wrapper's class counted as its language model (Qwen2.5-VL's, which has no causal-LM class of
# its own) is checked against the wrapper's language_model + lm_head in
# tests/parity/test_multimodal_text_parity.py, not against the whole wrapper here
WRAPPER_CLASSES = {name for classes in multimodal.CLASSES.values() for name in classes}
CLASSES = [(kind, name) for kind, classes in ARCHITECTURES.items() for name in classes
           if name not in WRAPPER_CLASSES]
# published configs' names for a class transformers spells otherwise (remote code's, the same model)
TRANSFORMERS_NAMES = {"PhiMoEForCausalLM": "PhimoeForCausalLM"}


def _model_class(transformers: ModuleType, name: str) -> type:
    return getattr(transformers, TRANSFORMERS_NAMES.get(name, name))
HEAD_PREFIXES = ("score.", "classifier.", "qa_outputs.", "cls.", "lm_head.",
                 "vocab_transform.", "vocab_layer_norm.", "vocab_projector.", "pre_classifier.",
                 "discriminator_predictions.", "predictions.", "generator_predictions.",
                 "generator_lm_head.", "head.", "decoder.bias")  # ModernBERT: head, decoder


def _hf_count(kind: str, name: str) -> tuple[int, int]:
    """(all parameters, those of the head modules) of transformers' model of `name`."""
    import torch
    import transformers

    with torch.device("meta"):
        model = _model_class(transformers, name)(tiny_configs()[kind])
    params = list(model.named_parameters())  # tied parameters appear once
    # a tied decoder is the token embedding's, whichever name lists it (XLM-R: the decoder's)
    embedding = model.get_input_embeddings().weight
    return (sum(p.numel() for _, p in params),
            sum(p.numel() for n, p in params if n.startswith(HEAD_PREFIXES)
                and p is not embedding))


def _config(kind: str, name: str) -> dict:
    return tiny_configs()[kind].to_dict() | {"architectures": [name]}


@pytest.mark.parametrize(("kind", "name"), CLASSES)
def test_each_class_counts_what_transformers_builds(torch: ModuleType, transformers: ModuleType,
                                                    kind: str, name: str) -> None:
    whole, head = _hf_count(kind, name)
    spec = spec_from_config(_config(kind, name), "x")
    assert total_parameters(spec) == whole
    assert spec.body_only is None
    # a pooler is the body's (BertModel's), unless the class's body has none and its head's
    # dense + activation on the first token is tfcli's pooler (RoBERTa's classifier.dense,
    # DistilBERT's pre_classifier)
    with torch.device("meta"):
        body_pooler = any(n.startswith("pooler.") or ".pooler." in n for n, _ in
                          _model_class(transformers, name)(tiny_configs()[kind]).named_parameters())
    ours = sum(c.count for c in components(spec) if c.group in ("head", "pooler")
               and not (c.name.startswith("pooler") and body_pooler))
    assert ours == head  # the head is its own components, none hidden in the body


@pytest.mark.parametrize(("kind", "name"), CLASSES)
def test_import_config_yaml_of_each_class_counts_the_class(kind: str, name: str) -> None:
    """Acceptance 3: the spec import-config writes counts what the named class counts."""
    spec = spec_from_config(_config(kind, name), "x")
    again = parse_spec_text(spec_to_yaml(spec))
    assert again == spec and total_parameters(again) == _hf_count(kind, name)[0]


@pytest.mark.parametrize(("name", "head", "labels"), [
    ("LlamaForSequenceClassification", "sequence_classification", 3),
    ("LlamaForTokenClassification", "token_classification", 3),
    ("LlamaForQuestionAnswering", "token_classification", 2),
    ("LlamaForCausalLM", "lm", None), ("LlamaModel", "none", None)])
def test_the_class_decides_the_head(name: str, head: str, labels: int | None) -> None:
    spec = spec_from_config(_config("llama", name), "x")
    assert (spec.head, spec.num_labels, spec.lm_head) == (head, labels, head == "lm")


@pytest.mark.parametrize("name", ["LlamaModel", "MistralModel", "MixtralModel", "GPT2Model", "T5Model"])
def test_bare_models_count_no_output_head(name: str) -> None:
    kind = {"Llama": "llama", "Mistr": "mistral", "Mixtr": "mixtral", "GPT2M": "gpt2", "T5Mod": "t5"}[name[:5]]
    spec = spec_from_config(_config(kind, name), "x")
    assert not spec.lm_head and spec.head == "none"


def test_num_labels_is_read_from_id2label_as_save_pretrained_writes_it() -> None:
    config = _config("bert", "BertForSequenceClassification")
    config.pop("num_labels", None)
    config["id2label"] = {"0": "neg", "1": "neutral", "2": "pos", "3": "mixed"}
    assert spec_from_config(config, "x").num_labels == 4


def test_a_decoder_classifier_keeps_the_pad_token_it_reads_past() -> None:
    spec = spec_from_config(_config("phi3", "Phi3ForSequenceClassification"), "x")
    assert spec.pad_token_id == 0 and spec.classifier_bias is False


@pytest.mark.parametrize("name", sorted(REFUSED) + ["LlamaForFoo", "BertForMaskedLMX"])
def test_classes_tfcli_does_not_build_are_refused_by_name(name: str) -> None:
    kind = "t5" if name.startswith("T5") else "gpt2" if name.startswith("GPT2") else \
        "bert" if name.startswith("Bert") else "llama"
    with pytest.raises(BadInputError) as info:
        spec_from_config(_config(kind, name), "x")
    message = info.value.message
    assert f"architectures '{name}' is not supported" in message and "\n" not in message
    assert all(supported in message for supported in ARCHITECTURES[kind])


def test_an_untied_masked_lm_is_refused_not_miscounted() -> None:
    """transformers 5 keeps two decoder biases when untied: refused by name, never counted."""
    config = _config("bert", "BertForMaskedLM") | {"tie_word_embeddings": False}
    with pytest.raises(BadInputError, match="untied masked-LM head"):
        spec_from_config(config, "x")


def test_t5_encoder_model_is_the_encoder_alone() -> None:
    spec = spec_from_config(_config("t5", "T5EncoderModel"), "x")
    assert spec.family == "encoder" and spec.head == "none" and spec.positions == "relative"
    assert not any(c.name.startswith("decoder") for c in components(spec))


def test_spec_head_fields_are_validated_as_user_input() -> None:
    base = "name: x\nfamily: decoder\nvocab_size: 8\nmax_seq_len: 8\nd_model: 8\nn_heads: 2\n" \
           "d_ff: 8\nn_layers: 1\n"
    for extra, field in [("head: lm\nnum_labels: 3\n", "num_labels"),
                         ("head: sequence_classification\nlm_head: true\n", "lm_head"),
                         ("head: sequence_classification\npad_token_id: 8\n", "pad_token_id"),
                         ("head: masked_lm\nactivation: swiglu\n", "head_activation"),
                         ("head: classifier\n", "head")]:
        with pytest.raises(SpecError, match=field):
            parse_spec_text(base + extra)
    spec = parse_spec_text(base + "head: sequence_classification\nnum_labels: 1\n")
    assert (spec.lm_head, spec.classifier_bias, total_parameters(spec)) == \
        (False, False, total_parameters(parse_spec_text(base + "lm_head: false\n")) + 8)


# --- the head through the CLI -----------------------------------------------------------------


@pytest.fixture
def reward_dir(tmp_path: Path) -> Path:
    return write_config(tmp_path / "rm", _config("llama", "LlamaForSequenceClassification"))


def test_params_shows_the_classifier_as_its_own_component(invoke, reward_dir: Path) -> None:
    table = invoke("params", str(reward_dir))
    assert table.exit_code == 0, table.output
    assert "head.classifier" in table.stdout and "body only" not in table.stdout
    data = json.loads(invoke("params", str(reward_dir), "-f", "json").stdout)
    assert data["total"] == _hf_count("llama", "LlamaForSequenceClassification")[0]
    assert data["body_only"] is None
    assert "head.classifier" in invoke("params", str(reward_dir), "-f", "csv").stdout


def test_import_config_carries_the_head_into_the_spec(invoke, reward_dir: Path) -> None:
    result = invoke("import-config", str(reward_dir))
    assert result.exit_code == 0, result.output
    assert "head: sequence_classification" in result.stdout and "num_labels: 3" in result.stdout
    assert parse_spec_text(result.stdout) == spec_from_config_dir(reward_dir)


@pytest.mark.parametrize("command", ["params", "import-config"])
def test_refused_class_through_the_cli_is_one_line(invoke, tmp_path: Path, command: str) -> None:
    path = write_config(tmp_path / "enc", {"model_type": "bert", "architectures": ["BertForPreTraining"]})
    result = invoke(command, str(path))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "BertForPreTraining" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_classifier_checkpoint_loads_its_head(tmp_path: Path) -> None:
    """GPT2ForSequenceClassification's score.weight (labels, d) is the classifier (d, labels)."""
    tensors = gpt2_tensors(np.random.default_rng(0))
    tensors["score.weight"] = np.arange(16, dtype=np.float32).reshape(2, 8)
    config = GPT2_CONFIG | {"architectures": ["GPT2ForSequenceClassification"]}
    path = write_model(tmp_path / "cls", config, tensors)
    spec = spec_from_config_dir(path)
    weights = load_weights(path, spec)
    assert weights.lm_head is None and count_parameters(weights, spec) == total_parameters(spec)
    np.testing.assert_array_equal(weights.classifier, tensors["score.weight"].T)


def test_a_classifier_missing_from_the_checkpoint_is_named(tmp_path: Path) -> None:
    config = GPT2_CONFIG | {"architectures": ["GPT2ForSequenceClassification"]}
    path = write_model(tmp_path / "cls", config, gpt2_tensors(np.random.default_rng(0)))
    with pytest.raises(BadInputError, match="classifier"):
        load_weights(path, spec_from_config_dir(path))
