"""The language model of vision-language wrappers (Gemma 3, Mistral Small 3.x, LLaVA, Llama 4,
Qwen2.5-VL) against
transformers: tfcli counts exactly the wrapper's `model.language_model` plus `lm_head` (tied
once), says in the description, params' notes, JSON and checkpoint verdict that the vision
tower and projector are not counted, and runs the language model to transformers' logits on
text (no image tokens)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.parity.saved_models import save_random
from tests.parity.test_hf_parity import F32

pytestmark = pytest.mark.slow

VOCAB = 300  # the image tokens' ids sit at its end, outside the text tokens used
TEXT = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "num_hidden_layers": 2, "intermediate_size": 96, "vocab_size": VOCAB,
        "max_position_embeddings": 64, "pad_token_id": 0}


def _gemma3() -> object:
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration
    text = TEXT | {"sliding_window": 4, "query_pre_attn_scalar": 16}
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
              "num_attention_heads": 2, "image_size": 28, "patch_size": 14}
    return Gemma3ForConditionalGeneration(Gemma3Config(
        text_config=text, vision_config=vision, mm_tokens_per_image=4, image_token_index=299,
        boi_token_index=297, eoi_token_index=298))


def _mistral3() -> object:
    from transformers import Mistral3Config, Mistral3ForConditionalGeneration
    text = TEXT | {"model_type": "mistral", "sliding_window": None}
    vision = {"model_type": "pixtral", "hidden_size": 32, "intermediate_size": 64,
              "num_hidden_layers": 1, "num_attention_heads": 2, "image_size": 28,
              "patch_size": 14, "head_dim": 16}
    return Mistral3ForConditionalGeneration(Mistral3Config(
        text_config=text, vision_config=vision, image_token_index=299, spatial_merge_size=1,
        tie_word_embeddings=False))


def _llava() -> object:
    from transformers import LlavaConfig, LlavaForConditionalGeneration
    text = TEXT | {"model_type": "llama"}
    vision = {"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 64,
              "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 28,
              "patch_size": 14, "projection_dim": 32}
    return LlavaForConditionalGeneration(LlavaConfig(
        text_config=text, vision_config=vision, image_token_index=299))


def _llama4() -> object:
    """The wrapper holds a whole Llama4ForCausalLM (language_model.model.*, language_model.lm_head)."""
    from transformers import Llama4Config, Llama4ForConditionalGeneration
    text = TEXT | {"model_type": "llama4_text", "intermediate_size_mlp": 96,
                   "intermediate_size": 32, "num_local_experts": 2, "attention_chunk_size": 4,
                   "no_rope_layer_interval": 2}
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
              "num_attention_heads": 2, "image_size": 28, "patch_size": 14,
              "vision_output_dim": 32, "projector_input_dim": 32, "projector_output_dim": 64}
    return Llama4ForConditionalGeneration(Llama4Config(
        text_config=text, vision_config=vision, image_token_index=299, boi_token_index=297,
        eoi_token_index=298))


def _qwen2_5_vl() -> object:
    """M-RoPE over sections (2, 3, 3) of the 8 frequencies: on text, the three position ids are
    the same, so it is the 1-D RoPE tfcli runs; q/k/v biases."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    text = {k: v for k, v in TEXT.items() if k != "head_dim"} | {
        "model_type": "qwen2_5_vl_text", "bos_token_id": 1, "eos_token_id": 2,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0,
                            "mrope_section": [2, 3, 3]}}
    vision = {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
              "out_hidden_size": 64, "fullatt_block_indexes": [0]}
    return Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig(
        text_config=text, vision_config=vision, image_token_id=299, video_token_id=298,
        vision_start_token_id=297, vision_end_token_id=296))


BUILDERS: dict[str, Callable[[], object]] = {"gemma3": _gemma3, "mistral3": _mistral3,
                                            "llava": _llava, "llama4": _llama4,
                                            "qwen2_5_vl": _qwen2_5_vl}


@pytest.fixture(scope="module", params=list(BUILDERS))
def saved(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Path]:
    path = tmp_path_factory.mktemp(request.param)
    return save_random(BUILDERS[request.param], path, std=0.15), path


def _language_model_parameters(model: object) -> int:
    """transformers' own count of the language model and head, a tied head once (Llama 4's
    wrapper holds both in its language_model)."""
    parts = ((model.language_model,) if not hasattr(model, "model")  # type: ignore[attr-defined]
             else (model.model.language_model, model.lm_head))  # type: ignore[attr-defined]
    seen = {id(p): p for module in parts for p in module.parameters()}
    return sum(p.numel() for p in seen.values())


def test_params_counts_the_language_model_and_says_what_it_leaves_out(
        saved: tuple[object, Path], invoke) -> None:  # noqa: ANN001
    model, path = saved
    result = invoke("params", str(path), "-f", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["total"] == _language_model_parameters(model)
    towers = model.num_parameters() - report["total"]  # type: ignore[attr-defined]
    assert towers > 0
    assert any("vision tower and the multi-modal projector" in n and "not counted" in n
               for n in report["notes"]), report["notes"]
    stored = report["stored_weights"]
    assert stored["equal"] and stored["differences"] == []
    assert stored["not_counted"].endswith(f"tensors of {towers:,} parameters")
    verdict = invoke("params", str(path))
    assert "not counted: the vision tower" in " ".join(verdict.output.split())


def test_the_language_model_runs_to_transformers_logits(saved: tuple[object, Path]) -> None:
    import torch

    from tfcli.checkpoints import load_checkpoint
    from tfcli.engine.model import ModelInput, forward
    model, path = saved
    tokens = np.random.default_rng(1).integers(1, 200, size=(2, 10))
    mask = np.ones_like(tokens)
    mask[1, -3:] = 0
    # transformers 5.24's Llama4ForConditionalGeneration.forward fails on text alone (it reads
    # image_outputs from its language model's output, which has none): its language_model runs
    text_model = getattr(model, "language_model", model) if not hasattr(model, "model") else model
    with torch.no_grad():
        want = text_model(input_ids=torch.from_numpy(tokens),  # type: ignore[operator]
                          attention_mask=torch.from_numpy(mask)).logits.numpy()
    spec, weights = load_checkpoint(path)
    got = forward(spec, weights, ModelInput(tokens, attention_mask=mask)).logits
    real = mask.astype(bool)
    np.testing.assert_allclose(got[real], want[real], **F32)


def test_qwen2_5_vl_flat_published_config_counts_the_language_model() -> None:
    """Qwen2.5-VL-7B-Instruct's config.json keeps the language model's keys at its top level
    (rope_scaling type mrope): transformers' language model and head, built from it on the meta
    device, equal tfcli's count."""
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    from tests.parity.published_configs import QWEN2_5_VL_7B
    from tfcli.checkpoints.configs import spec_from_config
    from tfcli.spec.counts import total_parameters
    given = {k: v for k, v in QWEN2_5_VL_7B.items() if k not in ("architectures", "model_type")}
    with torch.device("meta"):
        model = Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig(**given))
    spec = spec_from_config(QWEN2_5_VL_7B, "config.json")
    assert total_parameters(spec) == _language_model_parameters(model) == 7_615_616_512
    assert "its language model and head only" in spec.description


@pytest.mark.parametrize(("config_class", "model_class"), [
    ("Gemma3Config", "Gemma3ForConditionalGeneration"),  # gemma-3-4b's text shape
    ("Mistral3Config", "Mistral3ForConditionalGeneration"),  # Mistral Small 3.1 24B's
    ("LlavaConfig", "LlavaForConditionalGeneration"),  # LLaVA 1.5 7B's (Llama 2 7B)
    ("Llama4Config", "Llama4ForConditionalGeneration"),  # Llama 4 Scout's
    ("Qwen2_5_VLConfig", "Qwen2_5_VLForConditionalGeneration"),  # a 72B-shaped text model
])
def test_full_size_default_configs_count_the_language_model(config_class: str,
                                                            model_class: str) -> None:
    """The config classes' defaults are the published models' shapes: built on the meta
    device, transformers' language model and head equal tfcli's count of the config.json."""
    import torch
    import transformers

    from tests.parity.meta_totals import hf_config_dict
    from tfcli.checkpoints.configs import spec_from_config
    from tfcli.spec.counts import total_parameters
    config = hf_config_dict(config_class, model_class)
    with torch.device("meta"):
        model = getattr(transformers, model_class)(getattr(transformers, config_class)())
    assert total_parameters(spec_from_config(config, "config.json")) == \
        _language_model_parameters(model)
