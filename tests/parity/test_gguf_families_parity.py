"""GGUF files of the 2025 families llama.cpp writes (granite, starcoder2, qwen3moe, olmoe,
cohere2, smollm3) and of Llama 3.1's scaled RoPE (a `rope_freqs` divisor table),
made here from tiny random transformers models the way llama.cpp's convert_hf_to_gguf.py makes
them - its tensor names and metadata keys taken from the `gguf` package's own tables
(gguf.TENSOR_NAMES, gguf.Keys), q/k rows permuted for granite and smollm3 as their
LlamaModel subclasses do - read back by tfcli: `params` equal to the model's num_parameters(), the spec equal to the
config.json's where the GGUF carries the same facts, and logits within 1e-4 of transformers.
Where transformers itself loads the architecture from GGUF (starcoder2, qwen3moe), the logits
are also checked against its load of the same file."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
import pytest

from tests.checkpoints.gguf_files import write_gguf
from tests.cli.guarded import run_in_memory
from tests.parity.parity_families import (VOCAB, cohere2, granite, olmoe, smollm3, starcoder2,
                                          tokens)
from tests.parity.saved_models import save_random
from tests.parity.test_hf_parity import F32

pytestmark = pytest.mark.slow

K = gguf.Keys


def _llama31() -> object:
    """Llama 3.1's llama3 RoPE scaling (factor 8 over 16 positions), which llama.cpp's converter
    writes as a rope_freqs table."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from tests.parity.parity_families import QWEN_SLIDING
    small = {k: v for k, v in QWEN_SLIDING.items()
             if k not in ("use_sliding_window", "sliding_window", "max_window_layers")}
    return LlamaForCausalLM(LlamaConfig(**small | {"rope_parameters": {
        "rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 16}}))


def _rope_freqs(config: object) -> np.ndarray:
    """convert_hf_to_gguf.py LlamaModel.generate_extra_tensors: llama3 scaling as one divisor
    per frequency."""
    import math
    p = config.rope_parameters  # type: ignore[attr-defined]
    dim = config.hidden_size // config.num_attention_heads  # type: ignore[attr-defined]
    freqs = 1.0 / (p["rope_theta"] ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
    old = p["original_max_position_embeddings"]
    low, high = old / p["low_freq_factor"], old / p["high_freq_factor"]
    factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high:
            factors.append(1.0)
        elif wavelen > low:
            factors.append(p["factor"])
        else:
            smooth = (old / wavelen - p["low_freq_factor"]) / (p["high_freq_factor"]
                                                               - p["low_freq_factor"])
            factors.append(1 / ((1 - smooth) / p["factor"] + smooth))
    return np.array(factors, dtype=np.float32)


def _starcoder2() -> object:
    """Biased (Starcoder2Config's default, which transformers' GGUF load assumes) and without
    a window (llama.cpp writes none for starcoder2, nor runs one)."""
    return starcoder2(sliding_window=None)


def _qwen3_moe() -> object:
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    from tests.parity.parity_families import QWEN_MOE
    return Qwen3MoeForCausalLM(Qwen3MoeConfig(**QWEN_MOE, head_dim=16, norm_topk_prob=True))


@dataclass(frozen=True)
class Family:
    arch: str  # llama.cpp's general.architecture
    build: Callable[[], object]
    permuted: bool = False  # convert_hf_to_gguf.py permutes q/k rows (LlamaModel and subclasses)
    transformers_reads_it: bool = False  # from_pretrained(gguf_file=...) knows the architecture
    # spec fields the GGUF holds otherwise (Llama 3.1's llama3 scaling: a divisor table)
    held_otherwise: frozenset[str] = frozenset()


FAMILIES = {
    "llama3.1": Family("llama", _llama31, permuted=True,
                       held_otherwise=frozenset({"rope_scaling"})),
    "granite": Family("granite", granite, permuted=True),
    "starcoder2": Family("starcoder2", _starcoder2, transformers_reads_it=True),
    "qwen3moe": Family("qwen3moe", _qwen3_moe, transformers_reads_it=True),
    "olmoe": Family("olmoe", olmoe),
    "cohere2": Family("cohere2", cohere2),
    "smollm3": Family("smollm3", smollm3, permuted=True),
}
# Hugging Face module names -> llama.cpp's (gguf.MODEL_TENSOR), for the tensors of these families
MODULES = {
    "model.embed_tokens": gguf.MODEL_TENSOR.TOKEN_EMBD, "model.norm": gguf.MODEL_TENSOR.OUTPUT_NORM,
    "lm_head": gguf.MODEL_TENSOR.OUTPUT,
    "input_layernorm": gguf.MODEL_TENSOR.ATTN_NORM, "self_attn.q_proj": gguf.MODEL_TENSOR.ATTN_Q,
    "self_attn.k_proj": gguf.MODEL_TENSOR.ATTN_K, "self_attn.v_proj": gguf.MODEL_TENSOR.ATTN_V,
    "self_attn.o_proj": gguf.MODEL_TENSOR.ATTN_OUT,
    "self_attn.q_norm": gguf.MODEL_TENSOR.ATTN_Q_NORM,
    "self_attn.k_norm": gguf.MODEL_TENSOR.ATTN_K_NORM,
    "post_attention_layernorm": gguf.MODEL_TENSOR.FFN_NORM,
    "mlp.gate_proj": gguf.MODEL_TENSOR.FFN_GATE, "mlp.up_proj": gguf.MODEL_TENSOR.FFN_UP,
    "mlp.down_proj": gguf.MODEL_TENSOR.FFN_DOWN, "mlp.c_fc": gguf.MODEL_TENSOR.FFN_UP,
    "mlp.c_proj": gguf.MODEL_TENSOR.FFN_DOWN, "mlp.gate": gguf.MODEL_TENSOR.FFN_GATE_INP,
}


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """convert_hf_to_gguf.py LlamaModel.permute: rows (H, 2, dh/2) -> (H, dh/2, 2)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2) \
        .reshape(w.shape)


def _gguf_name(hf: str, arch: str) -> str:
    """llama.cpp's name of a Hugging Face parameter (checked against the architecture's list)."""
    module, kind = hf.rsplit(".", 1)
    block = None
    if module.startswith("model.layers."):
        _, _, i, module = module.split(".", 3)
        block = int(i)
    tensor = MODULES[module]
    assert tensor in gguf.MODEL_TENSORS[gguf.MODEL_ARCH[arch.upper()]], (arch, tensor)
    name = gguf.TENSOR_NAMES[tensor]
    return f"{name.format(bid=block) if block is not None else name}.{kind}"


def _tensors(model: object, arch: str, permuted: bool) -> dict[str, np.ndarray]:
    """Every parameter under llama.cpp's name, the experts split into stacked gate / up / down
    (ffn_*_exps, (E, out, in)); a tied head left out (llama.cpp writes no output.weight)."""
    config = model.config  # type: ignore[attr-defined]
    out: dict[str, np.ndarray] = {}
    for hf, p in model.state_dict().items():  # type: ignore[attr-defined]
        w = p.detach().float().numpy()
        if hf == "lm_head.weight" and config.tie_word_embeddings:
            continue
        if ".mlp.experts." in hf:
            i = hf.split(".")[2]
            if hf.endswith("gate_up_proj"):  # (E, 2 ff, d): gate, then up
                gate, up = np.split(w, 2, axis=1)
                out[f"blk.{i}.ffn_gate_exps.weight"], out[f"blk.{i}.ffn_up_exps.weight"] = gate, up
            else:
                out[f"blk.{i}.ffn_down_exps.weight"] = w
            continue
        if permuted and hf.endswith(("q_proj.weight", "k_proj.weight")):
            heads = config.num_attention_heads if "q_proj" in hf else config.num_key_value_heads
            w = _permute(w, heads)
        out[_gguf_name(hf, arch)] = np.ascontiguousarray(w)
    if config.rope_parameters.get("rope_type") == "llama3":
        out["rope_freqs.weight"] = _rope_freqs(config)
    return out


def _metadata(model: object, arch: str) -> dict[str, object]:
    """The keys convert_hf_to_gguf.py writes for these architectures (gguf.Keys' spellings)."""
    c = model.config  # type: ignore[attr-defined]
    key = lambda k: k.format(arch=arch)  # noqa: E731
    layernorm = arch in ("starcoder2", "cohere2")
    eps_key = K.Attention.LAYERNORM_EPS if layernorm else K.Attention.LAYERNORM_RMS_EPS
    eps = next(getattr(c, k) for k in ("norm_epsilon", "layer_norm_eps", "rms_norm_eps")
               if getattr(c, k, None))
    meta: dict[str, object] = {
        key(K.LLM.CONTEXT_LENGTH): c.max_position_embeddings,
        key(K.LLM.EMBEDDING_LENGTH): c.hidden_size, key(K.LLM.BLOCK_COUNT): c.num_hidden_layers,
        key(K.LLM.FEED_FORWARD_LENGTH): c.intermediate_size,
        key(K.Attention.HEAD_COUNT): c.num_attention_heads,
        key(K.Attention.HEAD_COUNT_KV): c.num_key_value_heads, key(eps_key): float(eps),
        key(K.Rope.FREQ_BASE): float(c.rope_parameters["rope_theta"]),
    }
    head_dim = getattr(c, "head_dim", None)
    if head_dim:
        meta[key(K.Attention.KEY_LENGTH)] = meta[key(K.Attention.VALUE_LENGTH)] = head_dim
    if arch in ("qwen3moe", "olmoe"):
        meta |= {key(K.LLM.EXPERT_COUNT): c.num_experts,
                 key(K.LLM.EXPERT_USED_COUNT): c.num_experts_per_tok}
        if arch == "qwen3moe":
            meta[key(K.LLM.EXPERT_FEED_FORWARD_LENGTH)] = c.moe_intermediate_size
    if arch == "cohere2":  # llama.cpp's convert: the window, the logit scale (pattern: its 4)
        meta |= {key(K.Attention.SLIDING_WINDOW): c.sliding_window,
                 key(K.LLM.LOGIT_SCALE): float(c.logit_scale)}
    if arch == "granite":
        meta |= {key(K.LLM.EMBEDDING_SCALE): float(c.embedding_multiplier),
                 key(K.LLM.RESIDUAL_SCALE): float(c.residual_multiplier),
                 key(K.Attention.SCALE): float(c.attention_multiplier),
                 key(K.LLM.LOGIT_SCALE): float(c.logits_scaling)}
    return meta


def _token_list(writer: gguf.GGUFWriter) -> None:
    """A vocabulary's worth of tokens: transformers' GGUF load takes vocab_size from its
    length (tfcli from token_embd's rows)."""
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list([f"t{i}" for i in range(VOCAB)])


@pytest.fixture(scope="module", params=list(FAMILIES))
def converted(request: pytest.FixtureRequest,
              tmp_path_factory: pytest.TempPathFactory) -> tuple[Family, object, Path, Path]:
    family = FAMILIES[request.param]
    folder = tmp_path_factory.mktemp(f"gguf-{request.param}")
    model = save_random(family.build, folder / "hf", std=0.15)
    path = write_gguf(folder / "model.gguf", family.arch, _metadata(model, family.arch),
                      _tensors(model, family.arch, family.permuted), extra=_token_list)
    return family, model, folder / "hf", path


def test_params_equals_transformers(converted: tuple) -> None:
    _, model, _, path = converted
    code, out, err = run_in_memory("params", str(path), "-f", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["total"] == model.num_parameters()  # type: ignore[attr-defined]
    assert report["stored_weights"]["equal"], report["stored_weights"]


def test_the_spec_is_the_config_json_one(converted: tuple) -> None:
    """Every architecture field the GGUF carries reads as the config.json's (the identity and
    what GGUF leaves to llama.cpp's code - a sliding window - aside; GGUF's numbers are float32,
    so they equal the config's to float32's precision)."""
    from tfcli.checkpoints import spec_from_config_dir
    from tfcli.checkpoints.gguf.spec import spec_from_gguf_file
    family, model, hf, path = converted
    ours, theirs = spec_from_gguf_file(str(path)), spec_from_config_dir(hf)
    aside = {"name", "description", "source", "sliding_window", *family.held_otherwise}
    if "rope_scaling" in family.held_otherwise:  # the divisor table, as llama.cpp runs it
        table = list(_rope_freqs(model.config))  # type: ignore[attr-defined]
        scaling = ours.rope_scaling
        assert scaling is not None and scaling.type == "longrope"
        assert scaling.short_factor == scaling.long_factor == pytest.approx(table, rel=1e-7)
        assert scaling.attention_factor == 1.0 and max(table) > 1
    mine, want = ours.model_dump(exclude=aside), theirs.model_dump(exclude=aside)
    assert mine == {k: pytest.approx(v, rel=1e-7) if isinstance(v, float) else v
                    for k, v in want.items()}


def test_logits_match_transformers(converted: tuple) -> None:
    """tfcli's logits from the GGUF against the transformers model it was made from, and
    against transformers' own load of the GGUF where it reads the architecture."""
    import torch

    from tfcli.checkpoints.gguf.spec import spec_from_gguf_file
    from tfcli.checkpoints.gguf.weights import load_gguf_weights
    from tfcli.engine.model import ModelInput, forward
    family, model, _, path = converted
    ids = tokens()
    spec = spec_from_gguf_file(str(path))
    got = forward(spec, load_gguf_weights(path, spec), ModelInput(ids)).logits
    with torch.no_grad():
        want = model(input_ids=torch.from_numpy(ids)).logits.numpy()  # type: ignore[operator]
    np.testing.assert_allclose(got, want, **F32)
    if family.transformers_reads_it:
        from transformers import AutoModelForCausalLM
        # what transformers' GGUF config mapping does not read, given here: qwen3moe's
        # renormalisation (Qwen3MoeConfig's default False would stand where llama.cpp and
        # Qwen3-30B-A3B renormalise) and expert_feed_forward_length (768 would), starcoder2's
        # rope.freq_base (Starcoder2Config's 10,000 would)
        config = model.config  # type: ignore[attr-defined]
        extra = ({"norm_topk_prob": True, "moe_intermediate_size": config.moe_intermediate_size}
                 if family.arch == "qwen3moe" else
                 {"rope_parameters": dict(config.rope_parameters)})
        loaded = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, **extra)
        with torch.no_grad():
            again = loaded(input_ids=torch.from_numpy(ids)).logits.numpy()
        np.testing.assert_allclose(got, again, **F32)
