"""Qwen2 / Qwen2.5 / Qwen3 at full size against transformers on the meta device, from the
published config.json values (written out below, as the checkpoints ship them).

Three checks per model: tfcli's total from the imported config equals transformers'
`num_parameters()` of the class in `architectures` built on the meta device (and the figure
the issue quotes); import-config reproduces the bundled spec field for field where one is
bundled; and that spec round-trips through YAML.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parity.meta_totals import hf_total
from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.export import spec_to_yaml
from tfcli.spec.counts import components, total_parameters
from tfcli.spec.load import load_spec

IDENTITY = ("name", "description", "source")

# published config.json values (the keys that shape the model), and the totals
CONFIGS: dict[str, tuple[dict[str, object], int, str | None]] = {
    "Qwen2.5-0.5B": ({
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
        "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
        "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
        "tie_word_embeddings": True, "use_sliding_window": False, "vocab_size": 151936,
        "hidden_act": "silu",
    }, 494_032_768, None),
    "Qwen2.5-7B": ({
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
        "intermediate_size": 18944, "max_position_embeddings": 131072, "max_window_layers": 28,
        "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072,
        "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 152064,
        "hidden_act": "silu",
    }, 7_615_616_512, "qwen2.5-7b"),
    "Qwen3-8B": ({
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False,
        "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 12288,
        "max_position_embeddings": 40960, "max_window_layers": 36, "num_attention_heads": 32,
        "num_hidden_layers": 36, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
        "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None,
        "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 151936,
    }, 8_190_735_360, "qwen3-8b"),
}



@pytest.mark.parametrize("name", list(CONFIGS))
def test_total_equals_transformers_on_meta_device(name: str) -> None:
    config, published, _ = CONFIGS[name]
    spec = spec_from_config(config, source=name)
    assert total_parameters(spec) == hf_total(config) == published


@pytest.mark.parametrize("name", [n for n, (_, _, b) in CONFIGS.items() if b])
def test_import_reproduces_the_bundled_spec(name: str) -> None:
    config, published, bundled = CONFIGS[name]
    imported = spec_from_config(config, source=name).model_dump()
    expected = load_spec(str(bundled)).model_dump()
    assert {k: v for k, v in imported.items() if k not in IDENTITY} == \
        {k: v for k, v in expected.items() if k not in IDENTITY}
    assert total_parameters(load_spec(str(bundled))) == published


@pytest.mark.parametrize("name", ["qwen2.5-7b", "qwen3-8b"])
def test_bundled_spec_round_trips_through_yaml(name: str, tmp_path: Path) -> None:
    spec = load_spec(name)
    file = tmp_path / f"{name}.yaml"
    file.write_text(spec_to_yaml(spec))
    assert load_spec(str(file)) == spec


def test_params_name_the_new_components() -> None:
    """Qwen2.5: q/k/v biases and no o bias; Qwen3: q/k norm weights of d_head, no biases."""
    qwen2 = {c.path: c.shape for c in components(load_spec("qwen2.5-7b"))}
    assert qwen2["decoder.blocks.*.attn.bq"] == (3584,)
    assert qwen2["decoder.blocks.*.attn.bk"] == qwen2["decoder.blocks.*.attn.bv"] == (512,)
    assert "decoder.blocks.*.attn.bo" not in qwen2
    qwen3 = {c.path: c.shape for c in components(load_spec("qwen3-8b"))}
    assert qwen3["decoder.blocks.*.attn.q_norm.scale"] == (128,)
    assert qwen3["decoder.blocks.*.attn.k_norm.scale"] == (128,)
    assert not [p for p in qwen3 if p.split(".")[-1] in ("bq", "bk", "bv", "bo")]
