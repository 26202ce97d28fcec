"""The memory planner's shared ground: the workload, the result types, the tables of what
transformers' and the engine's ops keep, and the checks every layout shares. The layouts
(tfcli/analysis/memory/layouts/) and the generic walks (live.py, saved_parts.py) import this
module; it imports none of them.

Sizes are in elements of the compute dtype unless a name says bytes (saved sets are bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from tfcli.core.errors import BadInputError, not_one_of
from tfcli.spec.model import Spec

Phase = tuple[str, float]  # (phase name, live elements)
Part = tuple[str, float]  # (part name, saved bytes)

ATTENTION_KINDS = ("engine", "eager", "sdpa")
RECOMPUTE = ("none", "selective", "full")
FLOAT32 = 4  # softmax probabilities, norm statistics, logsumexp and the loss stay float32
INT64 = 8

# transformers' MLP: hidden-width tensors alive at its peak. gelu_new (GPT-2) is a Python
# formula: x, x^3, 0.044715 x^3 ... four at once; F.gelu / relu: input and output; gated:
# act(gate), up and their product.
HF_ACTIVATION_TENSORS = {"relu": 2.0, "gelu": 2.0, "gelu_tanh": 4.0, "silu": 2.0}
HF_GATE_TENSORS = {"relu": 2.0, "gelu": 2.0, "gelu_tanh": 2.0, "silu": 2.0}  # Gemma: F.gelu
GATE_OF = {"swiglu": "silu", "geglu": "gelu", "geglu_tanh": "gelu_tanh"}
# Hidden-width tensors saved by the MLP's activation, its output included (saved by the next
# op): silu / gelu their input and output; relu its output only; a plain gelu_tanh MLP as
# transformers' gelu_new (GPT-2, GPT-J, Phi-2), a Python formula saving x, tanh(u), 0.5 x and
# 1 + tanh(u), then its output; a gated one (Gemma's gelu_pytorch_tanh) F.gelu's two.
SAVED_BY_ACTIVATION = {"silu": 2, "gelu": 2, "relu": 1, "gelu_tanh": 5}
SAVED_BY_GATE = {"silu": 2, "gelu": 2, "relu": 1, "gelu_tanh": 2}
# Projections a checkpoint's transformers modules fuse into one linear: "qkv" (Phi-3 qkv_proj,
# GPT-NeoX query_key_value), "gate_up" (Phi-3 gate_up_proj). The spec describes the maths, not
# the module layout, so the caller says (transformers' model_type: activations.FUSED_MODULES).
# "falcon_qkv": Falcon's query_key_value with the attention module that splits it (its own
# copies, an always materialised causal mask): layouts/falcon.py.
# "gelu_kernel": a plain MLP's tanh GELU as F.gelu(approximate="tanh") (transformers'
# gelu_pytorch_tanh: StarCoder2), one kernel saving its input, where GPT-2-style models run
# gelu_new's Python formula (SAVED_BY_ACTIVATION): the same maths, other tensors.
FUSIONS = ("qkv", "gate_up", "falcon_qkv", "gelu_kernel")
GELU_KERNEL = "gelu_kernel"
FALCON_QKV = "falcon_qkv"


@dataclass(frozen=True)
class Workload:
    """One forward pass: batch x seq_len tokens in a dtype of `itemsize` bytes."""

    batch: int
    seq_len: int
    itemsize: float
    workers: int = 1  # engine only: threads running query blocks / FFN slices at once

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len


@dataclass(frozen=True)
class ActivationPeak:
    """The largest live set of one forward pass and the phase it happens in."""

    bytes: int
    phase: str  # e.g. "block attention scores", "logits"
    phases: tuple[tuple[str, int], ...]  # every phase's live bytes, in op order


@dataclass(frozen=True)
class SavedActivations:
    """Bytes kept for backward, by part (each a whole-model figure)."""

    parts: tuple[tuple[str, int], ...]
    per_block: int  # one block's saved bytes without recomputation: the full-recompute set

    @property
    def total(self) -> int:
        return sum(n for _, n in self.parts)


def rounded(parts: list[Part], per_block: float) -> SavedActivations:
    """Whole bytes, each part rounded once (sums of fractions of a byte under --tp first)."""
    return SavedActivations(tuple((name, int(round(b))) for name, b in parts),
                            int(round(per_block)))


def peak_of(raw: list[Phase], work: Workload) -> ActivationPeak:
    """Each phase in whole bytes, and the largest."""
    phases = tuple((name, int(round(elements * work.itemsize))) for name, elements in raw)
    name, peak = max(phases, key=lambda p: p[1])
    return ActivationPeak(peak, name, phases)


# --- checks every layout shares ---------------------------------------------------------------


def check_modelled(spec: Spec) -> None:
    """BadInputError for the variants whose live sets are not modelled, named."""
    if spec.n_experts and not spec.gated:
        raise BadInputError(f"{spec.name}: activation memory of mixture-of-experts FFNs with "
                            "ungated experts is not modelled yet (Mixtral-, Qwen-MoE- and "
                            "DeepSeek-style routing over gated experts is)")
    if spec.attention_sinks or spec.activation == "swiglu_clamped":
        # GptOssForCausalLM measured (tests/parity, 2 x 64 tokens): the Mixtral-style experts'
        # live set misses 41% of its inference peak (its sink concatenation, clamped gate chain
        # and expert biases): not modelled until measured term by term
        raise BadInputError(f"{spec.name}: activation memory of gpt-oss's transformers modules "
                            "(attention sinks, clamped-SwiGLU experts) is not modelled yet; "
                            "`tfcli params` gives its weights and KV cache")
    if spec.router_scales_input or spec.chunked_attention:
        # Llama4TextMoe runs every token through every expert (its input repeated n_experts
        # times, the weights of the unchosen ones zero), a live set n_experts times the
        # Mixtral-style layer's: not modelled until measured
        raise BadInputError(f"{spec.name}: activation memory of Llama 4's transformers modules "
                            "(every expert run on every token, chunked attention) is not "
                            "modelled yet; `tfcli params` gives its weights and KV cache")
    if (spec.family == "decoder" and spec.norm == "layernorm_nobias"
            and spec.rope_pairing == "interleaved"):
        # CohereForCausalLM / Cohere2ForCausalLM measured (tests/parity, 2 x 64 tokens): 10-35%
        # more than the generic layer saves (float32 LayerNorm and RoPE copies, scaled logits)
        raise BadInputError(f"{spec.name}: activation memory of Cohere's transformers modules "
                            "(float32 LayerNorm and RoPE copies) is not modelled yet; "
                            "`tfcli params` gives its weights and KV cache")
    if spec.positions == "relative" and spec.family == "decoder":
        raise BadInputError(f"{spec.name}: activation memory of a decoder-only model with a "
                            "relative position bias is not modelled yet (T5's encoder-decoder "
                            "and encoder stacks are)")


def check_fused(fused: frozenset[str]) -> None:
    unknown = sorted(set(fused) - set(FUSIONS))
    if unknown:
        raise BadInputError(not_one_of("--fused", unknown[0], FUSIONS))
    if {"qkv", "falcon_qkv"} <= fused:
        raise BadInputError("--fused: qkv and falcon_qkv are two layouts of one fused Q/K/V "
                            "projection: name one")


# --- sizes every layout reads -------------------------------------------------------------------


def activation(spec: Spec) -> str:
    """The FFN's activation function (a gated FFN's gate's)."""
    return GATE_OF.get(spec.activation, spec.activation)


def _one_kernel(spec: Spec, fused: frozenset[str]) -> bool:
    """The activation runs as one torch kernel: a gate's always (Gemma's F.gelu), a plain tanh
    GELU under GELU_KERNEL; else a plain MLP's as its HF formula (gelu_new)."""
    return spec.gated or (GELU_KERNEL in fused and activation(spec) == "gelu_tanh")


def activation_tensors(spec: Spec, fused: frozenset[str]) -> float:
    """Hidden-width tensors the MLP's activation holds at its peak (its output included)."""
    return (HF_GATE_TENSORS if _one_kernel(spec, fused) else HF_ACTIVATION_TENSORS)[activation(spec)]


def activation_saved(spec: Spec, fused: frozenset[str]) -> int:
    """Hidden-width tensors the MLP's activation saves for backward (its output included)."""
    return (SAVED_BY_GATE if _one_kernel(spec, fused) else SAVED_BY_ACTIVATION)[activation(spec)]


def qkv_elements(spec: Spec, tokens: int) -> float:
    return tokens * (spec.n_heads + 2 * spec.kv_heads) * spec.head_dim


def fused_qkv_extra(spec: Spec, tokens: int, fused: frozenset[str]) -> float:
    """A fused Q/K/V projection (Phi-3, GPT-NeoX): v is a view of the fused output, so
    its q and k parts stay alive beside RoPE's new q and k (without RoPE q and k are views)."""
    if "qkv" not in fused or spec.positions != "rope":
        return 0
    return tokens * (spec.n_heads + spec.kv_heads) * spec.head_dim


def head_phases(spec: Spec, work: Workload, held: float) -> list[Phase]:
    """The vocabulary logits (B, T, V) beside the final hidden state (and the embedding)."""
    if not spec.lm_head:
        return []
    return [("logits", held + work.tokens * spec.vocab_size)]
