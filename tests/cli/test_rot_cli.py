"""GPT-NeoX, GPT-J, Phi and StableLM checkpoints through the CLI: --check-cache, trace
--execute, params components, import-config round trip; the bundled pythia-1.4b traced and
executed at two layers."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.cli.guarded import json_output as _json
from tfcli.checkpoints import spec_from_config_dir
from tfcli.sources import load_spec

SMALL = {"hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2,
         "intermediate_size": 64, "vocab_size": 64, "max_position_embeddings": 32,
         "bos_token_id": 0, "eos_token_id": 0}
MODELS = {  # model_type -> the model, built from the transformers module
    "gpt_neox": lambda t: t.GPTNeoXForCausalLM(t.GPTNeoXConfig(**SMALL, rotary_pct=0.25)),
    "gptj": lambda t: t.GPTJForCausalLM(t.GPTJConfig(vocab_size=64, n_positions=32, n_embd=32,
                                                     n_head=4, n_layer=2, rotary_dim=4,
                                                     bos_token_id=0, eos_token_id=0)),
    "phi": lambda t: t.PhiForCausalLM(t.PhiConfig(**SMALL, partial_rotary_factor=0.5)),
    "stablelm": lambda t: t.StableLmForCausalLM(t.StableLmConfig(**SMALL, num_key_value_heads=2,
                                                                 use_qkv_bias=True)),
}
# engine paths each family's params must list, and ones it must not
COMPONENTS = {
    "gpt_neox": (["attn_norm.scale", "ffn_norm.scale", "attn.bq", "attn.bo", "ffn.b_up"], ["lm_head_bias"]),
    "gptj": (["attn_norm.scale", "lm_head_bias", "ffn.b_up"], ["ffn_norm", "attn.bq", "attn.bo"]),
    "phi": (["attn_norm.bias", "attn.bq", "attn.bo", "lm_head_bias"], ["ffn_norm"]),
    "stablelm": (["attn_norm.scale", "ffn_norm.scale", "attn.bq", "ffn.w_gate"], ["attn.bo", "lm_head_bias"]),
}


@pytest.fixture(scope="module", params=list(MODELS))
def model_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
              torch: ModuleType, transformers: ModuleType) -> Path:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp(request.param)
    MODELS[request.param](transformers).save_pretrained(path, safe_serialization=True)
    return path


def test_check_cache_passes(invoke, model_dir: Path) -> None:
    data = _json(invoke, "generate", str(model_dir), "--tokens", "5,6,7", "--max-new-tokens", "6",
                 "--check-cache")
    assert data["check"]["ok"] and data["check"]["identical_tokens"]


def test_trace_execute_matches_the_analytic_rows(invoke, model_dir: Path) -> None:
    data = _json(invoke, "trace", str(model_dir), "--seq-len", "5", "--batch", "2", "--execute")
    assert data["execute"]["ok"], data["execute"]
    assert "partial rotary" in data["convention"]


def test_params_name_the_components(invoke, model_dir: Path) -> None:
    text = json.dumps(_json(invoke, "params", str(model_dir)))
    present, absent = COMPONENTS[_kind(model_dir)]
    assert all(name in text for name in present), present
    assert not [name for name in absent if name in text]


def test_import_config_round_trips(invoke, model_dir: Path, tmp_path: Path) -> None:
    result = invoke("import-config", str(model_dir))
    assert result.exit_code == 0, result.output
    file = tmp_path / "spec.yaml"
    file.write_text(result.stdout)
    assert load_spec(str(file)).model_dump(exclude={"name", "source", "description"}) == \
        spec_from_config_dir(model_dir).model_dump(exclude={"name", "source", "description"})


# a config.json key each family's reader refuses by name
REFUSED = {"gpt_neox": ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e4,
                                             "partial_rotary_factor": 1.5}},
                         "rope_parameters.partial_rotary_factor"), "gptj": ({"rotary_dim": 5}, "rotary_dim"),
           "phi": ({"qk_layernorm": True}, "qk_layernorm"),
           "stablelm": ({"qk_layernorm": True}, "qk_layernorm")}


def _kind(model_dir: Path) -> str:
    return json.loads((model_dir / "config.json").read_text())["model_type"]


def test_unmodelled_keys_are_refused_by_name(invoke, model_dir: Path, tmp_path: Path) -> None:
    change, named = REFUSED[_kind(model_dir)]
    config = json.loads((model_dir / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(config | change))
    result = invoke("params", str(tmp_path))
    assert result.exit_code == 2 and named in result.stderr
    assert "Traceback" not in result.output


def test_bundled_pythia_traces_and_executes_at_two_layers(invoke) -> None:
    data = _json(invoke, "trace", "pythia-1.4b", "--execute", "--layers", "2", "--seq-len", "4")
    assert data["execute"]["ok"], data["execute"]
    assert "the first 32 of each head's 128 dims" in data["convention"]
    assert _json(invoke, "params", "pythia-1.4b")["total"] == 1_414_647_808
