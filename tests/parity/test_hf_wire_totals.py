"""OLMo 2 and Falcon (both architectures) at full size against transformers on the meta device,
from published config.json values (written out below, as the checkpoints ship them).

tfcli's total from the imported config equals transformers' `num_parameters()` of the class in
`architectures` built on the meta device, and the figure the issue quotes where it quotes one;
import-config reproduces the bundled spec field for field, which round-trips through YAML; the
params components name the new arrays; configs tfcli does not model are refused by name.
"""

from __future__ import annotations

import pytest

from pathlib import Path

from tests.parity.meta_totals import hf_total
from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.export import spec_to_yaml
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import components, total_parameters
from tfcli.spec.load import load_spec

IDENTITY = ("name", "description", "source")

# published config.json values (the keys that shape the model), and the totals
CONFIGS: dict[str, tuple[dict[str, object], int | None]] = {
    "OLMo-2-1124-7B": ({
        "architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "attention_bias": False,
        "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 11008,
        "max_position_embeddings": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
        "num_key_value_heads": 32, "rms_norm_eps": 1e-06, "rope_scaling": None,
        "rope_theta": 500000, "tie_word_embeddings": False, "vocab_size": 100352,
        "pad_token_id": 100277, "eos_token_id": 100257,
    }, 7_298_617_344),
    "OLMo-2-0425-1B": ({
        "architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "attention_bias": False,
        "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 8192,
        "max_position_embeddings": 4096, "num_attention_heads": 16, "num_hidden_layers": 16,
        "num_key_value_heads": 16, "rms_norm_eps": 1e-06, "rope_scaling": None,
        "rope_theta": 500000, "tie_word_embeddings": False, "vocab_size": 100352,
        "pad_token_id": 100277, "eos_token_id": 100257,
    }, None),
    "Falcon-7B": ({
        "architectures": ["FalconForCausalLM"], "model_type": "falcon", "alibi": False,
        "apply_residual_connection_post_layernorm": False, "bias": False, "hidden_size": 4544,
        "layer_norm_epsilon": 1e-05, "multi_query": True, "new_decoder_architecture": False,
        "num_attention_heads": 71, "num_hidden_layers": 32, "parallel_attn": True,
        "vocab_size": 65024, "bos_token_id": 11, "eos_token_id": 11,
    }, 6_921_720_704),
    "Falcon-40B": ({
        "architectures": ["FalconForCausalLM"], "model_type": "falcon", "alibi": False,
        "apply_residual_connection_post_layernorm": False, "bias": False, "hidden_size": 8192,
        "layer_norm_epsilon": 1e-05, "new_decoder_architecture": True,
        "num_attention_heads": 128, "num_hidden_layers": 60, "num_kv_heads": 8,
        "parallel_attn": True, "vocab_size": 65024, "bos_token_id": 11, "eos_token_id": 11,
    }, None),
    # Falcon 2 11B's recipe: new_decoder_architecture with one shared norm, an untied head
    "Falcon-11B": ({
        "architectures": ["FalconForCausalLM"], "model_type": "falcon", "activation": "gelu",
        "alibi": False, "bias": False, "ffn_hidden_size": 16384, "hidden_size": 4096,
        "layer_norm_epsilon": 1e-05, "max_position_embeddings": 8192, "multi_query": True,
        "new_decoder_architecture": True, "num_attention_heads": 32, "num_hidden_layers": 60,
        "num_kv_heads": 8, "num_ln_in_parallel_attn": 1, "parallel_attn": True,
        "rope_theta": 500042.0, "tie_word_embeddings": False, "vocab_size": 65024,
    }, None),
    # the sequential form (parallel_attn false) with biases and every head its own k/v
    "Falcon-sequential": ({
        "architectures": ["FalconForCausalLM"], "model_type": "falcon", "alibi": False,
        "bias": True, "hidden_size": 2048, "multi_query": False, "new_decoder_architecture": False,
        "num_attention_heads": 32, "num_hidden_layers": 24, "parallel_attn": False,
        "vocab_size": 50304,
    }, None),
}



@pytest.mark.parametrize("name", list(CONFIGS))
def test_total_equals_transformers_on_meta_device(name: str) -> None:
    config, published = CONFIGS[name]
    spec = spec_from_config(config, source=name)
    assert total_parameters(spec) == hf_total(config)
    if published is not None:
        assert total_parameters(spec) == published


# published config -> the bundled spec it must import as
BUNDLED = {"OLMo-2-1124-7B": "olmo-2-7b", "Falcon-7B": "falcon-7b"}


@pytest.mark.parametrize("name", list(BUNDLED))
def test_import_reproduces_the_bundled_spec(name: str, tmp_path: Path) -> None:
    config, published = CONFIGS[name]
    imported = spec_from_config(config, source=name).model_dump()
    bundled = load_spec(BUNDLED[name])
    assert {k: v for k, v in imported.items() if k not in IDENTITY} == \
        {k: v for k, v in bundled.model_dump().items() if k not in IDENTITY}
    assert total_parameters(bundled) == published
    assert bundled.source.startswith("https://huggingface.co/") and \
        bundled.source.endswith("/config.json")
    file = tmp_path / "spec.yaml"
    file.write_text(spec_to_yaml(bundled))
    assert load_spec(str(file)) == bundled


def test_olmo2_reads_its_wiring_and_names_the_new_components() -> None:
    spec = load_spec("olmo-2-7b")
    assert spec.norm_placement == "sublayer_post" and spec.qk_norm == "full"
    assert not spec.attention_bias and not spec.ffn_bias and spec.final_norm
    shapes = {c.path: c.shape for c in components(spec)}
    for path in ("attn_post_norm.scale", "ffn_post_norm.scale", "attn.q_norm.scale",
                 "attn.k_norm.scale"):
        assert shapes[f"decoder.blocks.*.{path}"] == (4096,)
    assert "decoder.blocks.*.attn_norm.scale" not in shapes
    assert "decoder.blocks.*.ffn_norm.scale" not in shapes


@pytest.mark.parametrize(("name", "wiring", "kv_heads", "norms"), [
    ("Falcon-7B", "one_norm", 1, ("attn_norm",)),
    ("Falcon-40B", "two_norms", 8, ("attn_norm", "ffn_norm")),
    ("Falcon-11B", "one_norm", 8, ("attn_norm",)),
    ("Falcon-sequential", "off", 32, ("attn_norm", "ffn_norm")),
])
def test_falcon_reads_its_wiring(name: str, wiring: str, kv_heads: int,
                                 norms: tuple[str, ...]) -> None:
    spec = spec_from_config(CONFIGS[name][0], source=name)
    assert spec.parallel_residual == wiring and spec.kv_heads == kv_heads
    assert spec.norm == "layernorm" and spec.activation == "gelu" and spec.positions == "rope"
    found = tuple(c.path.split(".")[3] for c in components(spec)
                  if c.path.startswith("decoder.blocks.*.") and c.path.endswith("norm.scale"))
    assert found == norms


@pytest.mark.parametrize(("changes", "message"), [
    ({"alibi": True}, "alibi"),
    ({"new_decoder_architecture": True, "parallel_attn": False}, "parallel_attn"),
    ({"num_ln_in_parallel_attn": 2}, "num_ln_in_parallel_attn"),
    ({"multi_query": False, "num_kv_heads": 7}, "num_kv_heads"),
    ({"activation": "swiglu"}, "activation"),
])
def test_falcon_refuses_what_it_does_not_model(changes: dict[str, object], message: str) -> None:
    with pytest.raises(BadInputError, match=message):
        spec_from_config(CONFIGS["Falcon-7B"][0] | changes, source="x")


def test_olmo2_refuses_what_it_does_not_model() -> None:
    config = CONFIGS["OLMo-2-0425-1B"][0] | {"hidden_act": "gelu"}
    with pytest.raises(BadInputError, match="hidden_act"):
        spec_from_config(config, source="x")
