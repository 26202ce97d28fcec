"""Head classes: a config.json's `architectures` decides what is counted, checked against
transformers on the meta device (shapes only, no memory).

Every class tfcli accepts is counted exactly as transformers builds it, or - for a task head
tfcli does not build - as transformers' model minus that head's parameters, labelled "body only"
in every output format. Every other class is refused by name.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

from tests.test_checkpoints import GPT2_CONFIG, gpt2_tensors, write_config, write_model
from tfcli.params import total_parameters
from tfcli.checkpoints import load_weights, spec_from_config, spec_from_config_dir
from tfcli.checkpoints.heads import ARCHITECTURES, REFUSED
from tfcli.engine.weights import count_parameters
from tfcli.errors import BadInputError, SpecError
from tfcli.spec_io import parse_spec_text

TINY = {
    "gpt2": transformers.GPT2Config(n_embd=16, n_head=2, n_layer=2, vocab_size=50, n_positions=32),
    "bert": transformers.BertConfig(hidden_size=16, intermediate_size=32, num_attention_heads=2,
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
    "t5": transformers.T5Config(d_model=16, d_ff=32, num_heads=2, d_kv=8, num_layers=2,
                                num_decoder_layers=3, vocab_size=50),
}
CLASSES = [(kind, name) for kind, classes in ARCHITECTURES.items() for name in classes]


def _hf_counts(kind: str, name: str) -> tuple[int, int]:
    """(all parameters, parameters outside the class's task head) of transformers' model."""
    with torch.device("meta"):
        model = getattr(transformers, name)(TINY[kind])
    head = tuple(f"{m}." for m in ARCHITECTURES[kind][name].head.split(" + ") if m)
    params = list(model.named_parameters())  # tied parameters appear once
    return sum(p.numel() for _, p in params), sum(p.numel() for n, p in params if not n.startswith(head) or not head)


def _config(kind: str, name: str) -> dict:
    return TINY[kind].to_dict() | {"architectures": [name]}


@pytest.mark.parametrize(("kind", "name"), CLASSES)
def test_each_class_counts_what_transformers_builds_or_its_labelled_body(kind: str, name: str) -> None:
    whole, body = _hf_counts(kind, name)
    spec = spec_from_config(_config(kind, name), "x")
    assert total_parameters(spec) == body
    if ARCHITECTURES[kind][name].head:
        assert body < whole  # the head has parameters: without the label this would be wrong
        assert spec.body_only and name in spec.body_only and not spec.lm_head
    else:
        assert body == whole and spec.body_only is None


@pytest.mark.parametrize("name", ["LlamaModel", "MistralModel", "MixtralModel", "GPT2Model", "T5Model"])
def test_bare_models_count_no_output_head(name: str) -> None:
    kind = {"Llama": "llama", "Mistr": "mistral", "Mixtr": "mixtral", "GPT2M": "gpt2", "T5Mod": "t5"}[name[:5]]
    spec = spec_from_config(_config(kind, name), "x")
    assert not spec.lm_head and spec.body_only is None


def test_llama3_reward_model_at_full_size() -> None:
    """The issue's figures: a Llama-3-8B reward model (1 label) is 7,504,928,768 parameters in
    transformers; tfcli counts its body, 4,096 (the score row) fewer, and says so."""
    config = transformers.LlamaConfig(vocab_size=128256, intermediate_size=14336, num_key_value_heads=8,
                                      max_position_embeddings=8192, rms_norm_eps=1e-5,
                                      rope_theta=500000.0, num_labels=1)
    with torch.device("meta"):
        hf = transformers.LlamaForSequenceClassification(config)
    assert sum(p.numel() for p in hf.parameters()) == 7_504_928_768
    spec = spec_from_config(config.to_dict() | {"architectures": ["LlamaForSequenceClassification"]}, "rm")
    assert total_parameters(spec) == 7_504_928_768 - 4096 == 7_504_924_672
    assert spec.body_only == "LlamaForSequenceClassification (score head not built)"


@pytest.mark.parametrize("name", sorted(REFUSED) + ["LlamaForFoo", "BertForMaskedLMX"])
def test_classes_tfcli_does_not_build_are_refused_by_name(name: str) -> None:
    kind = "t5" if name.startswith("T5") else "gpt2" if name.startswith("GPT2") else \
        "bert" if name.startswith("Bert") else "llama"
    with pytest.raises(BadInputError) as info:
        spec_from_config(TINY[kind].to_dict() | {"architectures": [name]}, "x")
    message = info.value.message
    assert f"architectures '{name}' is not supported" in message and "\n" not in message
    assert all(supported in message for supported in ARCHITECTURES[kind])


def test_t5_encoder_model_is_refused_not_counted_with_a_decoder() -> None:
    with pytest.raises(BadInputError, match="encoder-only T5"):
        spec_from_config({"model_type": "t5", "architectures": ["T5EncoderModel"]}, "x")
    # without model_type the class name alone is refused the same way (no family to guess)
    with pytest.raises(BadInputError, match="not supported"):
        spec_from_config({"architectures": ["T5EncoderModel"]}, "x")


def test_body_only_spec_is_validated_as_user_input() -> None:
    with pytest.raises(SpecError, match="body_only"):
        parse_spec_text("name: x\nfamily: decoder\nvocab_size: 8\nmax_seq_len: 8\nd_model: 8\n"
                        f"n_heads: 2\nd_ff: 8\nn_layers: 1\nbody_only: {'a' * 201}\n")


# --- every output format says "body only" ----------------------------------------------------


@pytest.fixture
def reward_dir(tmp_path: Path) -> Path:
    return write_config(tmp_path / "rm", _config("llama", "LlamaForSequenceClassification"))


def test_params_table_json_csv_label_the_body(invoke, reward_dir: Path) -> None:
    body = total_parameters(spec_from_config_dir(reward_dir))
    table = invoke("params", str(reward_dir))
    assert table.exit_code == 0, table.output
    assert "(body only)" in table.stdout and "LlamaForSequenceClassification" in table.stdout
    data = json.loads(invoke("params", str(reward_dir), "-f", "json").stdout)
    assert data["body_only"] == "LlamaForSequenceClassification (score head not built)"
    assert data["total"] == body
    last = invoke("params", str(reward_dir), "-f", "csv").stdout.strip().splitlines()[-1]
    assert last.startswith("total (body only),") and f",{body}," in last and "score head" in last


def test_params_of_a_whole_model_has_no_label(invoke, tmp_path: Path) -> None:
    path = write_config(tmp_path / "lm", _config("llama", "LlamaForCausalLM"))
    assert "body only" not in invoke("params", str(path)).stdout
    assert json.loads(invoke("params", str(path), "-f", "json").stdout)["body_only"] is None


def test_import_config_carries_the_label_into_the_spec(invoke, reward_dir: Path) -> None:
    result = invoke("import-config", str(reward_dir))
    assert result.exit_code == 0, result.output
    assert "body_only: LlamaForSequenceClassification (score head not built)" in result.stdout
    assert parse_spec_text(result.stdout) == spec_from_config_dir(reward_dir)


@pytest.mark.parametrize("command", ["params", "import-config"])
def test_refused_class_through_the_cli_is_one_line(invoke, tmp_path: Path, command: str) -> None:
    path = write_config(tmp_path / "enc", {"model_type": "t5", "architectures": ["T5EncoderModel"]})
    result = invoke(command, str(path))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "T5EncoderModel" in result.stderr
    assert "Traceback" not in result.stderr


def test_body_only_checkpoint_loads_without_its_head(tmp_path: Path) -> None:
    """GPT2ForSequenceClassification's score.weight is the head tfcli leaves out: skipped."""
    tensors = gpt2_tensors(np.random.default_rng(0))
    tensors["score.weight"] = np.ones((2, 8), np.float32)
    config = GPT2_CONFIG | {"architectures": ["GPT2ForSequenceClassification"]}
    path = write_model(tmp_path / "cls", config, tensors)
    spec = spec_from_config_dir(path)
    weights = load_weights(path, spec)
    assert weights.lm_head is None and count_parameters(weights) == total_parameters(spec)
