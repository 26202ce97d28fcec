"""What autograd saves when only LoRA adapters train (frozen base, adapters A and B on the
targeted linears): fewer tensors than full fine-tuning, because an op saves an operand only for
a gradient something needs, and a frozen weight needs none.

Followed through a block with which activations require grad: the embeddings do not (their
table is frozen), so block 0's input does not; a targeted projection's output does, and so does
everything computed from it. Then:
  - a frozen linear saves nothing (its input's gradient needs only its weight); an adapter's A
    saves its input, B the (N, r) product;
  - RMS norm (frozen weight) keeps its float32 input and rsqrt, not the normed values; layer
    norm its input and float32 mean / rstd, once its input requires grad;
  - eager attention's batched matmuls save q for k's gradient, k for q's, v for the
    probabilities' and the probabilities for v's; sdpa saves q, k, v, its output and the
    logsumexp;
  - the MLP's activations as in full fine-tuning, less the product a frozen down projection
    would have saved; the frozen head saves nothing but the loss keeps its log-softmax.
Checked against saved_tensors_hooks on Llama and BERT with adapters on q, v and on every linear
(tests/parity/memory_families.py).
"""

from __future__ import annotations

from tfcli.analysis.memory import window as window_memory
from tfcli.analysis.memory.base import (FLOAT32, GATE_OF, SAVED_BY_ACTIVATION, SAVED_BY_GATE,
                                        SavedActivations, Workload)
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec

ATTENTION_TARGETS, MLP_TARGETS = ("q", "k", "v", "o"), ("gate", "up", "down")


def _norm(spec: Spec, work: Workload) -> float:
    n, d, it = work.tokens, spec.d_model, work.itemsize
    if spec.norm == "rmsnorm":
        return FLOAT32 * n * d + FLOAT32 * n
    return it * n * d + 2 * FLOAT32 * n


def _eager_core(spec: Spec, work: Workload, grad: dict[str, bool]) -> float:
    """The copies and probabilities eager attention saves, given which of q, k, v need grad."""
    it, t = work.itemsize, work.seq_len
    heads = it * work.tokens * spec.n_heads * spec.head_dim
    scores = work.batch * spec.n_heads * t * t
    p_grad = grad["q"] or grad["k"]
    upcast = spec.positions == "rope" and it < FLOAT32
    probs = 0.0
    if p_grad:  # softmax saves its output: float32 when upcast
        probs += scores * (FLOAT32 if upcast else it)
    if grad["v"] and (upcast or not p_grad):  # the matmul's own copy of the probabilities
        probs += scores * it
    return heads * (grad["k"] + grad["q"] + p_grad) + probs


def _attention(spec: Spec, work: Workload, attention: str, targets: frozenset[str],
               grad_in: bool) -> float:
    grad = {t: grad_in or t in targets for t in ("q", "k", "v")}
    if not any(grad.values()):
        return 0.0
    if attention == "eager":
        return _eager_core(spec, work, grad)
    n = work.tokens  # sdpa: q, k, v, its output (the output projection's input) and logsumexp
    return (work.itemsize * n * (2 * spec.n_heads + 2 * spec.kv_heads) * spec.head_dim
            + FLOAT32 * work.batch * spec.n_heads * work.seq_len)


def _mlp(spec: Spec, work: Workload, targets: frozenset[str]) -> float:
    act = GATE_OF.get(spec.activation, spec.activation)
    if spec.gated:
        tensors = SAVED_BY_GATE[act] + 2 - (0 if "down" in targets else 1)
    else:  # relu saves its own output, which a frozen down projection does not need
        tensors = SAVED_BY_ACTIVATION[act] - (0 if "down" in targets or act == "relu" else 1)
    return tensors * work.tokens * spec.d_ff * work.itemsize


def _block(spec: Spec, work: Workload, attention: str, targets: frozenset[str], rank: int,
           first: bool) -> float:
    n, d, it = work.tokens, spec.d_model, work.itemsize
    grad_in = not first
    grad_mid = grad_in or bool(targets & set(ATTENTION_TARGETS))
    pre = spec.norm_placement != "post"
    saved = (_norm(spec, work) if pre and grad_in else 0.0) + _norm(spec, work) * grad_mid
    saved += it * n * d * (bool(targets & {"q", "k", "v"}) + bool(targets & {"gate", "up"}))
    saved += it * n * rank * len(targets)  # each adapter's B saves A's (N, r) output
    saved += _attention(spec, work, attention, targets, grad_in)
    # o's adapter saves its input; under sdpa that is the output sdpa saves already
    saved += it * n * spec.n_heads * spec.head_dim * ("o" in targets and attention == "eager")
    if grad_mid or targets & set(MLP_TARGETS):
        saved += _mlp(spec, work, targets)
        saved += 0 if pre else _norm(spec, work)  # post-norm: the output LayerNorm's input
    return saved


def lora_saved_activations(spec: Spec, work: Workload, attention: str,
                           targets: tuple[str, ...], rank: int) -> SavedActivations:
    """Bytes autograd saves in one forward with only the adapters on `targets` training."""
    if spec.latent_attention:
        raise BadInputError(f"{spec.name}: LoRA activation memory of latent attention (MLA) "
                            "is not modelled yet (its full fine-tuning is)")
    if spec.n_experts or spec.parallel_residual != "off" or spec.norm_placement == "sandwich":
        raise BadInputError(f"{spec.name}: LoRA activation memory is modelled for sequential "
                            "dense blocks only (no MoE, parallel residual or sandwich norms)")
    if spec.disentangled_attention:
        raise BadInputError(f"{spec.name}: LoRA activation memory of disentangled attention "
                            "(DeBERTa) is not modelled yet (its full fine-tuning is)")
    chosen = frozenset(t for t in targets if t != "gate" or spec.gated)
    first = _block(spec, work, attention, chosen, rank, True)
    rest = _block(spec, work, attention, chosen, rank, False)
    s, n = spec, work.tokens
    parts = [(f"blocks (× {s.n_layers})", first + (s.n_layers - 1) * rest)]
    masks = window_memory.lora_masked_saved(s, work, attention, bool(chosen & {"q", "k", "v"}))
    if masks:  # Mistral's sliding window under sdpa: the float mask copies, repeated K / V
        parts.append(("sliding-window masks", masks))
    if s.final_norm and s.norm != "none" and s.norm_placement != "post":
        parts.append(("final norm", _norm(s, work)))
    if s.pooler:
        parts.append(("pooler", work.itemsize * work.batch * s.d_model))
    if s.positions == "rope":
        parts.append(("RoPE tables", 2 * work.itemsize * work.seq_len * s.rotary_width))
    if s.lm_head:
        parts.append(("loss log-softmax", FLOAT32 * n * s.vocab_size))
    return SavedActivations(tuple((name, int(round(b))) for name, b in parts),
                            int(round(rest)))
