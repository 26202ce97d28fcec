"""Typed weight containers, the one walk over them that names every array, and `assemble`.

The containers say what kind of node each part of a model is (attention, latent attention, FFN,
MoE, block, stack) and give each array a typed name; which arrays a spec has, and their shapes,
are its blueprint's (tfcli.spec.blueprint), and `assemble` builds the tree from it. Matrices are
stored (in_features, out_features) so a projection is `x @ w`, as in picoGPT. An array's path
here (`decoder.blocks.3.attn.wq`) is its name everywhere in tfcli: the blueprint, the params
components, the trace rows and the checkpoint tables use it
(tests/checkpoints/test_weight_names.py). How the arrays lie in memory is layout.py's; how random
ones are drawn, init.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import Field, dataclass, fields
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from tfcli.core.arrays import Array

if TYPE_CHECKING:
    from tfcli.spec.model import Spec


@dataclass
class NormWeights:
    scale: Array | None  # None: a norm without parameters (layernorm_noaffine)
    bias: Array | None  # layernorm only


@dataclass
class AttentionWeights:
    wq: Array
    wk: Array
    wv: Array
    wo: Array
    bq: Array | None = None
    bk: Array | None = None
    bv: Array | None = None
    bo: Array | None = None
    q_norm: NormWeights | None = None  # spec.qk_norm: per_head weights are shared by every head
    k_norm: NormWeights | None = None
    # disentangled attention without share_att_key: the relative-position table's own key (c2p)
    # and query (p2c) projections
    wpos_k: Array | None = None
    bpos_k: Array | None = None
    wpos_q: Array | None = None
    bpos_q: Array | None = None
    sinks: Array | None = None  # (n_heads,) logits joining each softmax (spec.attention_sinks)


@dataclass
class LatentAttentionWeights:
    """Multi-head latent attention (DeepSeek-V2/V3)."""

    wkv_a: Array  # the latent, then the shared RoPE key
    kv_a_norm: NormWeights
    wkv_b: Array  # each head's no-RoPE key, then its value
    wo: Array
    wq: Array | None = None  # without q_lora_rank
    wq_a: Array | None = None  # with q_lora_rank: x -> q_a -> norm -> q_b
    q_a_norm: NormWeights | None = None
    wq_b: Array | None = None
    bq_a: Array | None = None  # spec.attention_bias: on q_a and kv_a
    bkv_a: Array | None = None
    bo: Array | None = None  # spec.attention_out_bias


@dataclass
class FFNWeights:
    w_up: Array
    w_down: Array
    w_gate: Array | None = None  # gated activations only
    b_up: Array | None = None
    b_gate: Array | None = None
    b_down: Array | None = None


@dataclass
class MoEWeights:
    router: Array
    experts: list[FFNWeights]  # each of hidden width spec.expert_width
    router_bias: Array | None = None  # chooses experts only (a buffer, see BUFFERS)
    router_b: Array | None = None  # the router's linear bias on its logits (gpt-oss)
    shared: FFNWeights | None = None  # the shared experts as one FFN of spec.shared_width
    shared_gate: Array | None = None  # sigmoid gate on the shared output


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
    # this block's own relative-position table (UMT5, spec.relative_bias_per_layer); None: the
    # stack's shared one (T5) or none
    relative_bias: Array | None = None


@dataclass
class StackWeights:
    blocks: list[BlockWeights]  # under spec.shared_layers, one BlockWeights listed n_layers times
    final_norm: NormWeights | None
    relative_bias: Array | None = None  # T5: shared by the stack's blocks
    # the stack's own embedding tables (spec.per_stack_embeddings, BART); None: Weights' shared ones
    position_embedding: Array | None = None
    embedding_norm: NormWeights | None = None
    # disentangled attention (DeBERTa): relative-position embeddings shared by the stack's
    # blocks, and their norm (spec.relative_embedding_norm)
    relative_embedding: Array | None = None
    relative_embedding_norm: NormWeights | None = None


@dataclass
class Weights:
    token_embedding: Array  # embedding_width wide: d_model unless embedding_dim
    position_embedding: Array | None  # learned positions
    token_type_embedding: Array | None
    embedding_norm: NormWeights | None
    encoder: StackWeights | None
    decoder: StackWeights | None
    lm_head: Array | None  # None when tied or headless
    # factorised embeddings (spec.embedding_dim): the tables are embedding_dim wide, then this
    embedding_project: Array | None = None
    embedding_project_bias: Array | None = None
    pooler_w: Array | None = None
    pooler_b: Array | None = None
    lm_head_bias: Array | None = None  # spec.lm_head_bias only
    # the task heads (tfcli.engine.heads): masked_lm's transform, a classifier's matrix
    head_dense: Array | None = None
    head_dense_bias: Array | None = None
    head_norm: NormWeights | None = None
    classifier: Array | None = None  # classification heads
    classifier_bias: Array | None = None
    final_logits_bias: Array | None = None  # spec.final_logits_bias (a buffer)

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
# counted (tfcli.spec.blueprint.Component.buffer)
BUFFERS = ("router_bias", "final_logits_bias")


def count_parameters(weights: Weights, spec: Spec) -> int:
    """Parameters held, each shared array once, buffers left out (equals
    tfcli.spec.counts.total_parameters of the `spec` they were built for, whose
    router_bias_parameter makes the router bias a parameter)."""
    buffers = BUFFERS
    if spec.router_bias_parameter:
        buffers = tuple(b for b in BUFFERS if b != "router_bias")
    return sum(a.size for path, a in named_arrays(weights) if path.rsplit(".", 1)[-1] not in buffers)


# --- the tree from a blueprint ------------------------------------------------------------------

Node = dict[str, "Node | Array"]  # a nested dict of a blueprint's paths, arrays at the leaves


def _node_type(name: str, node: Node) -> type:
    """The container a blueprint node is, by its name and what it holds."""
    if name.endswith("norm"):
        return NormWeights
    if name in ("attn", "cross_attn"):
        return LatentAttentionWeights if "wkv_a" in node else AttentionWeights
    if name == "ffn":
        return MoEWeights if "router" in node else FFNWeights
    if name == "shared":  # experts and blocks are lists: _build and _block_list build them
        return FFNWeights
    if name in ("encoder", "decoder"):
        return StackWeights
    raise ValueError(f"no weights container for a blueprint node named {name!r}")


@cache
def _fields(cls: type) -> tuple[Field[Any], ...]:
    return fields(cls)


def _build(cls: type, node: Node, layers: int = 0) -> object:
    """`cls` with the node's children as fields; a field the node lacks is None."""
    values: dict[str, object] = {}
    for f in _fields(cls):
        child = node.get(f.name)
        if isinstance(child, dict):
            if f.name == "blocks":
                child = _block_list(child, layers)
            elif f.name == "experts":
                child = [_build(FFNWeights, child[str(e)]) for e in range(len(child))]  # type: ignore[arg-type]
            else:
                child = _build(_node_type(f.name, child), child)
        values[f.name] = child
    return cls(**values)


def _block_list(blocks: Node, layers: int) -> list[BlockWeights]:
    """Blocks 0..layers-1; a blueprint with one block for many (shared_layers) lists it for all."""
    built = [_build(BlockWeights, blocks[str(i)]) for i in range(len(blocks))]  # type: ignore[arg-type]
    return built * layers if len(built) == 1 and layers > 1 else built  # type: ignore[return-value]


def nest(items: Iterable[tuple[str, Array | None]]) -> Node:
    """Dotted paths -> a nested dict; a None value is a node without arrays (an empty module)."""
    root: Node = {}
    for path, array in items:
        *parents, last = path.split(".")
        node = root
        for part in parents:
            node = node.setdefault(part, {})  # type: ignore[assignment]
        node[last] = {} if array is None else array
    return root


def assemble(items: Iterable[tuple[str, Array | None]], layers: dict[str, int]) -> Weights:
    """The Weights tree of (path, array) pairs: every array of a blueprint, placed at its path
    (None: a module without parameters). `layers`: blocks per stack, for shared_layers."""
    root = nest(items)
    stacks = {name: _build(StackWeights, root.pop(name), layers.get(name, 0))  # type: ignore[arg-type]
              for name in ("encoder", "decoder") if name in root}
    return _build(Weights, {**root, **stacks})  # type: ignore[return-value, dict-item]


def assemble_part(items: Iterable[tuple[str, Array | None]], name: str) -> object:
    """One node of a tree from paths relative to it: `block`, `attn`, `ffn`, a norm, or an
    array (`relative_bias`: its one item has the path '')."""
    items = list(items)
    if len(items) == 1 and items[0][0] == "" and items[0][1] is not None:
        return items[0][1]
    node = nest((path, a) for path, a in items if path)  # ('', None): the node itself, empty
    cls = BlockWeights if name == "block" else _node_type(name, node)
    return _build(cls, node)
