"""Hugging Face config.json -> Spec, one small mapping function per model family.

Each family merges its config over the defaults of the matching transformers config class
(`DEFAULTS`), so a config.json that omits a key means what it means to transformers. Features
tfcli's engine does not model raise BadInputError; the approximations we accept are listed in
the spec's description so they travel into `tfcli import-config` output.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from tfcli.checkpoints.fields import Config, ConfigFields, int_literal, shown
from tfcli.checkpoints.heads import ARCHITECTURE_TYPES, ARCHITECTURES, REFUSED, Architecture, body_only_label, classes_for
from tfcli.errors import BadInputError, SpecConsistencyError, clip
from tfcli.spec import Spec

CONFIG_FILE = "config.json"
MAX_CONFIG_BYTES = 16 * 2**20  # the largest real config.json files are tens of KiB

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
DEFAULTS["qwen2"] = DEFAULTS["llama"] | {
    "vocab_size": 151936, "intermediate_size": 22016, "num_key_value_heads": 32,
    "max_position_embeddings": 32768, "use_sliding_window": False, "layer_types": None,
}
DEFAULTS["qwen3"] = DEFAULTS["qwen2"] | {"head_dim": 128}

# HF activation names (ACT2FN keys) -> spec.activation for a plain FFN.
ACTIVATION_NAMES = {
    "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh", "relu": "relu", "silu": "silu", "swish": "silu",
}


def unsupported(c: ConfigFields, message: str) -> BadInputError:
    """A config.json feature tfcli does not model (its fields are well formed)."""
    return BadInputError(f"{c.file} (model_type '{c.values['model_type']}'): {message}")


def _activation(c: ConfigFields, value: str, key: str) -> str:
    if value not in ACTIVATION_NAMES:
        raise unsupported(c, f"{key} {shown(value)} is not supported "
                             f"(supported: {', '.join(sorted(ACTIVATION_NAMES))})")
    return ACTIVATION_NAMES[value]


def _architecture(c: ConfigFields) -> str:
    names = c.names("architectures")
    return names[0] if names else ""


def _require_false(c: ConfigFields, *keys: str) -> None:
    for key in keys:
        if c.flag(key, default=False):
            raise unsupported(c, f"{key} = True is not supported")


# --- families --------------------------------------------------------------------------------
# Sizes are read with integer() (a positive int), epsilons and RoPE bases with number() (a
# positive finite float): a zero or negative size would otherwise surface as a ZeroDivisionError
# or a pydantic message that names the spec field instead of the config.json key.


def _gpt2(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    _require_false(c, "scale_attn_by_inverse_layer_idx", "add_cross_attention")
    d_model = c.integer("n_embd")
    fields = {
        "family": "decoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("n_positions"), "d_model": d_model,
        "n_heads": c.integer("n_head"), "n_layers": c.integer("n_layer"),
        "d_ff": c.optional_integer("n_inner") or 4 * d_model,
        "activation": _activation(c, c.text("activation_function"), "activation_function"),
        "norm": "layernorm", "norm_placement": "pre", "norm_eps": c.number("layer_norm_epsilon"),
        "positions": "learned", "bias": True, "tie_embeddings": c.flag("tie_word_embeddings"),
        "lm_head": arch.lm_head,
    }
    if not c.flag("scale_attn_weights"):
        fields["attention_scale"] = 1.0
    return fields, []


def _bert(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    _require_false(c, "is_decoder", "add_cross_attention")
    positions = c.text("position_embedding_type")
    if positions != "absolute":
        raise unsupported(c, f"position_embedding_type {shown(positions)} is not supported "
                             "(only 'absolute')")
    fields = {
        "family": "encoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("max_position_embeddings"), "d_model": c.integer("hidden_size"),
        "n_heads": c.integer("num_attention_heads"), "n_layers": c.integer("num_hidden_layers"),
        "d_ff": c.integer("intermediate_size"),
        "activation": _activation(c, c.text("hidden_act"), "hidden_act"),
        "norm": "layernorm", "norm_placement": "post", "norm_eps": c.number("layer_norm_eps"),
        "positions": "learned", "bias": True, "embedding_norm": True,
        "type_vocab_size": c.integer("type_vocab_size", minimum=0), "lm_head": False,
        "pooler": arch.pooler,
    }
    return fields, []


def _rope_kind(params: ConfigFields, scaling: ConfigFields) -> str:
    return (params.optional_text("rope_type") or scaling.optional_text("rope_type")
            or scaling.optional_text("type") or "default")


# config keys each RoPE scaling type reads -> rope_scaling fields (number or integer or flag)
_ROPE_SCALING_KEYS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "linear": (("factor", "factor", "number"),),
    "dynamic": (("factor", "factor", "number"),),
    "llama3": (("factor", "factor", "number"), ("low_freq_factor", "low_freq_factor", "number"),
               ("high_freq_factor", "high_freq_factor", "number"),
               ("original_max_position_embeddings", "original_max_seq_len", "integer")),
    "yarn": (("factor", "factor", "number"),
             ("original_max_position_embeddings", "original_max_seq_len", "integer"),
             ("beta_fast", "beta_fast", "number"), ("beta_slow", "beta_slow", "number"),
             ("attention_factor", "attention_factor", "number"), ("mscale", "mscale", "number"),
             ("mscale_all_dim", "mscale_all_dim", "number"), ("truncate", "truncate", "flag")),
    "longrope": (("original_max_position_embeddings", "original_max_seq_len", "integer"),
                 ("short_factor", "short_factor", "numbers"), ("long_factor", "long_factor", "numbers"),
                 ("attention_factor", "attention_factor", "number")),
}
_REQUIRED_ROPE_KEYS = frozenset({"factor", "low_freq_factor", "high_freq_factor",
                                 "original_max_position_embeddings", "short_factor", "long_factor"})
# transformers falls back to max_position_embeddings for these (dynamic: always uses it)
_ORIGINAL_FALLBACK = frozenset({"yarn", "longrope"})


def _rope_scaling(c: ConfigFields) -> Config | None:
    """`rope_scaling` of the spec, from transformers 5 `rope_parameters` or the older
    `rope_scaling` object; None for plain RoPE. A type tfcli does not model is refused by name."""
    params, scaling = c.section("rope_parameters"), c.section("rope_scaling")
    kind = _rope_kind(params, scaling)
    if kind == "default":
        return None
    if kind not in _ROPE_SCALING_KEYS:
        raise unsupported(c, f"RoPE scaling {shown(kind)} is not supported "
                             f"(supported: {', '.join(sorted(_ROPE_SCALING_KEYS))})")
    source = params if params.has("factor") or not scaling.values else scaling
    return _rope_scaling_fields(c, source, kind)


def _rope_scaling_fields(c: ConfigFields, source: ConfigFields, kind: str) -> Config:
    """The fields `kind` reads, from `source` (the rope_parameters or rope_scaling object);
    lengths and factors that transformers derives from max_position_embeddings derived alike."""
    fields: Config = {"type": kind}
    for key, field, kind_of in _ROPE_SCALING_KEYS[kind]:
        if (kind in _ORIGINAL_FALLBACK and key == "original_max_position_embeddings"
                and not source.has(key)):
            fields[field] = c.integer("max_position_embeddings")
        elif key in _REQUIRED_ROPE_KEYS or source.values.get(key) is not None:
            fields[field] = _rope_value(source, key, kind_of)
    if kind == "dynamic":
        fields["original_max_seq_len"] = c.integer("max_position_embeddings")
    if kind == "longrope" and source.values.get("factor") is None:  # as transformers: the ratio
        fields["factor"] = c.integer("max_position_embeddings") / fields["original_max_seq_len"]
    elif kind == "longrope":
        fields["factor"] = source.number("factor")
    return fields


def _rope_value(source: ConfigFields, key: str, kind_of: str) -> object:
    if kind_of != "numbers":
        return getattr(source, kind_of)(key)
    values = source.values.get(key)
    if not isinstance(values, list) or len(values) > 4096 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < math.inf
            for v in values):
        raise source.error(key, f"expected a list of positive numbers, got {shown(values)}")
    return [float(v) for v in values]


def _rope_theta(c: ConfigFields) -> float:
    """RoPE base, from transformers 5 `rope_parameters` or the older top-level keys."""
    params = c.section("rope_parameters")
    # the nested value wins, as in transformers 5; the top-level key is the older spelling
    partial = params if params.has("partial_rotary_factor") else c
    if partial.number("partial_rotary_factor", default=1.0, positive=False) != 1.0:
        raise unsupported(c, "partial_rotary_factor other than 1.0 is not supported")
    return (params if params.has("rope_theta") else c).number("rope_theta")


def _llama(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    act = c.text("hidden_act")
    if act not in ("silu", "swish"):
        raise unsupported(c, f"hidden_act {shown(act)} is not supported (only silu)")
    d_model, n_heads = c.integer("hidden_size"), c.integer("num_attention_heads")
    fields: Config = {
        "family": "decoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("max_position_embeddings"), "d_model": d_model,
        "n_heads": n_heads, "n_kv_heads": c.optional_integer("num_key_value_heads") or n_heads,
        "d_head": c.optional_integer("head_dim") or d_model // n_heads,
        "n_layers": c.integer("num_hidden_layers"), "d_ff": c.integer("intermediate_size"),
        "activation": "swiglu", "norm": "rmsnorm", "norm_placement": "pre",
        "norm_eps": c.number("rms_norm_eps"), "positions": "rope", "rope_theta": _rope_theta(c),
        "bias": False, "attention_bias": c.flag("attention_bias"), "ffn_bias": c.flag("mlp_bias"),
        "tie_embeddings": c.flag("tie_word_embeddings"),
        "lm_head": arch.lm_head,
    }
    scaling = _rope_scaling(c)
    if scaling is not None:
        fields["rope_scaling"] = scaling
    if scaling is not None and scaling["type"] == "dynamic":  # it extends the context by factor
        fields["max_seq_len"] = int(scaling["factor"] * fields["max_seq_len"])
    if c.values["model_type"] == "mixtral":
        fields |= {"n_experts": c.integer("num_local_experts"),
                   "experts_per_token": c.integer("num_experts_per_tok")}
    # transformers reads sliding_window only for these two; a window as long as the context
    # never hides a token, so it is left out of the spec
    window = c.optional_integer("sliding_window") if c.values["model_type"] != "llama" else None
    if window is not None and window < fields["max_seq_len"]:
        fields["sliding_window"] = window
    return fields, []


def _qwen(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    """Qwen2 / 2.5: biases on q, k, v and none on o (not a config key); Qwen3: per-head q/k
    RMSNorm, `attention_bias` on all four projections. Sliding windows are refused by name."""
    _require_false(c, "use_sliding_window")
    windowed = [t for t in c.names("layer_types") if t != "full_attention"]
    if windowed:
        raise unsupported(c, f"layer_types {shown(windowed[0])} is not supported "
                             "(only 'full_attention')")
    fields, notes = _llama(c, arch)
    fields.pop("sliding_window", None)  # only read with use_sliding_window, refused above
    fields["ffn_bias"] = False  # no MLP bias in either (an `mlp_bias` key means nothing to them)
    if c.values["model_type"] == "qwen2":
        fields |= {"attention_bias": True, "attention_out_bias": False}
    else:
        fields["qk_norm"] = "per_head"
    return fields, notes


def _t5_activation(c: ConfigFields) -> tuple[str, list[str]]:
    proj = c.text("feed_forward_proj")
    gated, _, act = proj.rpartition("-")
    if gated not in ("", "gated"):
        raise unsupported(c, f"feed_forward_proj {shown(proj)} is not a valid T5 activation")
    if not gated:
        return _activation(c, act, "feed_forward_proj"), []
    if act == "gelu":  # HF runs 'gated-gelu' with gelu_new, the tanh approximation
        return "geglu_tanh", []
    if act in ("silu", "swish"):
        return "swiglu", []
    raise unsupported(c, f"feed_forward_proj {shown(proj)} is not supported "
                         "(supported: relu, gelu, gated-gelu, gated-silu)")


def _t5(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    activation, notes = _t5_activation(c)
    tied = c.flag("tie_word_embeddings")
    # transformers 5 writes tie_word_embeddings: true always and keeps T5 v1.1's "no rescale"
    # in scale_decoder_outputs; older configs say both with tie_word_embeddings.
    rescale = c.flag("scale_decoder_outputs", default=tied)
    head = arch.lm_head
    n_layers = c.integer("num_layers")
    fields: Config = {
        "family": "encoder-decoder", "vocab_size": c.integer("vocab_size"),
        "max_seq_len": c.integer("n_positions"), "d_model": c.integer("d_model"),
        "n_heads": c.integer("num_heads"), "d_head": c.integer("d_kv"), "n_layers": n_layers,
        "n_decoder_layers": c.optional_integer("num_decoder_layers") or n_layers,
        "d_ff": c.integer("d_ff"), "activation": activation, "norm": "rmsnorm",
        "norm_placement": "pre", "norm_eps": c.number("layer_norm_epsilon"),
        "positions": "relative", "relative_buckets": c.integer("relative_attention_num_buckets"),
        "relative_max_distance": c.integer("relative_attention_max_distance"), "bias": False,
        "attention_scale": 1.0, "tie_embeddings": tied, "lm_head": head,
        "tied_head_rescale": tied and rescale and head,
    }
    if rescale and not tied:
        raise unsupported(c, "a rescaled but untied output head is not supported")
    return fields, notes


FAMILIES: dict[str, Callable[[ConfigFields, Architecture], tuple[Config, list[str]]]] = {
    "gpt2": _gpt2, "bert": _bert, "llama": _llama, "mistral": _llama, "mixtral": _llama, "t5": _t5,
    "qwen2": _qwen, "qwen3": _qwen,
}
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted(FAMILIES))


def model_type(config: Config, file: str = CONFIG_FILE) -> str:
    """The supported family of a config, or a BadInputError naming what it is."""
    c = ConfigFields(config, file)
    architecture = _architecture(c)
    kind = c.optional_text("model_type") or ARCHITECTURE_TYPES.get(architecture, "")
    if kind not in FAMILIES:
        what = f"model_type {shown(kind)}" if kind else f"architectures {shown(c.names('architectures'))}"
        raise BadInputError(f"{file}: {what} is not supported "
                            f"(supported: {', '.join(SUPPORTED_MODEL_TYPES)})")
    return kind


def architecture(c: ConfigFields, kind: str) -> Architecture:
    """What the config's (first) `architectures` class is to tfcli, or a BadInputError naming
    a class tfcli does not build: counting it as its family's LM would count another model."""
    name, classes = _architecture(c), classes_for(kind)
    if not name:
        return next(iter(classes.values()))
    if name in classes:
        return classes[name]
    reason = REFUSED.get(name, "a model class tfcli does not build")
    raise BadInputError(f"{c.file}: architectures {shown(name)} is not supported: {reason} "
                        f"(supported for model_type '{kind}': {', '.join(ARCHITECTURES[kind])})")


def _spec_name(name_or_path: str | None, source: str, kind: str) -> str:
    """The spec's name: the last part of `_name_or_path` when it is a plain short name (it is
    shown in every table), else of `source`, else the family."""
    for candidate in (name_or_path, source):
        name = Path(candidate or "").name
        if name and len(name) <= 100 and name.isprintable():
            return name
    return kind


def spec_from_config(config: Config, source: str, *, file: str = CONFIG_FILE) -> Spec:
    """A Spec for a Hugging Face config.json mapping; `source` is where it came from and `file`
    the config file that error messages name."""
    kind = model_type(config, file)
    # the resolved kind is stored back so a config named only by `architectures` reads as its
    # family everywhere (messages, the mixtral expert fields)
    c = ConfigFields(DEFAULTS[kind] | config | {"model_type": kind}, file)
    arch = architecture(c, kind)
    fields, notes = FAMILIES[kind](c, arch)
    name = _spec_name(c.optional_text("_name_or_path"), source, kind)
    arch_name = _architecture(c) or kind
    body_only = body_only_label(arch_name, arch)
    if body_only:
        fields["body_only"] = body_only
        notes.append(f"body only: the {arch.head} head is not built or counted")
    description = f"{arch_name} imported from config.json" + "".join(f"; {n}" for n in notes)
    try:
        return Spec.model_validate({"name": name, "description": description, "source": source} | fields)
    except SpecConsistencyError as exc:
        raise unsupported(c, f"gives an inconsistent spec: {exc.message}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise unsupported(c, f"gives an invalid spec: {problems}") from None


def config_file(path: str | Path) -> Path:
    """The config.json of a model directory, or `path` itself when it names the file. An empty
    name is refused (Path('') is the current folder), as is a path the system cannot look at
    (too long, a parent not searchable): pathlib's is_dir() raises for those."""
    if isinstance(path, str) and not path:
        raise BadInputError("the model directory's name is empty: give a folder with config.json")
    folder = Path(path)
    try:
        return folder / CONFIG_FILE if folder.is_dir() else folder
    except OSError as exc:
        raise BadInputError(f"{clip(str(path))}: cannot be read ({exc.strerror or exc})") from None


class _DuplicateKey(ValueError):
    """A key given twice in one JSON object: json.loads would keep the last one silently."""


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(f"key {shown(key)} appears twice in one object")
        result[key] = value
    return result


def read_bounded(file: Path, limit: int, what: str = "a config file") -> bytes:
    """At most `limit` bytes of a regular file; a FIFO, device or directory is refused before
    anything is read (/dev/zero never ends, a FIFO may never answer). O_NONBLOCK keeps open()
    itself from waiting on a FIFO; fstat checks the file actually opened."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise BadInputError(f"{file}: cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BadInputError(f"{file}: not a regular file")
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise BadInputError(f"{file}: cannot be read ({exc.strerror})") from None
    if len(data) > limit:
        raise BadInputError(f"{file}: larger than {limit // 2**20} MiB, too large for {what}")
    return data


def strict_json(data: bytes) -> object:
    """Strict JSON: UTF-8, no duplicate keys, integer literals kept bounded (fields.int_literal).
    Every failure is a ValueError with a short message (UnicodeDecodeError is one)."""
    try:
        return json.loads(data.decode("utf-8-sig"), object_pairs_hook=_unique_keys,
                          parse_int=int_literal)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def parse_json(data: bytes, file: str | Path) -> object:
    """strict_json, its failures one BadInputError naming `file`."""
    try:
        return strict_json(data)
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{file}: not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:  # json.JSONDecodeError, _DuplicateKey, nesting
        raise BadInputError(f"{file}: cannot be read as JSON: {exc}") from None


def config_from_bytes(data: bytes, file: str | Path) -> Config:
    """The JSON object a config file's bytes hold, or a BadInputError naming `file`."""
    config = parse_json(data, file)
    if not isinstance(config, dict):
        raise BadInputError(f"{file}: must hold a JSON object, got {type(config).__name__}")
    return config


def read_config(path: str | Path) -> Config:
    """The parsed config.json of a model directory (or the file itself)."""
    file = config_file(path)
    if not file.exists():
        raise BadInputError(f"{clip(str(path))}: no config.json (expected a Hugging Face model "
                            "directory)")
    return config_from_bytes(read_bounded(file, MAX_CONFIG_BYTES), file)


def spec_from_config_dir(path: str | Path) -> Spec:
    """The Spec of a Hugging Face model directory, from its config.json (or given that file:
    the spec is still named after the directory)."""
    file = config_file(path)
    return spec_from_config(read_config(path), source=str(file.parent), file=str(file))
