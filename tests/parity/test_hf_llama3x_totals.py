"""Llama 3.1 / 3.2 (llama3 RoPE scaling, tied embeddings in 3.2) against transformers at full
size on the meta device, from the published config.json values; and import-config reproduces
the bundled specs, rope_scaling included."""

from __future__ import annotations

import pytest

import torch  # noqa: E402  (the test extra installs it: a missing one fails, never skips)
import transformers  # noqa: E402

from tfcli.checkpoints import spec_from_config  # noqa: E402
from tfcli.checkpoints.export import spec_to_yaml  # noqa: E402
from tfcli.core.errors import BadInputError  # noqa: E402
from tfcli.spec.counts import total_parameters  # noqa: E402
from tfcli.spec.model import Spec  # noqa: E402
from tfcli.spec.load import load_spec, parse_spec_text  # noqa: E402

ROPE_31 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}
# published config.json values (meta-llama/Llama-3.1-8B, meta-llama/Llama-3.2-1B)
CONFIGS = {
    "llama-3.1-8b": (8_030_261_248, {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "rope_scaling": ROPE_31,
        "tie_word_embeddings": False, "hidden_act": "silu", "attention_bias": False,
        "mlp_bias": False, "head_dim": 128}),
    "llama-3.2-1b": (1_235_814_400, {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
        "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "rope_scaling": ROPE_31 | {"factor": 32.0},
        "tie_word_embeddings": True, "hidden_act": "silu", "attention_bias": False,
        "mlp_bias": False, "head_dim": 64}),
}
IDENTITY = ("name", "description", "source")


def _architecture(spec: Spec) -> dict[str, object]:
    return {k: v for k, v in spec.model_dump().items() if k not in IDENTITY}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_total_equals_transformers_on_meta_device(name: str) -> None:
    published, config = CONFIGS[name]
    hf_config = transformers.LlamaConfig(**{k: v for k, v in config.items()
                                            if k not in ("architectures", "model_type")})
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(hf_config)
    assert model.num_parameters() == published
    assert total_parameters(load_spec(name)) == published


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_import_config_reproduces_bundled_spec(name: str) -> None:
    _, config = CONFIGS[name]
    imported = spec_from_config(config, source=f"{name} config")
    assert _architecture(imported) == _architecture(load_spec(name))
    # and through transformers 5's own saved form (rope_parameters, rope_theta inside it)
    hf_config = transformers.LlamaConfig(**{k: v for k, v in config.items()
                                            if k not in ("architectures", "model_type")})
    resaved = spec_from_config(hf_config.to_dict(), source=f"{name} resaved")
    assert _architecture(resaved) == _architecture(load_spec(name))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_spec_round_trips_through_yaml(name: str) -> None:
    spec = load_spec(name)
    assert parse_spec_text(spec_to_yaml(spec)) == spec


@pytest.mark.parametrize("kind", ["proportional", "mrope", "su"])
def test_unmodelled_rope_type_is_refused_by_name(kind: str) -> None:
    _, config = CONFIGS["llama-3.2-1b"]
    config = config | {"rope_scaling": {"rope_type": kind, "factor": 2.0}}
    with pytest.raises(BadInputError, match=f"RoPE scaling '{kind}' is not supported"):
        spec_from_config(config, source="x")


def test_dynamic_extends_the_context_by_its_factor() -> None:
    """dynamic NTK reads its original length from max_position_embeddings and grows the base
    past it: the spec keeps that length in rope_scaling and allows factor times as many tokens."""
    _, config = CONFIGS["llama-3.2-1b"]
    config = config | {"max_position_embeddings": 4096,
                       "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}
    spec = spec_from_config(config, source="x")
    assert spec.max_seq_len == 8192 and spec.rope_scaling is not None
    assert (spec.rope_scaling.type, spec.rope_scaling.original_max_seq_len) == ("dynamic", 4096)


def test_longrope_factor_defaults_to_the_context_ratio() -> None:
    _, config = CONFIGS["llama-3.2-1b"]
    rope = {"rope_type": "longrope", "original_max_position_embeddings": 4096,
            "short_factor": [1.0] * 32, "long_factor": [2.0] * 32}
    spec = spec_from_config(config | {"rope_scaling": rope}, source="x")
    assert spec.rope_scaling is not None and spec.rope_scaling.factor == 131072 / 4096
    bad = rope | {"long_factor": [2.0] * 31 + ["x"]}
    with pytest.raises(BadInputError, match="rope_scaling.long_factor"):
        spec_from_config(config | {"rope_scaling": bad}, source="x")
