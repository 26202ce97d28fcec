"""GGUF metadata -> Spec, one reader per llama.cpp architecture (`general.architecture`).

llama.cpp writes a model's hyperparameters as `{arch}.{key}` metadata (llama.block_count,
llama.attention.head_count_kv, ...) and leaves some facts to the tensors themselves: a file
without `output.weight` ties its head to the embedding, `blk.0.attn_q.bias` means q/k/v biases,
`blk.0.attn_q_norm.weight` q/k norms (per head or over the whole projection, by its width).
Both are read here, and one tensor's data: `rope_freqs.weight`, llama.cpp's table of RoPE
divisors (Llama 3.1's scaling). What a reader does not model (shared experts, ALiBi) is refused
by name, as for config.json.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from pydantic import ValidationError

from tfcli.checkpoints.gguf.file import ITEM_KINDS, ArrayInfo, GGUFFile
from tfcli.core.errors import SpecConsistencyError
from tfcli.spec.model import Spec

Fields = dict[str, object]


class Metadata:
    """Typed reads of one architecture's `{arch}.*` keys, each failure one BadInputError."""

    def __init__(self, gguf: GGUFFile, arch: str) -> None:
        self.gguf, self.arch = gguf, arch

    def _get(self, key: str, default: object) -> object:
        full = f"{self.arch}.{key}"
        value = self.gguf.metadata.get(full, default)
        if value is _REQUIRED:
            raise self.gguf.error(f"metadata key '{full}' is missing")
        return value

    def integer(self, key: str, default: object = None) -> int:
        value = self._get(key, _REQUIRED if default is None else default)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 2**31:
            raise self.gguf.error(f"metadata key '{self.arch}.{key}': expected a positive "
                                  f"integer below 2**31, got {_shown(value)}")
        return value

    def number(self, key: str, default: float | None = None) -> float:
        value = self._get(key, _REQUIRED if default is None else default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e30:
            raise self.gguf.error(f"metadata key '{self.arch}.{key}': expected a positive "
                                  f"number, got {_shown(value)}")
        return float(value)

    def has(self, key: str) -> bool:
        return f"{self.arch}.{key}" in self.gguf.metadata

    def index(self, key: str, size: int) -> int:
        """An id into a table of `size` entries (a token id into the vocabulary)."""
        value = self._get(key, _REQUIRED)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < size:
            raise self.gguf.error(f"metadata key '{self.arch}.{key}': expected an id in "
                                  f"[0, {size:,}), got {_shown(value)}")
        return value

    def array(self, key: str, kind: type, length: int | None = None) -> list | ArrayInfo:
        """An array of `kind` items (int, float, str), of `length` when given; read in full
        (a list) or left unread by the header reader (ArrayInfo: only its item type)."""
        full = f"{self.arch}.{key}"
        value = self._get(key, _REQUIRED)
        if isinstance(value, ArrayInfo):
            good = ITEM_KINDS.get(value.item_type) is kind
            n = value.length
        elif isinstance(value, list):
            good = all(type(v) is kind for v in value)  # bool is no int here
            n = len(value)
        else:
            raise self.gguf.error(f"metadata key '{full}': expected an array, got {_shown(value)}")
        if not good:
            raise self.gguf.error(f"metadata key '{full}': expected an array of "
                                  f"{_KIND_NAMES[kind]}")
        if length is not None and n != length:
            raise self.gguf.error(f"metadata key '{full}' has {n:,} items where {length:,} "
                                  "are expected (one per token)")
        return value


_REQUIRED = object()
_KIND_NAMES = {int: "integers", float: "numbers", str: "strings", bool: "booleans"}


def _shown(value: object) -> str:
    if isinstance(value, ArrayInfo):
        return f"an array of {value.length:,} items"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _rows(gguf: GGUFFile, name: str) -> int:
    tensor = gguf.tensor(name)
    if tensor is None:
        raise gguf.error(f"has no tensor '{name}'")
    return tensor.shape[0]


def _refuse_present(gguf: GGUFFile, names: dict[str, str]) -> None:
    present = gguf.names()
    for name, what in names.items():
        if name in present:
            raise gguf.error(f"tensor '{name}' ({what}) is not supported")


def _sizes(gguf: GGUFFile, m: Metadata) -> Fields:
    """The decoder's sizes every llama.cpp architecture writes alike (GQA, a head width of its
    own where `attention.key_length` says one; the vocabulary from token_embd's rows)."""
    d_model, n_heads = m.integer("embedding_length"), m.integer("attention.head_count")
    return {
        "family": "decoder", "vocab_size": _rows(gguf, "token_embd.weight"),
        "max_seq_len": m.integer("context_length"), "d_model": d_model, "n_heads": n_heads,
        "n_kv_heads": m.integer("attention.head_count_kv", n_heads),
        "d_head": m.integer("attention.key_length", d_model // n_heads),
        "n_layers": m.integer("block_count"), "d_ff": m.integer("feed_forward_length"),
    }


def _llama_like(gguf: GGUFFile, m: Metadata) -> Fields:
    """The fields llama, qwen2 and qwen3 share: RMSNorm, SwiGLU, RoPE, GQA."""
    if m.has("expert_count"):
        raise gguf.error(f"'{m.arch}.expert_count': mixture-of-experts GGUF files of "
                         f"architecture '{m.arch}' are not supported (qwen3moe and olmoe are)")
    return _llama_body(gguf, m)


def _llama_body(gguf: GGUFFile, m: Metadata) -> Fields:
    """LLaMA's decoder as llama.cpp writes it, whatever the FFN."""
    names = gguf.names()
    fields: Fields = _sizes(gguf, m) | {
        "activation": "swiglu", "norm": "rmsnorm", "norm_placement": "pre",
        "norm_eps": m.number("attention.layer_norm_rms_epsilon"), "positions": "rope",
        "rope_theta": m.number("rope.freq_base", 10000.0), "bias": False,
        "attention_bias": "blk.0.attn_q.bias" in names,
        "tie_embeddings": "output.weight" not in names, "lm_head": True,
    }
    if "blk.0.attn_q.bias" in names and "blk.0.attn_output.bias" not in names:
        fields["attention_out_bias"] = False
    d_head = fields["d_head"]
    norm = gguf.tensor("blk.0.attn_q_norm.weight")
    if norm is not None:  # (d_head,): per head (Qwen3); the whole projection: OLMoE's
        fields["qk_norm"] = "per_head" if norm.shape[0] == d_head else "full"
    rotary = m.integer("rope.dimension_count", d_head)
    if rotary != d_head:  # partial rotary
        fields["rotary_dim"] = rotary
    if "rope_freqs.weight" in names:
        fields["rope_scaling"] = _rope_freqs(gguf, rotary // 2, fields["max_seq_len"])
    window = m.integer("attention.sliding_window", 2**31 - 1)
    if window < fields["max_seq_len"]:  # type: ignore[operator]
        fields["sliding_window"] = window
    return fields


# llama.cpp renormalises the k chosen experts' weights for these (its build_moe_ffn norm_w)
RENORMALISED_EXPERTS = {"qwen3moe": True, "olmoe": False}


def _llama_moe(gguf: GGUFFile, m: Metadata) -> Fields:
    """Qwen3-MoE, OLMoE: LLaMA's attention; every FFN the top-k of `expert_count` SwiGLU
    experts (`ffn_{gate,up,down}_exps`, stacked) behind the router `ffn_gate_inp`, with
    `{arch}.expert_weights_norm` where given, else llama.cpp's choice for the architecture."""
    _refuse_present(gguf, {"blk.0.ffn_up_shexp.weight": "shared experts"})
    fields = _llama_body(gguf, m)
    renormalised = gguf.metadata.get(f"{m.arch}.expert_weights_norm",
                                     RENORMALISED_EXPERTS[m.arch])
    if not isinstance(renormalised, bool):
        raise gguf.error(f"metadata key '{m.arch}.expert_weights_norm': expected a boolean, "
                         f"got {_shown(renormalised)}")
    fields |= {"n_experts": m.integer("expert_count"),
               "experts_per_token": m.integer("expert_used_count"), "norm_topk_prob": renormalised}
    if m.has("expert_feed_forward_length"):  # else the experts are feed_forward_length wide
        fields["expert_d_ff"] = m.integer("expert_feed_forward_length")
    return fields


SMOLLM3_NOPE_STEP = 4  # llama.cpp hard-codes it (n_no_rope_layer_step); no GGUF key says it


def _smollm3(gguf: GGUFFile, m: Metadata) -> Fields:
    """SmolLM3: LLaMA's body (q/k permuted by its LlamaModel converter) with every fourth layer
    unrotated, as llama.cpp runs it whatever the checkpoint's no_rope_layers said."""
    fields = _llama_like(gguf, m)
    n_layers = fields["n_layers"]
    if n_layers > MAX_LISTED_LAYERS:  # type: ignore[operator]
        raise gguf.error(f"metadata '{m.arch}.block_count' {n_layers:,}: at most "
                         f"{MAX_LISTED_LAYERS:,} layers (its NoPE layers are listed)")
    nope = list(range(SMOLLM3_NOPE_STEP - 1, n_layers, SMOLLM3_NOPE_STEP))  # type: ignore[arg-type]
    return fields | ({"nope_layers": nope} if nope else {})


def _granite(gguf: GGUFFile, m: Metadata) -> Fields:
    """Granite 3.x: LLaMA's body with its four scalars (`embedding_scale`, `residual_scale`,
    `attention.scale`, `logit_scale`), each left out at 1 as the config.json reader does."""
    fields = _llama_like(gguf, m)
    for key, field in (("embedding_scale", "embedding_multiplier"),
                       ("residual_scale", "residual_multiplier"),
                       ("logit_scale", "logits_scaling")):
        value = m.number(key, 1.0)
        if value != 1.0:
            fields[field] = value
    if m.has("attention.scale"):
        fields["attention_scale"] = m.number("attention.scale")
    return fields


def _starcoder2(gguf: GGUFFile, m: Metadata) -> Fields:
    """StarCoder2: pre-norm LayerNorms, GQA with RoPE (rotate-half pairs, not permuted), a
    plain GELU (tanh) MLP; biases where the tensors are; a window only where written (llama.cpp
    runs none otherwise)."""
    names = gguf.names()
    fields: Fields = _sizes(gguf, m) | {
        "activation": "gelu_tanh", "norm": "layernorm", "norm_placement": "pre",
        "norm_eps": m.number("attention.layer_norm_epsilon"), "positions": "rope",
        "rope_theta": m.number("rope.freq_base", 10000.0),
        "bias": "blk.0.attn_q.bias" in names, "ffn_bias": "blk.0.ffn_up.bias" in names,
        "tie_embeddings": "output.weight" not in names, "lm_head": True,
    }
    window = m.integer("attention.sliding_window", 2**31 - 1)
    if window < fields["max_seq_len"]:  # type: ignore[operator]
        fields["sliding_window"] = window
    return fields


COHERE2_PATTERN = 4  # llama.cpp's default for cohere2: three sliding layers to one full one
MAX_LISTED_LAYERS = 1 << 16  # past it the per-layer lists (nope_layers) are not built


def _cohere2(gguf: GGUFFile, m: Metadata) -> Fields:
    """Command R7B / A: one bias-free LayerNorm feeding attention and MLP in parallel, RoPE in
    interleaved pairs (llama.cpp's own pairing: no permutation) on the sliding layers only,
    every `attention.sliding_window_pattern`-th layer full, the logits times `logit_scale`."""
    names = gguf.names()
    n_layers, period = m.integer("block_count"), m.integer("attention.sliding_window_pattern",
                                                           COHERE2_PATTERN)
    if n_layers > MAX_LISTED_LAYERS or period > n_layers:  # both become per-layer lists
        raise gguf.error(f"metadata '{m.arch}.block_count' {n_layers:,} with "
                         f"'{m.arch}.attention.sliding_window_pattern' {period:,}: at most "
                         f"{MAX_LISTED_LAYERS:,} layers, and a period of at most the layers")
    fields: Fields = _sizes(gguf, m) | {
        "activation": "swiglu", "norm": "layernorm_nobias", "norm_placement": "pre", "parallel_residual": "one_norm",
        "norm_eps": m.number("attention.layer_norm_epsilon"), "positions": "rope",
        "rope_pairing": "interleaved", "rope_theta": m.number("rope.freq_base", 10000.0),
        "bias": False, "attention_bias": "blk.0.attn_q.bias" in names,
        "tie_embeddings": "output.weight" not in names, "lm_head": True,
        "sliding_window": m.integer("attention.sliding_window"),
        "layer_pattern": ["local"] * (period - 1) + ["global"],
    }
    nope = [i for i in range(period - 1, n_layers, period)]
    if nope:
        fields["nope_layers"] = nope
    scale = m.number("logit_scale", 1.0)
    if scale != 1.0:
        fields["logits_scaling"] = 1 / scale
    return fields


def _rope_freqs(gguf: GGUFFile, pairs: int, context: object) -> Fields:
    """`rope_freqs.weight`: llama.cpp's per-frequency divisors (its converter writes Llama
    3.1-3.3's llama3 scaling as this table; llama.cpp divides frequency i by entry i at every
    position). That is LongRoPE with one list for every length and no cos/sin factor, which is
    how tfcli holds it. The table (pairs float32s) is the one tensor read from a header."""
    tensor = gguf.tensor("rope_freqs.weight")
    if tensor is None or tensor.ggml_type != "F32" or tensor.shape != (pairs,):
        raise gguf.error(f"tensor 'rope_freqs.weight' must be F32 of shape ({pairs},) (one "
                         f"divisor per rotated pair), got {tensor and tensor.ggml_type} "
                         f"{tensor and tensor.shape}")
    with open(gguf.path, "rb") as f:
        f.seek(gguf.data_offset + tensor.offset)
        raw = f.read(4 * pairs)
    if len(raw) != 4 * pairs:
        raise gguf.error("tensor 'rope_freqs.weight' ends before its data")
    factors = list(struct.unpack(f"<{pairs}f", raw))
    if not all(0 < v < 1e30 for v in factors):  # NaN fails too
        raise gguf.error("tensor 'rope_freqs.weight' holds a divisor that is not a positive "
                         "finite number")
    return {"type": "longrope", "factor": 1.0, "original_max_seq_len": context,
            "short_factor": factors, "long_factor": factors, "attention_factor": 1.0}


def _gpt2(gguf: GGUFFile, m: Metadata) -> Fields:
    return {
        "family": "decoder", "vocab_size": _rows(gguf, "token_embd.weight"),
        "max_seq_len": m.integer("context_length"), "d_model": m.integer("embedding_length"),
        "n_heads": m.integer("attention.head_count"), "n_layers": m.integer("block_count"),
        "d_ff": m.integer("feed_forward_length"), "activation": "gelu_tanh",
        "norm": "layernorm", "norm_placement": "pre",
        "norm_eps": m.number("attention.layer_norm_epsilon"), "positions": "learned",
        "bias": True, "tie_embeddings": "output.weight" not in gguf.names(), "lm_head": True,
    }


# What a Gemma GGUF leaves out, transformers takes from Gemma2Config() / Gemma3TextConfig()
# defaults when it loads the file (query_pre_attn_scalar 256, the layer patterns, Gemma 3's
# local RoPE base 10,000 and Gemma 2's soft-caps 50 / 30); so does tfcli.
GEMMA_QUERY_PRE_ATTN_SCALAR = 256.0
GEMMA_PATTERNS = {"gemma2": ["local", "global"], "gemma3": ["local"] * 5 + ["global"]}
GEMMA2_SOFTCAPS = {"attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0}


def _gemma(gguf: GGUFFile, m: Metadata) -> Fields:
    """Gemma 2 / 3: GeGLU (tanh GELU), sandwich norms with (1 + w), sqrt(d) embedding scale,
    tied head, local/global layers; Gemma 3 adds per-head q/k norms and a local RoPE base."""
    fields: Fields = _sizes(gguf, m) | {
        "activation": "geglu_tanh", "norm": "rmsnorm", "norm_unit_offset": True,
        "norm_placement": "sandwich", "norm_eps": m.number("attention.layer_norm_rms_epsilon"),
        "positions": "rope", "rope_theta": m.number("rope.freq_base", 10000.0), "bias": False,
        "attention_scale": GEMMA_QUERY_PRE_ATTN_SCALAR ** -0.5, "scale_embeddings": True,
        "tie_embeddings": "output.weight" not in gguf.names(), "lm_head": True,
        "sliding_window": m.integer("attention.sliding_window"),
        "layer_pattern": GEMMA_PATTERNS[m.arch],
    }
    if m.arch == "gemma2":
        fields["attn_logit_softcap"] = m.number("attn_logit_softcapping",
                                                GEMMA2_SOFTCAPS["attn_logit_softcapping"])
        fields["final_logit_softcap"] = m.number("final_logit_softcapping",
                                                 GEMMA2_SOFTCAPS["final_logit_softcapping"])
    else:
        fields |= {"qk_norm": "per_head", "rope_local_theta": 10000.0}
    return fields


READERS: dict[str, Callable[[GGUFFile, Metadata], Fields]] = {
    "llama": _llama_like, "qwen2": _llama_like, "qwen3": _llama_like, "gpt2": _gpt2,
    "gemma2": _gemma, "gemma3": _gemma, "granite": _granite, "starcoder2": _starcoder2,
    "qwen3moe": _llama_moe, "olmoe": _llama_moe, "cohere2": _cohere2, "smollm3": _smollm3,
}


def gguf_architecture(gguf: GGUFFile) -> str:
    arch = gguf.metadata.get("general.architecture")
    if not isinstance(arch, str):
        raise gguf.error(f"metadata 'general.architecture' must be a string, got {_shown(arch)}")
    if arch not in READERS:
        raise gguf.error(f"GGUF architecture {_shown(arch)} is not supported "
                         f"(supported: {', '.join(sorted(READERS))})")
    return arch


def _name(gguf: GGUFFile) -> str:
    name = gguf.metadata.get("general.name")
    if isinstance(name, str) and 0 < len(name) <= 100 and name.isprintable():
        return name
    return gguf.path.stem[:100] or "gguf"


def spec_from_gguf(gguf: GGUFFile) -> Spec:
    """The Spec a GGUF file's metadata and tensor names describe."""
    arch = gguf_architecture(gguf)
    fields = READERS[arch](gguf, Metadata(gguf, arch))
    identity = {"name": _name(gguf), "source": str(gguf.path)[:2000],
                "description": f"{arch} imported from GGUF metadata"}
    try:
        return Spec.model_validate(identity | fields)
    except SpecConsistencyError as exc:
        raise gguf.error(f"its metadata gives an inconsistent spec: {exc.message}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise gguf.error(f"its metadata gives an invalid spec: {problems}") from None


def spec_from_gguf_file(path: str) -> Spec:
    from tfcli.checkpoints.gguf.file import read_gguf

    return spec_from_gguf(read_gguf(path))

