"""The generic live set of a transformers forward (no_grad, use_cache=False): the phases of
its standard layer (attention, FFN, experts, heads) as the Llama-, GPT-2- and BERT-style
modules walk them, for the layouts (layouts/) to use and adjust. MLA and DeepSeek's experts
(latent.py), partial rotary, GPT-J, StableLM and OLMo 2 (rope_layouts.py), sliding windows and
soft-capping (window.py) are read from the spec fields that describe them.

Sizes are in elements of the compute dtype (base.py).
"""

from __future__ import annotations

from tfcli.analysis.memory import latent as latent_memory
from tfcli.analysis.memory import rope_layouts
from tfcli.analysis.memory import window as window_memory
from tfcli.analysis.memory.base import (HF_ACTIVATION_TENSORS, Phase, Workload, activation,
                                        activation_tensors, fused_qkv_extra, head_phases,
                                        qkv_elements)
from tfcli.spec.model import Spec


def _mlp(spec: Spec, work: Workload, fused: frozenset[str]) -> float:
    """The MLP's hidden-width tensors at its peak: gated, the up projection beside the
    activation's tensors; fused gate|up (Phi-3), the whole (N, 2F) projection, gate and up
    its views."""
    s, n = spec, work.tokens
    if s.positions == "relative" and s.gated and activation(s) == "gelu_tanh":
        # T5 v1.1 / mT5's gated-gelu: gelu_new's formula (4 at once) on the gate, the up
        # projection not made yet (measured on T5EncoderModel)
        return n * s.d_ff * HF_ACTIVATION_TENSORS["gelu_tanh"]
    return n * s.d_ff * (activation_tensors(s, fused)
                         + (0 if not s.gated else 2 if "gate_up" in fused else 1))


def _held(spec: Spec, work: Workload, eager: bool) -> float:
    """What the model holds through every phase: inputs_embeds (ALBERT, shared layers: its
    (N, e) embedding output, projected into block 0's own (N, d) input; ElectraModel drops
    its embedding output), an eager decoder's (B, 1, T, S) float mask, RoPE's cos and sin."""
    s, n, t = spec, work.tokens, work.seq_len
    albert = s.shared_layers and s.embedding_dim is not None
    held = n * (s.embedding_dim if albert else s.d_model)
    held += work.batch * t * t if eager and s.family == "decoder" else 0
    held += 2 * t * s.rotary_width if s.positions == "rope" else 0
    return held


def _moe_phases(spec: Spec, work: Workload, phases: list[Phase], around: float,
                mlp_tensors: float) -> list[Phase]:
    """Mixtral-style layers: the experts' phase beside or instead of the FFN (Qwen-MoE runs
    its shared experts first: their output waits beside the routed ones). `around`: what the
    layer holds around its MLP."""
    s, n, d = spec, work.tokens, spec.d_model
    if s.moe_layer_count(s.n_layers) == s.n_layers:
        phases = phases[:2]
    shared = n * d if s.n_shared_experts else 0
    phases.append(("MoE experts", around + shared + moe_live(s, work)))
    if s.n_shared_experts:
        phases.append(("shared experts", around + n * s.shared_width * mlp_tensors))
    return phases


def hf_phases(spec: Spec, work: Workload, eager: bool,
              fused: frozenset[str] = frozenset()) -> list[Phase]:
    """Live elements per phase of a transformers forward: the model keeps inputs_embeds
    referenced to the end (_held), the layer loop its layer's input, the layer its residual;
    eager attention returns its probabilities, which the layer holds until it returns. A
    layout adds what its modules hold more (GPT-2's position embeddings: learned_held)."""
    s, n, d, t = spec, work.tokens, spec.d_model, work.seq_len
    albert = s.shared_layers and s.embedding_dim is not None
    held = _held(s, work, eager)
    x_in = n * d if s.n_layers > 1 or albert else 0
    pre = s.norm_placement not in ("post", "sublayer_post")  # OLMo 2: the sublayer reads x
    h = n * d if pre else 0
    probs = work.batch * s.n_heads * t * t if eager else 0
    repeat = 2 * n * s.n_heads * s.head_dim if eager and s.kv_heads < s.n_heads else 0
    core = 2 * probs if eager else n * s.n_heads * s.head_dim  # eager: scores and softmax
    if eager and s.positions == "rope" and work.itemsize < 4:
        # Llama's eager softmax(dtype=float32) on 16-bit scores: a float32 copy, then the
        # float32 result, beside the masked scores (8 bytes more per score, in elements here)
        core = probs * (1 + 8 / work.itemsize)
    qkv = qkv_elements(s, n) + fused_qkv_extra(s, n, fused)
    phases = [
        ("attention scores", held + x_in + h + qkv + repeat + core),
        ("attention output", held + x_in + h + qkv + probs + 2 * n * d),
        ("FFN", held + x_in + n * d + h + probs + _mlp(s, work, fused)),
    ]
    if s.latent_attention:  # MLA's projections and core (latent_memory.py)
        scores, output = latent_memory.latent_attention_live(s, work, eager)
        phases[:2] = [("attention scores", held + x_in + h + scores),
                      ("attention output", held + x_in + h + output)]
    around = held + x_in + n * d + h + probs
    tensors = activation_tensors(s, fused) + 1
    if s.n_experts and latent_memory.deepseek_moe(s):  # routed experts first, then shared
        if s.moe_layer_count(s.n_layers) == s.n_layers:
            phases = phases[:2]
        return phases + latent_memory.deepseek_moe_phases(s, work, around, tensors) \
            + head_phases(s, work, held + n * d)
    if s.n_experts:
        phases = _moe_phases(s, work, phases, around, tensors)
    if s.norm_placement == "post":  # BERT: at the output LayerNorm the activation output, its
        # projection, the residual sum and the norm's output beside the sublayer input
        phases.append(("FFN output norm", held + x_in + n * d + n * s.d_ff + 3 * n * d + probs))
    # partial rotary's kept projections, StableLM's layer, OLMo 2's float32 RoPE
    phases = rope_layouts.adjust_phases(s, work, eager, fused, phases)
    return phases + head_phases(s, work, held + n * d)


def layer_phases(spec: Spec, work: Workload, attention: str,
                 fused: frozenset[str]) -> list[Phase]:
    """hf_phases under the attention transformers really runs (Gemma 2: no sdpa), with the
    sliding-window masks, second RoPE pair and soft-capped logits (window.py)."""
    eager = window_memory.softcapped_as_eager(spec, attention) == "eager"
    return window_memory.adjust_phases(spec, work, eager, hf_phases(spec, work, eager, fused))


def learned_held(spec: Spec, work: Workload) -> float:
    """A decoder's learned position embeddings (T, d), held to the end of the forward (GPT-2's
    wpe output, BART's decoder's embed_positions)."""
    return work.seq_len * spec.d_model if spec.positions == "learned" else 0


def moe_live(spec: Spec, work: Workload) -> float:
    """transformers' experts (grouped_mm over every routed slot at once: N x k slots): each
    slot's gathered input, gate/up product, activation and gated product, plus the router's
    float32 logits and the int64 / float32 top-k indices, sorts and weights (4E + 44k bytes a
    token, measured on MixtralForCausalLM), in elements of the compute dtype."""
    s, n = spec, work.tokens
    slots = n * s.experts_per_token
    routing = n * (4 * s.n_experts + 44 * s.experts_per_token) / work.itemsize
    # after the down projection: the gathered input, the output, its weighted and its
    # unsorted copy (4 d a slot; more than d + 4 F_e when d > 4 F_e / 3, as in DeepSeek-V3)
    return slots * max(s.d_model + 4 * s.expert_width, 4 * s.d_model) + routing
