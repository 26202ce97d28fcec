"""tfcli.checkpoints without torch: config.json mapping, YAML export, loader errors.

Checkpoints here are written with safetensors.numpy from hand-listed GPT-2 tensor names, so
every failure mode (missing, mis-shaped, unexpected tensor; no config.json) is one edit away
from a valid directory. Parity with transformers lives in tests/parity/.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from tfcli.spec.counts import total_parameters
from tfcli.checkpoints import (
    SUPPORTED_MODEL_TYPES,
    load_checkpoint,
    load_weights,
    spec_from_config,
    spec_from_config_dir,
    spec_to_yaml,
)
from tfcli.checkpoints.loader import canonical_names
from tfcli.checkpoints.families.bert import TABLE as BERT
from tfcli.engine.layout import fused_projection
from tfcli.engine.weights import count_parameters
from tfcli.core.errors import BadInputError, SpecError
from tfcli.spec.load import parse_spec_text
from tfcli.sources import load_spec

D, VOCAB, POSITIONS = 8, 16, 8
GPT2_CONFIG = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": D,
               "n_head": 2, "n_layer": 1, "vocab_size": VOCAB, "n_positions": POSITIONS}


def gpt2_tensors(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A 1-block GPT2LMHeadModel checkpoint as stored by transformers (Conv1D is (in, out))."""
    shapes = {
        "wte.weight": (VOCAB, D), "wpe.weight": (POSITIONS, D),
        "h.0.ln_1.weight": (D,), "h.0.ln_1.bias": (D,),
        "h.0.attn.c_attn.weight": (D, 3 * D), "h.0.attn.c_attn.bias": (3 * D,),
        "h.0.attn.c_proj.weight": (D, D), "h.0.attn.c_proj.bias": (D,),
        "h.0.ln_2.weight": (D,), "h.0.ln_2.bias": (D,),
        "h.0.mlp.c_fc.weight": (D, 4 * D), "h.0.mlp.c_fc.bias": (4 * D,),
        "h.0.mlp.c_proj.weight": (4 * D, D), "h.0.mlp.c_proj.bias": (D,),
        "ln_f.weight": (D,), "ln_f.bias": (D,),
    }
    return {f"transformer.{k}": rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}


def write_model(path: Path, config: dict, tensors: dict[str, np.ndarray]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config))
    save_file(tensors, str(path / "model.safetensors"))
    return path


@pytest.fixture
def tensors() -> dict[str, np.ndarray]:
    return gpt2_tensors(np.random.default_rng(0))


@pytest.fixture
def gpt2_dir(tmp_path: Path, tensors: dict[str, np.ndarray]) -> Path:
    return write_model(tmp_path / "tiny-gpt2", GPT2_CONFIG, tensors)


# --- loading a valid checkpoint ---------------------------------------------------------------


def test_gpt2_tensors_land_in_the_right_places(gpt2_dir: Path, tensors: dict) -> None:
    spec, w = load_checkpoint(gpt2_dir)
    c_attn = tensors["transformer.h.0.attn.c_attn.weight"]
    block = w.decoder.blocks[0]
    np.testing.assert_array_equal(block.attn.wq, c_attn[:, :D])
    np.testing.assert_array_equal(block.attn.wv, c_attn[:, 2 * D:])
    np.testing.assert_array_equal(block.ffn.w_down, tensors["transformer.h.0.mlp.c_proj.weight"])
    np.testing.assert_array_equal(w.decoder.final_norm.bias, tensors["transformer.ln_f.bias"])
    assert w.lm_head is None and spec.tie_embeddings  # tied: the embedding is the head
    assert count_parameters(w, spec) == total_parameters(spec)


def test_loaded_weights_are_laid_out_for_decoding(gpt2_dir: Path) -> None:
    """In NumPy's own memory (huge pages), Q/K/V fused, down projections transposed in memory."""
    _, w = load_checkpoint(gpt2_dir)
    block = w.decoder.blocks[0]
    qkv = fused_projection(block.attn, ("wq", "wk", "wv"), ("bq", "bk", "bv"))
    assert qkv is not None and qkv[0].flags.owndata and qkv[1] is not None
    assert block.ffn.w_down.flags.f_contiguous and block.ffn.w_down.flags.owndata
    for array in (block.ffn.w_up, block.attn.wo, w.token_embedding, w.position_embedding):
        assert array.flags.owndata, "a view of safetensors' buffer"


def test_load_spec_accepts_a_model_directory(gpt2_dir: Path) -> None:
    assert load_spec(str(gpt2_dir)) == spec_from_config_dir(gpt2_dir)


def test_float64_and_unprefixed_names(tmp_path: Path, tensors: dict) -> None:
    bare = {k.removeprefix("transformer."): v for k, v in tensors.items()}  # as in openai-community/gpt2
    bare["h.0.attn.bias"] = np.ones((1, 1, POSITIONS, POSITIONS), np.float32)  # old mask buffer
    path = write_model(tmp_path / "bare", GPT2_CONFIG, bare)
    w = load_weights(path, spec_from_config_dir(path), dtype=np.float64)
    assert w.token_embedding.dtype == np.float64
    np.testing.assert_array_equal(w.token_embedding, bare["wte.weight"])


def test_sharded_checkpoint(tmp_path: Path, tensors: dict) -> None:
    path = tmp_path / "sharded"
    path.mkdir()
    (path / "config.json").write_text(json.dumps(GPT2_CONFIG))
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[:7], "model-00002-of-00002.safetensors": names[7:]}
    for file, part in shards.items():
        save_file({n: tensors[n] for n in part}, str(path / file))
    index = {"weight_map": {n: file for file, part in shards.items() for n in part}}
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    w = load_weights(path, spec_from_config_dir(path))
    np.testing.assert_array_equal(w.decoder.final_norm.scale, tensors["transformer.ln_f.weight"])
    (path / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(BadInputError, match="shard 'model-00002-of-00002.safetensors' is missing"):
        load_weights(path, spec_from_config_dir(path))


# --- loader errors name the thing ---------------------------------------------------------------


def test_missing_tensor_is_named(tmp_path: Path, tensors: dict) -> None:
    del tensors["transformer.h.0.mlp.c_fc.bias"]
    path = write_model(tmp_path / "m", GPT2_CONFIG, tensors)
    with pytest.raises(BadInputError, match=r"missing tensor\(s\) transformer\.h\.0\.mlp\.c_fc\.bias"):
        load_weights(path, spec_from_config_dir(path))


def test_misshaped_tensor_names_expected_and_actual(tmp_path: Path, tensors: dict) -> None:
    tensors["transformer.wpe.weight"] = np.zeros((POSITIONS // 2, D), np.float32)
    path = write_model(tmp_path / "m", GPT2_CONFIG, tensors)
    with pytest.raises(BadInputError) as info:
        load_weights(path, spec_from_config_dir(path))
    assert "'transformer.wpe.weight' has shape [4, 8], expected [8, 8]" in info.value.message


def test_unexpected_tensor_is_reported(tmp_path: Path, tensors: dict) -> None:
    tensors["transformer.h.0.attn.q_norm.weight"] = np.ones(D, np.float32)
    path = write_model(tmp_path / "m", GPT2_CONFIG, tensors)
    with pytest.raises(BadInputError, match=r"unexpected tensor\(s\) transformer\.h\.0\.attn\.q_norm"):
        load_weights(path, spec_from_config_dir(path))


def test_spec_with_more_layers_than_the_checkpoint(gpt2_dir: Path) -> None:
    spec = spec_from_config_dir(gpt2_dir).with_layers(2)
    with pytest.raises(BadInputError, match=r"transformer\.h\.1\.ln_1\.weight"):
        load_weights(gpt2_dir, spec)


def test_directory_without_config_json(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="no config.json"):
        spec_from_config_dir(tmp_path)
    with pytest.raises(BadInputError, match="no config.json"):
        load_weights(tmp_path, load_spec("gpt2"))
    with pytest.raises(SpecError, match="without config.json"):
        load_spec(str(tmp_path))


def test_directory_without_safetensors(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(GPT2_CONFIG))
    with pytest.raises(BadInputError, match="no model.safetensors"):
        load_weights(tmp_path, spec_from_config_dir(tmp_path))


def test_invalid_json(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(BadInputError, match="cannot be read as JSON"):
        spec_from_config_dir(tmp_path)


def test_unknown_model_type_points_at_the_supported_ones() -> None:
    with pytest.raises(BadInputError) as info:
        spec_from_config({"model_type": "mamba"}, "x")  # a state-space model
    assert "model_type 'mamba' is not supported" in info.value.message
    assert f"tfcli reads {len(SUPPORTED_MODEL_TYPES)} model types: docs/families.md" in \
        info.value.message
    with pytest.raises(BadInputError, match="did you mean 'starcoder2'"):
        spec_from_config({"model_type": "starcoder"}, "x")


# --- config.json mapping ------------------------------------------------------------------------

LLAMA_CONFIG = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
                "num_key_value_heads": 2, "num_hidden_layers": 2, "intermediate_size": 128,
                "vocab_size": 100, "max_position_embeddings": 256, "rms_norm_eps": 1e-5,
                "rope_theta": 500000.0}


def test_config_defaults_follow_transformers() -> None:
    spec = spec_from_config({"model_type": "gpt2"}, "gpt2-dir")
    expected = load_spec("gpt2")
    assert spec.model_dump(exclude={"name", "description", "source"}) == \
        expected.model_dump(exclude={"name", "description", "source"})
    assert spec.name == "gpt2-dir" and spec.source == "gpt2-dir"


def test_llama_fields() -> None:
    spec = spec_from_config(LLAMA_CONFIG, "x")
    assert (spec.n_kv_heads, spec.d_head, spec.rope_theta, spec.norm_eps) == (2, 16, 500000.0, 1e-5)
    assert (spec.activation, spec.norm, spec.positions, spec.bias) == ("swiglu", "rmsnorm", "rope", False)
    assert not spec.tie_embeddings and spec.lm_head


def test_transformers5_rope_parameters() -> None:
    config = LLAMA_CONFIG | {"rope_parameters": {"rope_type": "default", "rope_theta": 1234.0}}
    assert spec_from_config(config, "x").rope_theta == 1234.0


@pytest.mark.parametrize("scaling", [
    {"rope_scaling": {"rope_type": "su", "factor": 8.0}},
    {"rope_scaling": {"type": "mrope", "factor": 2.0}},
    {"rope_parameters": {"rope_type": "proportional", "rope_theta": 1e4}},
])
def test_unmodelled_rope_scaling_is_refused(scaling: dict) -> None:
    with pytest.raises(BadInputError, match="RoPE scaling .* is not supported"):
        spec_from_config(LLAMA_CONFIG | scaling, "x")


@pytest.mark.parametrize(("scaling", "key"), [
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, "rope_scaling.low_freq_factor"),
    ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4}}, "rope_parameters.factor"),
])
def test_incomplete_rope_scaling_names_the_key(scaling: dict, key: str) -> None:
    with pytest.raises(BadInputError, match=f"field '{key}': is missing"):
        spec_from_config(LLAMA_CONFIG | scaling, "x")


@pytest.mark.parametrize("model_type", ["mistral", "mixtral"])
def test_sliding_window_is_imported(model_type: str) -> None:
    extra = {"num_local_experts": 4, "num_experts_per_tok": 2} if model_type == "mixtral" else {}
    config = LLAMA_CONFIG | extra | {"model_type": model_type}
    spec = spec_from_config(config | {"sliding_window": 64}, "x")
    assert (spec.sliding_window, spec.max_seq_len) == (64, 256)
    # a window as long as the context hides nothing: left out, as is an explicit null
    assert spec_from_config(config | {"sliding_window": 256}, "x").sliding_window is None
    assert spec_from_config(config | {"sliding_window": None}, "x").sliding_window is None


def test_llama_ignores_sliding_window() -> None:
    # transformers' Llama has no sliding window; a stray key in its config.json does nothing
    assert spec_from_config(LLAMA_CONFIG | {"sliding_window": 64}, "x").sliding_window is None


@pytest.mark.parametrize(("config", "field"), [
    ({"model_type": "gpt2", "scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx"),
    ({"model_type": "gpt2", "activation_function": "quick_gelu"}, "activation_function 'quick_gelu'"),
    ({"model_type": "bert", "position_embedding_type": "relative_key"}, "position_embedding_type"),
    ({"model_type": "llama", "hidden_act": "gelu"}, "hidden_act 'gelu'"),
    ({"model_type": "t5", "feed_forward_proj": "gated-relu"}, "feed_forward_proj 'gated-relu'"),
    ({"model_type": "gpt2", "n_embd": 10, "n_head": 3}, "n_heads"),
])
def test_unsupported_or_inconsistent_configs_name_the_key(config: dict, field: str) -> None:
    with pytest.raises(BadInputError, match=field):
        spec_from_config(config, "x")


def test_t5_variants() -> None:
    v1_1 = spec_from_config({"model_type": "t5", "feed_forward_proj": "gated-gelu",
                             "tie_word_embeddings": False, "num_decoder_layers": 8}, "x")
    assert v1_1.activation == "geglu_tanh"  # HF's gelu_new on the gate: exact, no note
    assert (v1_1.tie_embeddings, v1_1.tied_head_rescale) == (False, False)
    assert (v1_1.encoder_layers, v1_1.decoder_layers) == (6, 8)
    assert v1_1.description == "t5 imported from config.json"  # no approximation noted
    # transformers 5 writes tie_word_embeddings: true and keeps v1.1's "no rescale" separately
    saved_by_v5 = spec_from_config({"model_type": "t5", "scale_decoder_outputs": False}, "x")
    assert saved_by_v5.tie_embeddings and not saved_by_v5.tied_head_rescale


def test_architectures_without_model_type() -> None:
    spec = spec_from_config({"architectures": ["BertModel"], "num_hidden_layers": 2}, "x")
    assert spec.family == "encoder" and spec.pooler and not spec.lm_head


def test_mixtral_named_only_by_architectures_keeps_its_experts() -> None:
    config = {k: v for k, v in LLAMA_CONFIG.items() if k != "model_type"}
    spec = spec_from_config(config | {"architectures": ["MixtralForCausalLM"]}, "x")
    assert (spec.n_experts, spec.experts_per_token) == (8, 2)


def test_gamma_beta_names_are_canonicalised() -> None:
    names = canonical_names(BERT, ["bert.embeddings.LayerNorm.gamma", "bert.pooler.dense.weight"])
    assert names == {"bert.embeddings.LayerNorm.weight": "bert.embeddings.LayerNorm.gamma",
                     "bert.pooler.dense.weight": "bert.pooler.dense.weight"}


# --- YAML export --------------------------------------------------------------------------------

CONFIGS = {
    "gpt2": {"model_type": "gpt2", "n_inner": 100, "scale_attn_weights": False},
    "bert": {"model_type": "bert", "architectures": ["BertForMaskedLM"]},
    "llama": LLAMA_CONFIG | {"attention_bias": True, "tie_word_embeddings": True},
    "mixtral": LLAMA_CONFIG | {"model_type": "mixtral", "num_local_experts": 4},
    "t5": {"model_type": "t5", "d_kv": 32, "num_decoder_layers": 3},
}


@pytest.mark.parametrize("kind", list(CONFIGS))
def test_yaml_round_trips_with_only_needed_fields(kind: str) -> None:
    spec = spec_from_config(CONFIGS[kind], f"/models/{kind}")
    text = spec_to_yaml(spec)
    assert text.startswith(f"# generated from /models/{kind}\n")
    assert parse_spec_text(text) == spec
    assert "init_std" not in text and "n_encoder_layers" not in text  # defaults and derived


# --- malformed input: one BadInputError naming the file and field, never a traceback -----------

MALFORMED_CONFIGS = [  # (config.json, field named, what the message says is wrong)
    ({"architectures": 5}, "architectures", "expected a list of strings, got 5"),
    ({"model_type": ["llama"]}, "model_type", "expected a string, got ['llama']"),
    ({"model_type": "llama", "num_attention_heads": 0, "hidden_size": 64},
     "num_attention_heads", "must be positive, got 0"),
    ({"model_type": "llama", "rope_scaling": "yes"}, "rope_scaling",
     "expected an object or null, got 'yes'"),
    ({"model_type": "llama", "rope_theta": "big"}, "rope_theta", "expected a number, got 'big'"),
    ({"model_type": "t5", "feed_forward_proj": 5}, "feed_forward_proj", "expected a string, got 5"),
    (LLAMA_CONFIG | {"hidden_size": "64"}, "hidden_size", "expected an integer, got '64'"),
    (GPT2_CONFIG | {"n_layer": True}, "n_layer", "expected an integer, got True"),
    (GPT2_CONFIG | {"n_head": 2.0}, "n_head", "expected an integer, got 2.0"),
    (GPT2_CONFIG | {"vocab_size": -3}, "vocab_size", "must be positive, got -3"),
    (GPT2_CONFIG | {"n_positions": None}, "n_positions", "expected an integer, got None"),
    (GPT2_CONFIG | {"layer_norm_epsilon": float("nan")}, "layer_norm_epsilon",
     "expected a finite number, got nan"),
    (GPT2_CONFIG | {"layer_norm_epsilon": 0}, "layer_norm_epsilon", "must be positive, got 0"),
    (GPT2_CONFIG | {"tie_word_embeddings": "yes"}, "tie_word_embeddings",
     "expected true or false, got 'yes'"),
    ({"model_type": "bert", "type_vocab_size": -1}, "type_vocab_size",
     "must not be negative, got -1"),
    (LLAMA_CONFIG | {"rope_parameters": {"rope_type": 3}}, "rope_parameters.rope_type",
     "expected a string, got 3"),
    (LLAMA_CONFIG | {"rope_parameters": {"rope_theta": 1e400}}, "rope_parameters.rope_theta",
     "expected a finite number, got inf"),
    (LLAMA_CONFIG | {"model_type": "mixtral", "num_experts_per_tok": 0}, "num_experts_per_tok",
     "must be positive, got 0"),
    (LLAMA_CONFIG | {"model_type": "mistral", "sliding_window": "4k"}, "sliding_window", "expected an integer, got '4k'"),
]


def write_config(path: Path, config: dict) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config))
    return path


@pytest.mark.parametrize(("config", "field", "problem"), MALFORMED_CONFIGS)
def test_malformed_config_names_file_and_field(tmp_path: Path, config: dict, field: str,
                                                problem: str) -> None:
    path = write_config(tmp_path / "m", config)
    with pytest.raises(BadInputError) as info:
        spec_from_config_dir(path)
    assert info.value.message.startswith(f"{path / 'config.json'}: field '{field}': ")
    assert problem in info.value.message


def test_type_vocab_size_zero_is_allowed() -> None:
    """0 means 'no token types', unlike the sizes that must be positive."""
    assert spec_from_config({"model_type": "bert", "type_vocab_size": 0}, "x").type_vocab_size == 0


@pytest.mark.parametrize("command", [["import-config"], ["params"], ["run"], ["validate"]])
def test_malformed_config_through_the_cli(invoke, tmp_path: Path, command: list[str]) -> None:
    path = write_config(tmp_path / "m", {"model_type": "llama", "rope_theta": "big"})
    result = invoke(*command, str(path))
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    def squeezed(text: str) -> str:  # validate's table wraps long messages, even inside a path
        return "".join(text.split())

    expected = f"{path / 'config.json'}: field 'rope_theta': expected a number, got 'big'"
    assert squeezed(expected) in squeezed(result.output)
    assert "Traceback" not in result.output


def _truncated(tensors: dict[str, np.ndarray]) -> bytes:
    from safetensors.numpy import save

    return save(tensors)[:-10]  # header intact, data cut short


@pytest.mark.parametrize(("content", "problem"), [
    (b"garbage\n", "exceeds the file's 8 bytes"),
    (b"", "shorter than the 8-byte header length"),
    (b"\x02\x00\x00\x00\x00\x00\x00\x00[]", "header is not a JSON object"),
    (b"\x05\x00\x00\x00\x00\x00\x00\x00{nope", "Expecting property name"),
])
def test_junk_safetensors_is_not_a_safetensors_file(tmp_path: Path, content: bytes,
                                                    problem: str) -> None:
    path = write_config(tmp_path / "m", GPT2_CONFIG)
    (path / "model.safetensors").write_bytes(content)
    with pytest.raises(BadInputError) as info:
        load_weights(path, spec_from_config_dir(path))
    assert info.value.message.startswith(f"{path / 'model.safetensors'}: not a safetensors file (")
    assert problem in info.value.message


def test_truncated_safetensors_is_reported(tmp_path: Path, tensors: dict) -> None:
    path = write_config(tmp_path / "m", GPT2_CONFIG)
    (path / "model.safetensors").write_bytes(_truncated(tensors))
    with pytest.raises(BadInputError, match="model.safetensors: cannot be opened as safetensors"):
        load_weights(path, spec_from_config_dir(path))


def test_junk_safetensors_through_the_cli(invoke, gpt2_dir: Path) -> None:
    (gpt2_dir / "model.safetensors").write_bytes(b"garbage\n")
    result = invoke("run", str(gpt2_dir), "--tokens", "1,2")
    assert result.exit_code == 2, result.output
    assert f"{gpt2_dir / 'model.safetensors'}: not a safetensors file" in result.stderr


def test_bad_tokenizer_json_is_named(gpt2_dir: Path) -> None:
    from tfcli.checkpoints.tokenizer import get_tokenizer

    (gpt2_dir / "tokenizer.json").write_text("{not json")
    with pytest.raises(BadInputError) as info:
        get_tokenizer(VOCAB, str(gpt2_dir))
    assert info.value.message.startswith(f"{gpt2_dir / 'tokenizer.json'}: cannot be loaded as a tokenizer (")


@pytest.mark.parametrize("args", [["run", "--text", "a b"], ["generate", "--text", "a"]])
def test_bad_tokenizer_json_through_the_cli(invoke, gpt2_dir: Path, args: list[str]) -> None:
    (gpt2_dir / "tokenizer.json").write_text("{not json")
    result = invoke(args[0], str(gpt2_dir), *args[1:])
    assert result.exit_code == 2, result.output
    assert f"{gpt2_dir / 'tokenizer.json'}: cannot be loaded as a tokenizer" in result.stderr
