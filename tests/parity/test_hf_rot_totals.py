"""GPT-NeoX (Pythia), GPT-J, Phi-2 and StableLM 2 at full size against transformers on the meta
device, from the published config.json values (written out below, as the checkpoints ship them).

Per model: tfcli's total from the imported config equals transformers' `num_parameters()` of the
class in `architectures` built on the meta device, and the figure the issue quotes;
import-config reproduces the bundled spec field for field, and that spec round-trips
through YAML.
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
    "pythia-1.4b": ({  # EleutherAI/pythia-1.4b
        "architectures": ["GPTNeoXForCausalLM"], "bos_token_id": 0, "eos_token_id": 0,
        "hidden_act": "gelu", "hidden_size": 2048, "initializer_range": 0.02,
        "intermediate_size": 8192, "layer_norm_eps": 1e-05, "max_position_embeddings": 2048,
        "model_type": "gpt_neox", "num_attention_heads": 16, "num_hidden_layers": 24,
        "rotary_emb_base": 10000, "rotary_pct": 0.25, "tie_word_embeddings": False,
        "torch_dtype": "float16", "use_cache": True, "use_parallel_residual": True,
        "vocab_size": 50304,
    }, 1_414_647_808, "pythia-1.4b"),
    "gpt-j-6b": ({  # EleutherAI/gpt-j-6b
        "activation_function": "gelu_new", "architectures": ["GPTJForCausalLM"],
        "attn_pdrop": 0.0, "bos_token_id": 50256, "embd_pdrop": 0.0, "eos_token_id": 50256,
        "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gptj",
        "n_embd": 4096, "n_head": 16, "n_inner": None, "n_layer": 28, "n_positions": 2048,
        "resid_pdrop": 0.0, "rotary": True, "rotary_dim": 64, "scale_attn_weights": True,
        "tie_word_embeddings": False, "use_cache": True, "vocab_size": 50400,
    }, 6_050_882_784, "gpt-j-6b"),
    "phi-2": ({  # microsoft/phi-2
        "architectures": ["PhiForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 50256,
        "embd_pdrop": 0.0, "eos_token_id": 50256, "hidden_act": "gelu_new",
        "hidden_size": 2560, "initializer_range": 0.02, "intermediate_size": 10240,
        "layer_norm_eps": 1e-05, "max_position_embeddings": 2048, "model_type": "phi",
        "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
        "partial_rotary_factor": 0.4, "qk_layernorm": False, "resid_pdrop": 0.1,
        "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": False,
        "torch_dtype": "float16", "use_cache": True, "vocab_size": 51200,
    }, 2_779_683_840, "phi-2"),
    "stablelm-2-1_6b": ({  # stabilityai/stablelm-2-1_6b
        "architectures": ["StableLmForCausalLM"], "bos_token_id": 100257,
        "eos_token_id": 100257, "hidden_act": "silu", "hidden_dropout": 0.0,
        "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 5632,
        "layer_norm_eps": 1e-05, "max_position_embeddings": 4096, "model_type": "stablelm",
        "num_attention_heads": 32, "num_hidden_layers": 24, "num_key_value_heads": 32,
        "partial_rotary_factor": 0.25, "qk_layernorm": False, "rope_scaling": None,
        "rope_theta": 10000, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "use_cache": True, "use_parallel_residual": False, "use_qkv_bias": True,
        "vocab_size": 100352,
    }, 1_644_515_328, "stablelm-2-1.6b"),
}
# what each reader makes of its config: the variant fields
EXPECTED = {
    "pythia-1.4b": {"rotary_dim": 32, "rope_pairing": "half", "parallel_residual": "two_norms",
                    "attention_bias": True, "ffn_bias": True, "lm_head_bias": False},
    "gpt-j-6b": {"rotary_dim": 64, "rope_pairing": "interleaved", "parallel_residual": "one_norm",
                 "attention_bias": False, "ffn_bias": True, "lm_head_bias": True},
    "phi-2": {"rotary_dim": 32, "rope_pairing": "half", "parallel_residual": "one_norm",
              "attention_bias": True, "ffn_bias": True, "lm_head_bias": True},
    "stablelm-2-1_6b": {"rotary_dim": 16, "rope_pairing": "half", "parallel_residual": "off",
                        "attention_bias": True, "attention_out_bias": False, "ffn_bias": False,
                        "lm_head_bias": False},
}



@pytest.mark.parametrize("name", list(CONFIGS))
def test_total_equals_transformers_on_meta_device(name: str) -> None:
    config, published, _ = CONFIGS[name]
    spec = spec_from_config(config, source=name)
    assert total_parameters(spec) == hf_total(config) == published
    assert {k: getattr(spec, k) for k in EXPECTED[name]} == EXPECTED[name]


@pytest.mark.parametrize("name", [n for n, (_, _, b) in CONFIGS.items() if b])
def test_import_reproduces_the_bundled_spec(name: str) -> None:
    config, published, bundled = CONFIGS[name]
    imported = spec_from_config(config, source=name).model_dump()
    expected = load_spec(str(bundled)).model_dump()
    assert {k: v for k, v in imported.items() if k not in IDENTITY} == \
        {k: v for k, v in expected.items() if k not in IDENTITY}
    assert total_parameters(load_spec(str(bundled))) == published
    assert load_spec(str(bundled)).source.startswith("https://huggingface.co/")


@pytest.mark.parametrize("name", [b for _, _, b in CONFIGS.values()])
def test_bundled_spec_round_trips_through_yaml(name: str, tmp_path: Path) -> None:
    spec = load_spec(name)
    file = tmp_path / f"{name}.yaml"
    file.write_text(spec_to_yaml(spec))
    assert load_spec(str(file)) == spec


def test_params_name_the_components_of_each_wiring() -> None:
    """Pythia: two norms per block and biases everywhere; GPT-J: one norm, the head's bias."""
    pythia = {c.path: c.shape for c in components(load_spec("pythia-1.4b"))}
    assert pythia["decoder.blocks.*.attn_norm.scale"] == pythia["decoder.blocks.*.ffn_norm.scale"]
    assert pythia["decoder.blocks.*.attn.bq"] == (2048,)
    gptj = {c.path: c.shape for c in components(load_spec("gpt-j-6b"))}
    assert "decoder.blocks.*.ffn_norm.scale" not in gptj
    assert gptj["lm_head_bias"] == (50400,)
    assert not [p for p in gptj if p.split(".")[-1] in ("bq", "bk", "bv", "bo")]


GPTNEOX = CONFIGS["pythia-1.4b"][0]
REFUSED = [  # (config changes, text the message names)
    ({"model_type": "phi", "qk_layernorm": True}, "qk_layernorm"),
    ({"model_type": "stablelm", "qk_layernorm": True}, "qk_layernorm"),
    ({"model_type": "stablelm", "hidden_act": "relu"}, "hidden_act"),
    ({"model_type": "phi", "tie_word_embeddings": True}, "tie_word_embeddings"),
    ({"model_type": "gptj", "rotary_dim": None}, "rotary_dim"),
    ({"model_type": "gptj", "rotary_dim": 7}, "rotary_dim"),
    ({"model_type": "gpt_neox", "rotary_pct": 1.5}, "rotary_pct"),
    ({"model_type": "gpt_neox", "rope_scaling": {"type": "su", "factor": 2.0}}, "'su'"),
]


@pytest.mark.parametrize(("changes", "named"), REFUSED)
def test_unmodelled_keys_are_refused_by_name(changes: dict, named: str) -> None:
    from tfcli.core.errors import BadInputError

    base = {"model_type": changes["model_type"], "hidden_size": 64, "num_attention_heads": 4,
            "num_hidden_layers": 1, "intermediate_size": 32, "vocab_size": 20,
            "n_embd": 64, "n_head": 4, "n_layer": 1}
    with pytest.raises(BadInputError, match=named):
        spec_from_config(base | changes, source="x")
