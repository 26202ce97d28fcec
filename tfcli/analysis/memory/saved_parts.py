"""The generic saved set: what autograd keeps for backward in one training forward pass, op by
op, as transformers' standard layer runs (the bytes torch.autograd.graph.saved_tensors_hooks
sees, each storage once), for the layouts (layouts/) to compose and extend.

Derived from what each op saves (torch's derivatives.yaml): a linear saves its input (its
weight is a parameter); a mul of two activations saves both; softmax and tanh their output;
native_layer_norm its input, mean and rstd (float32); transformers' RMSNorm upcasts to float32
and saves that copy, the normed values and rsqrt; sdpa (flash on CPU and CUDA) saves q, k, v,
its output and the row logsumexp, never the scores; adds, views and scalings save nothing;
a frozen operand is not needed for a gradient, so nothing is saved for it. Dropout: off by
default (p = 0, as Llama-style configs train); `dropout=True` counts the noise tensors torch's
dropout saves (dropout_saved).

Recomputation: `none` keeps everything; `selective` (Korthikanti et al. 2022) recomputes the
attention core, dropping the (B, H, T, S) probabilities; `full` (transformers' gradient
checkpointing) keeps only each block's input and recomputes the block during backward, so one
block's saved set is alive again at a time (`recompute_working_set`).
"""

from __future__ import annotations

from collections.abc import Callable

from tfcli.analysis.memory import window as window_memory
from tfcli.analysis.memory.base import (FLOAT32, INT64, Part, Workload, activation_saved,
                                        fused_qkv_extra)
from tfcli.analysis.memory.latent import (deepseek_moe, deepseek_moe_saved, latent_attention_saved)
from tfcli.analysis.memory.rope_layouts import (gptj_attention, gptj_saved, normed_itemsize,
                                                sdpa_output_copied)
from tfcli.spec.model import Spec

# (q/k/v saved, probabilities saved) of one attention, bytes: attention_core, or a layout's own
AttentionSaved = Callable[[Spec, Workload, str], tuple[float, float]]


def norm_saved(spec: Spec, work: Workload) -> float:
    """One norm: layer norm its input and float32 mean / rstd; RMS norm (transformers) its
    float32 copy of the input, the normed values in the compute dtype (OLMo 2's float32) and
    rsqrt."""
    n, d, it = work.tokens, spec.d_model, work.itemsize
    if spec.norm == "rmsnorm":
        return FLOAT32 * n * d + normed_itemsize(spec, it) * n * d + FLOAT32 * n
    return it * n * d + 2 * FLOAT32 * n


def attention_core(spec: Spec, work: Workload, attention: str) -> tuple[float, float]:
    """(q/k/v saved, probabilities saved) of one attention, bytes. Eager: q and K/V repeated
    to every head, as the batched matmuls copy them, and the softmax output; sdpa: q, k, v and
    the logsumexp (its output, already laid out (B, T, H, dh), is the very storage the output
    projection saves)."""
    s, n, it, t = spec, work.tokens, work.itemsize, work.seq_len
    heads = n * s.n_heads * s.head_dim
    if attention == "eager":
        # RoPE families (Llama's eager_attention_forward) take the softmax in float32 and cast
        # it back, both saved; GPT-2 and BERT take it in the compute dtype
        upcast = s.positions == "rope" and it < FLOAT32
        probs = work.batch * s.n_heads * t * t * ((FLOAT32 + it) if upcast else it)
        return 3 * it * heads, probs
    kv = 2 * n * s.kv_heads * s.head_dim
    return it * (heads + kv) + FLOAT32 * work.batch * s.n_heads * t, 0


def mlp_saved(spec: Spec, work: Workload, width: int | None = None,
              fused: frozenset[str] = frozenset()) -> float:
    # gated: the up projection and the product
    tensors = activation_saved(spec, fused) + (2 if spec.gated else 0)
    return tensors * work.tokens * (width or spec.d_ff) * work.itemsize


def qk_norm_saved(spec: Spec, work: Workload) -> float:
    """q/k RMS norms (Qwen3, OLMo 2, Gemma 3) as the block's norms: a float32 copy of q and k,
    their normed values and rsqrt per normed row (each head's row per_head, each_head and l2,
    each token's full)."""
    if spec.qk_norm == "none":
        return 0
    n, it = work.tokens, work.itemsize
    width = (spec.n_heads + spec.kv_heads) * spec.head_dim
    rows = n * (spec.n_heads + spec.kv_heads) if spec.qk_norm != "full" else 2 * n
    return FLOAT32 * n * width + normed_itemsize(spec, it) * n * width + FLOAT32 * rows


def moe_saved(spec: Spec, work: Workload) -> float:
    """A Mixtral-style experts layer: per routed slot (N x k of them) its gathered input, the
    gate/up product, the activation, the gated product and the expert's output in the compute
    dtype; 40 bytes a slot of float32 routing weights and int64 indices, and per token the
    router's float32 softmax (4E) and its row sum (measured on MixtralForCausalLM, float32 and
    bfloat16 alike: N x (40k + 4E + 4))."""
    s, n = spec, work.tokens
    if deepseek_moe(s):  # its own router, ungated shared experts (latent_memory.py)
        return deepseek_moe_saved(s, work, mlp_saved(s, work, s.shared_width))
    slots = n * s.experts_per_token
    routed = (work.itemsize * slots * (2 * s.d_model + 4 * s.expert_width)
              + n * (40 * s.experts_per_token + 4 * s.n_experts + 4))
    if not s.n_shared_experts:
        return routed
    # Qwen-MoE's shared experts: a gated MLP, and sigmoid(gate) x its output saving both
    return routed + mlp_saved(s, work, s.shared_width) + work.itemsize * n * (s.d_model + 1)


def dropout_saved(spec: Spec, work: Workload, attention: str, selective: bool) -> float:
    """Live dropouts (training, p > 0) of one block: torch's dropout multiplies by a noise tensor
    of the input's dtype, which it saves: after the attention's output projection and after the
    MLP (it·N·d each); on eager probabilities the noise and the dropped copy the matmul saves
    (2 it·B·H·T·S). CUDA's flash sdpa keeps only its RNG state (on CPU sdpa with dropout falls
    back to the math path, which saves what eager does)."""
    hidden = 2 * work.itemsize * work.tokens * spec.d_model
    if attention != "eager" or selective:
        return hidden
    return hidden + 2 * work.itemsize * work.batch * spec.n_heads * work.seq_len ** 2


def _fused_sdpa_copy(spec: Spec, tokens: int, fused: frozenset[str]) -> float:
    """sdpa on q/k/v sliced from a fused projection returns its output laid out (B, H, T, dh),
    so the output projection's (B, T, H x dh) input is a copy, saved beside sdpa's own output
    (an unfused Llama's is laid out (B, T, H, dh) already: a view of the same storage; Phi's
    and StableLM's partial rotary concatenate q (B, H, T, dh): rope_layouts)."""
    copied = "qkv" in fused or sdpa_output_copied(spec, fused)
    return tokens * spec.n_heads * spec.head_dim if copied else 0


def _fused_saved(spec: Spec, work: Workload, attention: str, fused: frozenset[str]) -> float:
    """A fused Q/K/V projection under sdpa: the v sdpa saves is a view, so the whole fused
    output is kept (its q and k parts beside RoPE's new q and k), and the output projection
    saves its own copy of sdpa's output. Eager saves q, k, v as it copies
    them for the batched matmuls, but at batch 1 without GQA the matmul's (H, T, dh) v is a
    view of the fused output, which is kept whole (measured on GPTNeoXForCausalLM); a fused
    gate|up saves the same 2F as two projections."""
    n = work.tokens
    if attention == "eager":
        one_view = work.batch == 1 and spec.kv_heads == spec.n_heads
        return work.itemsize * fused_qkv_extra(spec, n, fused) if one_view else 0
    return work.itemsize * (fused_qkv_extra(spec, n, fused) + _fused_sdpa_copy(spec, n, fused))


def block_saved(spec: Spec, work: Workload, attention: str, selective: bool,
                moe: bool = False, tp: int = 1, dropout: bool = False,
                fused: frozenset[str] = frozenset(),
                core: AttentionSaved = attention_core) -> float:
    """One block: its norms (input included), the linear inputs (normed inputs), attention
    (`core`: a layout's own attention module, Falcon's), the output projection's input and the
    MLP. Under tensor parallelism (Megatron, no sequence parallelism) each GPU holds the norms
    and the linears' full inputs, and its 1/tp of the heads and of the hidden units."""
    n, d, it = work.tokens, spec.d_model, work.itemsize
    norms = 1 if spec.parallel_residual == "one_norm" else 2
    norms += 2 if spec.norm_placement == "sandwich" else 0
    heads, probs = core(spec, work, attention)
    # GPT-NeoX's two LayerNorms read the same block input: saved once
    shared_input = spec.parallel_residual == "two_norms" and spec.norm != "rmsnorm"
    linear_inputs = (1 if spec.parallel_residual == "one_norm" else 2) * it * n * d
    o_proj = it * n * spec.n_heads * spec.head_dim
    if spec.latent_attention:  # MLA's projections, norms and core (latent_memory.py)
        heads, probs, o_proj = latent_attention_saved(spec, work, attention)
    mlp = moe_saved(spec, work) if moe else mlp_saved(spec, work, fused=fused)
    sharded = heads + (0 if selective else probs) + o_proj + mlp + qk_norm_saved(spec, work)
    sharded += _fused_saved(spec, work, attention, fused) + gptj_saved(spec, work, attention)
    if dropout:
        sharded += dropout_saved(spec, work, attention, selective)
    return (norms * norm_saved(spec, work) - (it * n * d if shared_input else 0)
            + linear_inputs + sharded / tp)


def outside_blocks(spec: Spec, work: Workload, recompute: str,
                   tp: int = 1) -> list[Part]:
    """Embedding norm, final norm and the head's input, RoPE tables, the loss (vocabulary-
    parallel over tp GPUs)."""
    s, n, d, it = spec, work.tokens, spec.d_model, work.itemsize
    parts: list[tuple[str, float]] = []
    if s.embedding_norm:
        parts.append(("embedding norm", norm_saved(s, work)))
    final = s.final_norm and s.norm != "none" and s.norm_placement != "post"
    parts.append(("final norm and head input", (norm_saved(s, work) if final else 0) + it * n * d))
    if s.pooler:
        parts.append(("pooler", it * work.batch * d))
    if s.positions == "rope" and recompute != "full" and not gptj_attention(s):
        # cos and sin, shared by the blocks (GPT-J's: per block, gptj_saved)
        parts.append(("RoPE tables", 2 * it * work.seq_len * s.rotary_width))
    if s.lm_head:  # the loss's float32 log-softmax over (B*T, V)
        parts.append(("loss log-softmax", FLOAT32 * n * s.vocab_size / tp))
    return parts



def _kept_blocks(spec: Spec, work: Workload, attention: str, recompute: str, tp: int,
                 dropout: bool, fused: frozenset[str], core: AttentionSaved) -> float:
    """Every block's saved bytes, dense and experts' blocks each their own (full recompute:
    each block's input alone); block 0 without an attention norm reads the embedding norm's
    output, already counted."""
    n_moe = spec.moe_layer_count(spec.n_layers)
    kept = 0.0
    for count, moe in ((spec.n_layers - n_moe, False), (n_moe, True)):
        block = block_saved(spec, work, attention, recompute == "selective", moe, tp, dropout,
                            fused, core)
        kept += count * (work.itemsize * work.tokens * spec.d_model if recompute == "full"
                         else block)
    if not spec.first_attn_norm and recompute != "full":
        kept -= norm_saved(spec, work)
    return kept


def full_block(spec: Spec, work: Workload, attention: str, tp: int, dropout: bool,
               fused: frozenset[str], core: AttentionSaved = attention_core) -> float:
    """The largest block's whole saved set (what full recomputation rebuilds), its window
    masks, soft-capping and Gemma norms included."""
    n_moe = spec.moe_layer_count(spec.n_layers)
    kinds = ((spec.n_layers - n_moe, False), (n_moe, True))
    block = max(block_saved(spec, work, attention, False, moe, tp, dropout, fused, core)
                for count, moe in kinds if count)
    return block + window_memory.layer_saved(spec, work, attention, False,
                                             window_memory.masked_layers(spec, work) > 0, tp)


def generic_saved(spec: Spec, work: Workload, attention: str, recompute: str, tp: int,
                  dropout: bool, fused: frozenset[str],
                  core: AttentionSaved = attention_core) -> tuple[list[Part], float]:
    """(parts, the largest block's full set) of transformers' standard layer stack, under the
    attention it really runs (Gemma 2: no sdpa): the blocks, what lies outside them, RoBERTa's
    ids, the sliding windows' masks, soft-capping and Gemma norms (window.py), the
    embeddings' dropout noise."""
    attention = window_memory.softcapped_as_eager(spec, attention)
    kept = _kept_blocks(spec, work, attention, recompute, tp, dropout, fused, core)
    parts = [(f"blocks (× {spec.n_layers})", kept)]
    parts += outside_blocks(spec, work, recompute, tp)
    if spec.position_offset and spec.type_vocab_size:  # RobertaEmbeddings: its int64 position
        # ids made from the input ids and the token types gathered by them, saved by lookups
        parts.append(("position and token-type ids", 2 * INT64 * work.tokens))
    parts += window_memory.saved_parts(spec, work, attention, recompute, tp)  # Mistral, Gemma
    if dropout:  # the embeddings' dropout noise
        parts.append(("embedding dropout", work.itemsize * work.tokens * spec.d_model))
    return parts, full_block(spec, work, attention, tp, dropout, fused, core)


def learned_position_parts(spec: Spec, work: Workload, attention: str,
                           recompute: str) -> list[Part]:
    """A decoder's learned positions as GPT-2's (and BART's decoder's) modules save them:
    the int64 position ids its lookup keeps; under gradient checkpointing an eager stack's
    (B, 1, T, S) float mask, which its blocks take as a tensor argument (measured:
    tests/parity/memory_families.py)."""
    if spec.positions != "learned":
        return []
    parts: list[Part] = []
    attention = window_memory.softcapped_as_eager(spec, attention)
    if recompute == "full" and attention == "eager":
        parts.append(("eager mask", work.itemsize * work.batch * work.seq_len ** 2))
    return parts + [("position ids", INT64 * work.seq_len)]
