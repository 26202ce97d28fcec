"""Typed weight containers, and the one walk over them that names every array.

Matrices are stored (in_features, out_features) so a projection is `x @ w`, as in picoGPT.
An array's path here (`decoder.blocks.3.attn.wq`) is its name everywhere in tfcli: the params
components, the trace rows and the checkpoint tables use it (tests/checkpoints/test_weight_names.py).
How the arrays lie in memory is layout.py's; how random ones are drawn, init.py's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields

import numpy as np

from tfcli.core.arrays import Array


@dataclass
class NormWeights:
    scale: Array | None  # (d_model,) or None for parameter-free LN
    bias: Array | None  # (d_model,) for layernorm only


@dataclass
class AttentionWeights:
    wq: Array  # (d_model, n_heads * d_head)
    wk: Array  # (d_model, n_kv_heads * d_head)
    wv: Array  # (d_model, n_kv_heads * d_head)
    wo: Array  # (n_heads * d_head, d_model)
    bq: Array | None = None
    bk: Array | None = None
    bv: Array | None = None
    bo: Array | None = None
    q_norm: NormWeights | None = None  # (d_head,) weights shared by every head (spec.qk_norm)
    k_norm: NormWeights | None = None
    # disentangled attention without share_att_key: the relative-position table's own key (c2p)
    # and query (p2c) projections, (d_model, n_heads * d_head) and (n_heads * d_head,)
    wpos_k: Array | None = None
    bpos_k: Array | None = None
    wpos_q: Array | None = None
    bpos_q: Array | None = None


@dataclass
class LatentAttentionWeights:
    """Multi-head latent attention (DeepSeek-V2/V3); r = kv_lora_rank, dr = qk_rope_head_dim,
    dn = qk_nope_head_dim, dv = v_head_dim, qk = dn + dr."""

    wkv_a: Array  # (d_model, r + dr): the latent, then the shared RoPE key
    kv_a_norm: NormWeights  # (r,)
    wkv_b: Array  # (r, n_heads * (dn + dv)): each head's no-RoPE key, then its value
    wo: Array  # (n_heads * dv, d_model)
    wq: Array | None = None  # (d_model, n_heads * qk), without q_lora_rank
    wq_a: Array | None = None  # (d_model, q_lora_rank)
    q_a_norm: NormWeights | None = None  # (q_lora_rank,)
    wq_b: Array | None = None  # (q_lora_rank, n_heads * qk)
    bq_a: Array | None = None  # spec.attention_bias: on q_a and kv_a
    bkv_a: Array | None = None
    bo: Array | None = None  # spec.attention_out_bias


@dataclass
class FFNWeights:
    w_up: Array  # (d_model, d_ff)
    w_down: Array  # (d_ff, d_model)
    w_gate: Array | None = None  # (d_model, d_ff), gated activations only
    b_up: Array | None = None
    b_gate: Array | None = None
    b_down: Array | None = None


@dataclass
class MoEWeights:
    router: Array  # (d_model, n_experts), no bias
    experts: list[FFNWeights]  # each of hidden width spec.expert_width
    router_bias: Array | None = None  # (n_experts,): chooses experts only (a buffer, see BUFFERS)
    shared: FFNWeights | None = None  # the shared experts as one FFN of spec.shared_width
    shared_gate: Array | None = None  # (d_model, 1): sigmoid gate on the shared output


@dataclass
class BlockWeights:
    attn_norm: NormWeights | None
    attn: AttentionWeights | LatentAttentionWeights
    ffn_norm: NormWeights | None
    ffn: FFNWeights | MoEWeights
    cross_norm: NormWeights | None = None
    cross_attn: AttentionWeights | None = None
    # norms on each sublayer's output, inside the residual (norm_placement sublayer_post, sandwich)
    attn_post_norm: NormWeights | None = None
    ffn_post_norm: NormWeights | None = None
    # (relative_buckets, n_heads): this block's own relative-position table (UMT5,
    # spec.relative_bias_per_layer); None: the stack's shared one (T5) or none
    relative_bias: Array | None = None


@dataclass
class StackWeights:
    blocks: list[BlockWeights]  # under spec.shared_layers, one BlockWeights listed n_layers times
    final_norm: NormWeights | None
    relative_bias: Array | None = None  # (relative_buckets, n_heads), shared by the stack's blocks
    # the stack's own embedding tables (spec.per_stack_embeddings, BART); None: Weights' shared ones
    position_embedding: Array | None = None  # (max_seq_len + position_offset, embedding_width)
    embedding_norm: NormWeights | None = None
    # disentangled attention (DeBERTa): (spec.relative_rows, d_model) relative-position
    # embeddings shared by the stack's blocks, and their norm (spec.relative_embedding_norm)
    relative_embedding: Array | None = None
    relative_embedding_norm: NormWeights | None = None


@dataclass
class Weights:
    token_embedding: Array  # (vocab_size, embedding_width): d_model unless embedding_dim
    position_embedding: Array | None  # (max_seq_len + position_offset, ..), learned positions
    token_type_embedding: Array | None  # (type_vocab_size, embedding_width)
    embedding_norm: NormWeights | None
    encoder: StackWeights | None
    decoder: StackWeights | None
    lm_head: Array | None  # (d_model, vocab_size); None when tied or headless
    # factorised embeddings (spec.embedding_dim): the tables are embedding_dim wide, then this
    embedding_project: Array | None = None  # (embedding_dim, d_model)
    embedding_project_bias: Array | None = None  # (d_model,)
    pooler_w: Array | None = None  # (d_model, d_model)
    pooler_b: Array | None = None  # (d_model,)
    lm_head_bias: Array | None = None  # (vocab_size,), spec.lm_head_bias only
    # the task heads (tfcli.engine.heads): masked_lm's transform, a classifier's matrix
    head_dense: Array | None = None  # (d_model, d_model), head masked_lm
    head_dense_bias: Array | None = None  # (d_model,), with spec.bias
    head_norm: NormWeights | None = None  # (d_model,), the spec's norm
    classifier: Array | None = None  # (d_model, num_labels), classification heads
    classifier_bias: Array | None = None  # (num_labels,), spec.classifier_bias
    final_logits_bias: Array | None = None  # (1, vocab_size), spec.final_logits_bias (a buffer)

    @property
    def stacks(self) -> list[StackWeights]:
        return [s for s in (self.encoder, self.decoder) if s is not None]


def named_arrays(obj: object, prefix: str = "") -> Iterator[tuple[str, Array]]:
    """(dotted path, array) for every array inside a weights container, in field order, e.g.
    `decoder.blocks.0.attn.wq`; an array reachable twice (shared by hand) is yielded once, under
    its first path."""
    seen: set[int] = set()
    for path, array in _walk(obj, prefix):
        if id(array) not in seen:
            seen.add(id(array))
            yield path, array


def _walk(obj: object, path: str) -> Iterator[tuple[str, Array]]:
    if isinstance(obj, np.ndarray):
        yield path, obj
    elif isinstance(obj, list):
        for index, item in enumerate(obj):
            yield from _walk(item, f"{path}.{index}")
    elif obj is not None and hasattr(obj, "__dataclass_fields__"):
        for f in fields(obj):  # type: ignore[arg-type]
            yield from _walk(getattr(obj, f.name), f"{path}.{f.name}" if path else f.name)


def iter_arrays(obj: object) -> Iterator[Array]:
    """Every array inside a weights container, each shared array once (tied weights count once)."""
    return (array for _, array in named_arrays(obj))


# Fields holding arrays transformers keeps as buffers, not parameters: loaded and run, not
# counted (tfcli.spec.counts.Component.buffer)
BUFFERS = ("router_bias", "final_logits_bias")


def count_parameters(weights: Weights) -> int:
    """Parameters held, each shared array once, buffers left out (equals
    tfcli.spec.counts.total_parameters)."""
    return sum(a.size for path, a in named_arrays(weights) if path.rsplit(".", 1)[-1] not in BUFFERS)
