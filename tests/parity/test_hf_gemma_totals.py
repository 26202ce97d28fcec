"""Gemma 1 / 2 / 3 at full size against transformers on the meta device, from the published
config.json values (written out below, as the checkpoints ship them).

Per model: tfcli's total from the imported config equals transformers' `num_parameters()` of
the class in `architectures` built on the meta device (and the figure the issue quotes);
import-config reproduces the bundled spec field for field; that spec round-trips through
YAML; `params` names the new components; and the hybrid KV cache of gemma-2-9b at 8,192 tokens
keeps 4,096 tokens on its local layers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parity.meta_totals import hf_total
from tfcli.analysis.params_report import build_params_report
from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.export import spec_to_yaml
from tfcli.spec.counts import components, kv_cache_bytes, total_parameters
from tfcli.spec.load import load_spec

IDENTITY = ("name", "description", "source")

# published config.json values (the keys that shape the model), and the totals
CONFIGS: dict[str, tuple[dict[str, object], int, str]] = {
    "Gemma-2B": ({
        "architectures": ["GemmaForCausalLM"], "model_type": "gemma", "attention_bias": False,
        "head_dim": 256, "hidden_act": "gelu", "hidden_size": 2048,
        "intermediate_size": 16384, "max_position_embeddings": 8192, "num_attention_heads": 8,
        "num_hidden_layers": 18, "num_key_value_heads": 1, "pad_token_id": 0,
        "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 10000.0,
        "vocab_size": 256000,
    }, 2_506_172_416, "gemma-2b"),
    "Gemma-2-9B": ({
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "attention_bias": False,
        "attn_logit_softcapping": 50.0, "cache_implementation": "hybrid",
        "final_logit_softcapping": 30.0, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh",
        "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3584,
        "intermediate_size": 14336, "max_position_embeddings": 8192, "num_attention_heads": 16,
        "num_hidden_layers": 42, "num_key_value_heads": 8, "pad_token_id": 0,
        "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
        "sliding_window": 4096, "sliding_window_size": 4096, "vocab_size": 256000,
    }, 9_241_705_984, "gemma-2-9b"),
    "Gemma-3-1B": ({
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
        "attention_bias": False, "attn_logit_softcapping": None,
        "cache_implementation": "hybrid", "final_logit_softcapping": None, "head_dim": 256,
        "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152,
        "intermediate_size": 6912, "max_position_embeddings": 32768, "num_attention_heads": 4,
        "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0,
        "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
        "rope_scaling": None, "rope_theta": 1000000, "sliding_window": 512,
        "sliding_window_pattern": 6, "vocab_size": 262144,
    }, 999_885_952, "gemma-3-1b"),
}



@pytest.mark.parametrize("name", list(CONFIGS))
def test_total_equals_transformers_on_meta_device(name: str) -> None:
    config, published, _ = CONFIGS[name]
    spec = spec_from_config(config, source=name)
    assert total_parameters(spec) == hf_total(config) == published


@pytest.mark.parametrize("name", list(CONFIGS))
def test_import_reproduces_the_bundled_spec(name: str) -> None:
    config, published, bundled = CONFIGS[name]
    imported = spec_from_config(config, source=name).model_dump()
    expected = load_spec(bundled).model_dump()
    assert {k: v for k, v in imported.items() if k not in IDENTITY} == \
        {k: v for k, v in expected.items() if k not in IDENTITY}
    assert total_parameters(load_spec(bundled)) == published
    assert load_spec(bundled).source.startswith("https://huggingface.co/google/")


@pytest.mark.parametrize("name", [bundled for _, _, bundled in CONFIGS.values()])
def test_bundled_spec_round_trips_through_yaml(name: str, tmp_path: Path) -> None:
    spec = load_spec(name)
    file = tmp_path / f"{name}.yaml"
    file.write_text(spec_to_yaml(spec))
    assert load_spec(str(file)) == spec


def test_params_name_the_new_components() -> None:
    """Gemma 2 / 3: four norms per block (sandwich); Gemma 3: q/k norm weights of d_head."""
    gemma2 = {c.path: c.shape for c in components(load_spec("gemma-2-9b"))}
    for norm in ("attn_norm", "attn_post_norm", "ffn_norm", "ffn_post_norm"):
        assert gemma2[f"decoder.blocks.*.{norm}.scale"] == (3584,)
    gemma3 = {c.path: c.shape for c in components(load_spec("gemma-3-1b"))}
    assert gemma3["decoder.blocks.*.attn.q_norm.scale"] == (256,)
    assert gemma3["decoder.blocks.*.attn.k_norm.scale"] == (256,)
    gemma1 = {c.path for c in components(load_spec("gemma-2b"))}
    assert "decoder.blocks.*.attn_post_norm.scale" not in gemma1


def test_gemma_2_9b_hybrid_kv_cache_at_8192_tokens() -> None:
    spec = load_spec("gemma-2-9b")
    kv = build_params_report(spec, context=8192).kv_cache
    per_layer_token = 2 * 8 * 256 * 4  # K and V of 8 heads of 256, float32
    assert (kv.window, kv.local_layers, kv.layers) == (4096, 21, 42)
    assert kv.window_bytes == 21 * 4096 * per_layer_token + 21 * 8192 * per_layer_token
    assert kv.total_bytes == kv_cache_bytes(spec, 8192) == 42 * 8192 * per_layer_token
    # Gemma 3 1B at its full 32,768 tokens: 22 local layers of 512 tokens, 4 global
    gemma3 = build_params_report(load_spec("gemma-3-1b")).kv_cache
    assert (gemma3.local_layers, gemma3.layers, gemma3.context) == (22, 26, 32768)
    assert gemma3.window_bytes == (22 * 512 + 4 * 32768) * 2 * 256 * 4


def test_newer_config_spellings_import_alike() -> None:
    """transformers 5's nested rope_parameters and a full layer_types list give the same spec
    as the published Gemma 3 keys."""
    config, _, bundled = CONFIGS["Gemma-3-1B"]
    newer = {k: v for k, v in config.items()
             if k not in ("rope_theta", "rope_local_base_freq", "rope_scaling",
                          "sliding_window_pattern")}
    newer |= {"rope_parameters": {
        "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
        "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 4
        + ["sliding_attention"] * 2}
    assert spec_from_config(newer, "x").model_dump(exclude=set(IDENTITY)) == \
        load_spec(bundled).model_dump(exclude=set(IDENTITY))
