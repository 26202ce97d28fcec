"""Hugging Face config.json -> Spec, one small mapping function per model family.

Each family merges its config over the defaults of the matching transformers config class
(`DEFAULTS`), so a config.json that omits a key means what it means to transformers. Features
tfcli's engine does not model raise BadInputError; the approximations we accept are listed in
the spec's description so they travel into `tfcli import-config` output.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tfcli.errors import BadInputError, SpecConsistencyError
from tfcli.spec import Spec

Config = dict[str, Any]

# Defaults of the transformers 5 config classes (GPT2Config(), BertConfig(), ...), for the keys
# we read. Sizes default too, exactly as transformers would load a config that omits them.
DEFAULTS: dict[str, Config] = {
    "gpt2": {
        "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
        "n_inner": None, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
        "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
        "add_cross_attention": False, "tie_word_embeddings": True,
    },
    "bert": {
        "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
        "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
        "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
        "position_embedding_type": "absolute", "is_decoder": False, "add_cross_attention": False,
    },
    "llama": {
        "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
        "head_dim": None, "hidden_act": "silu", "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "rope_theta": 10000.0,
        "attention_bias": False, "mlp_bias": False, "sliding_window": None,
    },
    "t5": {
        "vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 2048, "num_layers": 6,
        "num_decoder_layers": None, "num_heads": 8, "relative_attention_num_buckets": 32,
        "relative_attention_max_distance": 128, "layer_norm_epsilon": 1e-6,
        "feed_forward_proj": "relu", "tie_word_embeddings": True, "n_positions": 512,
    },
}
DEFAULTS["mistral"] = DEFAULTS["llama"] | {
    "intermediate_size": 14336, "num_key_value_heads": 8, "max_position_embeddings": 131072,
    "sliding_window": 4096,
}
DEFAULTS["mixtral"] = DEFAULTS["mistral"] | {
    "sliding_window": None, "rms_norm_eps": 1e-5, "rope_theta": 1e6,
    "num_local_experts": 8, "num_experts_per_tok": 2,
}

# HF activation names (ACT2FN keys) -> spec.activation for a plain FFN.
ACTIVATION_NAMES = {
    "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh", "relu": "relu", "silu": "silu", "swish": "silu",
}
# `architectures` entries without an LM head (the bare base model).
HEADLESS = {"GPT2Model", "LlamaModel", "MistralModel", "MixtralModel", "T5Model"}
# BERT classes that drop the pooler (add_pooling_layer=False).
BERT_WITHOUT_POOLER = {"BertForMaskedLM", "BertLMHeadModel", "BertForTokenClassification",
                       "BertForQuestionAnswering"}


def unsupported(config: Config, message: str) -> BadInputError:
    kind = config.get("model_type", "?")
    return BadInputError(f"config.json (model_type '{kind}'): {message}")


def _activation(config: Config, value: str, key: str) -> str:
    if value not in ACTIVATION_NAMES:
        raise unsupported(config, f"{key} '{value}' is not supported "
                                  f"(supported: {', '.join(sorted(ACTIVATION_NAMES))})")
    return ACTIVATION_NAMES[value]


def _architecture(config: Config) -> str:
    names = config.get("architectures") or []
    return str(names[0]) if names else ""


def _require_false(config: Config, *keys: str) -> None:
    for key in keys:
        if config.get(key):
            raise unsupported(config, f"{key} = {config[key]!r} is not supported")


# --- families --------------------------------------------------------------------------------


def _gpt2(c: Config) -> tuple[Config, list[str]]:
    _require_false(c, "scale_attn_by_inverse_layer_idx", "add_cross_attention")
    fields = {
        "family": "decoder", "vocab_size": c["vocab_size"], "max_seq_len": c["n_positions"],
        "d_model": c["n_embd"], "n_heads": c["n_head"], "n_layers": c["n_layer"],
        "d_ff": c["n_inner"] or 4 * c["n_embd"],
        "activation": _activation(c, c["activation_function"], "activation_function"),
        "norm": "layernorm", "norm_placement": "pre", "norm_eps": float(c["layer_norm_epsilon"]),
        "positions": "learned", "bias": True, "tie_embeddings": bool(c["tie_word_embeddings"]),
        "lm_head": _architecture(c) not in HEADLESS,
    }
    if not c["scale_attn_weights"]:
        fields["attention_scale"] = 1.0
    return fields, []


def _bert(c: Config) -> tuple[Config, list[str]]:
    _require_false(c, "is_decoder", "add_cross_attention")
    if c["position_embedding_type"] != "absolute":
        raise unsupported(c, f"position_embedding_type '{c['position_embedding_type']}' is not "
                             "supported (only 'absolute')")
    fields = {
        "family": "encoder", "vocab_size": c["vocab_size"],
        "max_seq_len": c["max_position_embeddings"], "d_model": c["hidden_size"],
        "n_heads": c["num_attention_heads"], "n_layers": c["num_hidden_layers"],
        "d_ff": c["intermediate_size"], "activation": _activation(c, c["hidden_act"], "hidden_act"),
        "norm": "layernorm", "norm_placement": "post", "norm_eps": float(c["layer_norm_eps"]),
        "positions": "learned", "bias": True, "embedding_norm": True,
        "type_vocab_size": c["type_vocab_size"], "lm_head": False,
        "pooler": _architecture(c) not in BERT_WITHOUT_POOLER,
    }
    return fields, ["BertModel body only: task heads (cls.*, classifier.*) are not loaded"]


def _rope_theta(c: Config) -> float:
    """RoPE base, from transformers 5 `rope_parameters` or the older top-level keys."""
    params = c.get("rope_parameters") or {}
    scaling = c.get("rope_scaling") or {}
    kind = params.get("rope_type") or scaling.get("rope_type") or scaling.get("type") or "default"
    if kind != "default":
        raise unsupported(c, f"RoPE scaling '{kind}' is not supported (only plain RoPE)")
    if params.get("partial_rotary_factor", c.get("partial_rotary_factor", 1.0)) != 1.0:
        raise unsupported(c, "partial_rotary_factor other than 1.0 is not supported")
    return float(params.get("rope_theta", c["rope_theta"]))


def _llama(c: Config) -> tuple[Config, list[str]]:
    if c["hidden_act"] not in ("silu", "swish"):
        raise unsupported(c, f"hidden_act '{c['hidden_act']}' is not supported (only silu)")
    d_model, n_heads = c["hidden_size"], c["num_attention_heads"]
    fields: Config = {
        "family": "decoder", "vocab_size": c["vocab_size"],
        "max_seq_len": c["max_position_embeddings"], "d_model": d_model, "n_heads": n_heads,
        "n_kv_heads": c["num_key_value_heads"] or n_heads, "d_head": c["head_dim"] or d_model // n_heads,
        "n_layers": c["num_hidden_layers"], "d_ff": c["intermediate_size"],
        "activation": "swiglu", "norm": "rmsnorm", "norm_placement": "pre",
        "norm_eps": float(c["rms_norm_eps"]), "positions": "rope", "rope_theta": _rope_theta(c),
        "bias": False, "attention_bias": bool(c["attention_bias"]), "ffn_bias": bool(c["mlp_bias"]),
        "tie_embeddings": bool(c["tie_word_embeddings"]),
        "lm_head": _architecture(c) not in HEADLESS,
    }
    if c.get("model_type") == "mixtral":
        fields |= {"n_experts": c["num_local_experts"], "experts_per_token": c["num_experts_per_tok"]}
    return fields, _cap_at_sliding_window(c["sliding_window"], fields)


def _cap_at_sliding_window(window: int | None, fields: Config) -> list[str]:
    """Sliding-window attention equals full causal attention for sequences no longer than the
    window, so capping max_seq_len at the window keeps every input tfcli accepts exact."""
    if window is None or window >= fields["max_seq_len"]:
        return []
    note = f"max_seq_len capped at sliding_window {window} (config allows {fields['max_seq_len']})"
    fields["max_seq_len"] = window
    return [note]


def _t5_activation(c: Config) -> tuple[str, list[str]]:
    proj = c["feed_forward_proj"]
    gated, _, act = proj.rpartition("-")
    if gated not in ("", "gated"):
        raise unsupported(c, f"feed_forward_proj '{proj}' is not a valid T5 activation")
    if not gated:
        return _activation(c, act, "feed_forward_proj"), []
    if act == "gelu":  # HF runs 'gated-gelu' with gelu_new, the tanh approximation
        return "geglu_tanh", []
    if act in ("silu", "swish"):
        return "swiglu", []
    raise unsupported(c, f"feed_forward_proj '{proj}' is not supported "
                         "(supported: relu, gelu, gated-gelu, gated-silu)")


def _t5(c: Config) -> tuple[Config, list[str]]:
    activation, notes = _t5_activation(c)
    tied = bool(c["tie_word_embeddings"])
    # transformers 5 writes tie_word_embeddings: true always and keeps T5 v1.1's "no rescale"
    # in scale_decoder_outputs; older configs say both with tie_word_embeddings.
    rescale = bool(c.get("scale_decoder_outputs", tied))
    head = _architecture(c) not in HEADLESS
    fields: Config = {
        "family": "encoder-decoder", "vocab_size": c["vocab_size"],
        "max_seq_len": c["n_positions"], "d_model": c["d_model"], "n_heads": c["num_heads"],
        "d_head": c["d_kv"], "n_layers": c["num_layers"],
        "n_decoder_layers": c["num_decoder_layers"] or c["num_layers"],
        "d_ff": c["d_ff"], "activation": activation, "norm": "rmsnorm", "norm_placement": "pre",
        "norm_eps": float(c["layer_norm_epsilon"]), "positions": "relative",
        "relative_buckets": c["relative_attention_num_buckets"],
        "relative_max_distance": c["relative_attention_max_distance"], "bias": False,
        "attention_scale": 1.0, "tie_embeddings": tied, "lm_head": head,
        "tied_head_rescale": tied and rescale and head,
    }
    if rescale and not tied:
        raise unsupported(c, "a rescaled but untied output head is not supported")
    return fields, notes


FAMILIES: dict[str, Callable[[Config], tuple[Config, list[str]]]] = {
    "gpt2": _gpt2, "bert": _bert, "llama": _llama, "mistral": _llama, "mixtral": _llama, "t5": _t5,
}
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted(FAMILIES))
# `architectures` names, for configs that lack model_type.
ARCHITECTURE_TYPES = {
    "GPT2Model": "gpt2", "GPT2LMHeadModel": "gpt2", "BertModel": "bert",
    "BertForMaskedLM": "bert", "BertForPreTraining": "bert", "LlamaForCausalLM": "llama",
    "LlamaModel": "llama", "MistralForCausalLM": "mistral", "MistralModel": "mistral",
    "MixtralForCausalLM": "mixtral", "MixtralModel": "mixtral",
    "T5ForConditionalGeneration": "t5", "T5Model": "t5",
}


def model_type(config: Config) -> str:
    """The supported family of a config, or a BadInputError naming what it is."""
    kind = config.get("model_type") or ARCHITECTURE_TYPES.get(_architecture(config), "")
    if kind not in FAMILIES:
        shown = f"model_type '{kind}'" if kind else f"architectures {config.get('architectures')}"
        raise BadInputError(f"config.json: {shown} is not supported "
                            f"(supported: {', '.join(SUPPORTED_MODEL_TYPES)})")
    return kind


def spec_from_config(config: Config, source: str) -> Spec:
    """A Spec for a Hugging Face config.json mapping; `source` is where it came from."""
    kind = model_type(config)
    merged = DEFAULTS[kind] | config
    try:
        fields, notes = FAMILIES[kind](merged)
    except (KeyError, TypeError) as exc:
        raise unsupported(config, f"missing or malformed value: {exc}") from None
    name = Path(str(config.get("_name_or_path") or source)).name or kind
    arch = _architecture(config) or kind
    description = f"{arch} imported from config.json" + "".join(f"; {n}" for n in notes)
    try:
        return Spec.model_validate({"name": name, "description": description, "source": source} | fields)
    except SpecConsistencyError as exc:
        raise unsupported(config, f"gives an inconsistent spec: {exc.message}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise unsupported(config, f"gives an invalid spec: {problems}") from None


def read_config(path: str | Path) -> Config:
    """The parsed config.json of a model directory (or the file itself)."""
    path = Path(path)
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise BadInputError(f"{path}: no config.json (expected a Hugging Face model directory)")
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInputError(f"{file}: cannot be read as JSON: {exc}") from None
    if not isinstance(config, dict):
        raise BadInputError(f"{file}: must hold a JSON object, got {type(config).__name__}")
    return config


def spec_from_config_dir(path: str | Path) -> Spec:
    """The Spec of a Hugging Face model directory, from its config.json."""
    return spec_from_config(read_config(path), source=str(path))
