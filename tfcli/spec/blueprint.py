"""The blueprint of a spec: every weight it has, written once.

`blueprint(spec)` lists each array as a `Component`: its Weights path (`decoder.blocks.*.attn.wq`,
`*` for every block or expert index), shape, group (attention / FFN / norm / embedding / position /
head / pooler), role (matrix, vector, table: what a quantiser may touch), init rule (normal, zeros,
ones) and its place in the seed's draw order. Everything that needs to know which arrays exist
reads it and lists none itself:
- the analytic counts (tfcli.spec.counts: sums of `count`, never an allocation, so a
  trillion-parameter spec costs a few hundred tuples);
- the random initialiser and the loader's skeleton (tfcli.engine.init: `expand` the `*` paths,
  draw in `draw` order, assemble the containers of tfcli.engine.weights);
- the checkpoint verdict (tfcli.checkpoints.stored: expected stored shapes per concrete path);
- the trace's parameter ownership and the memory planner's tensor sizes.

Entries come in forward order (what `tfcli params` shows). The draw order is the order in which
the random initialiser consumes the seed's generator: `draw` keys, compared as tuples once the
`*` of the path are filled in, so that a seed keeps meaning the same weights whatever order the
table is shown in. A module without parameters that still runs (LayerNorm without affine, the
final norm of such a stack) is an entry with `array=False`: shown nowhere, built as an empty node.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import KW_ONLY, dataclass, replace
from math import prod
from typing import Literal

from tfcli.spec.model import Spec

# Component groups, used for the attention / FFN split and the non-embedding total.
EMBEDDING, ATTENTION, FFN, NORM, POSITION, HEAD, POOLER = (
    "embedding", "attention", "ffn", "norm", "position", "head", "pooler",
)
TIED_NOTE = "tied — shared with token embedding"
ROUTER_BIAS_NOTE = "buffer, not a parameter: chooses experts only"
LOGITS_BIAS_NOTE = "buffer, not a parameter: added to the logits"
SHARED_NOTE = "shared by all {:,} blocks (shared_layers): counted once"
# In a component's path, `*` stands for every index of the list before it: `decoder.blocks.*`
# is every decoder block, `ffn.experts.*` every expert of a block. The same mark in a `draw`
# key stands for that index.
EVERY = "*"

Init = Literal["normal", "zeros", "ones"]  # normal: N(0, spec.init_std^2) from the seed
# matrix: a linear layer's weight (x @ W; what int8 / int4 quantise and LoRA adapts);
# vector: a bias or a norm's scale; table: rows looked up or added (embeddings, position tables)
Role = Literal["matrix", "vector", "table"]
DrawKey = tuple[int | str, ...]


@dataclass(frozen=True)
class Component:
    """One parameter array, repeated `repeat` times (once per block, expert, ...)."""

    name: str  # display name, e.g. "decoder.block.attn.q.weight"
    group: str
    shape: tuple[int, ...]
    repeat: int = 1
    note: str = ""
    tied: bool = False  # shares storage with another component: counted as 0
    _: KW_ONLY
    # a stored array transformers keeps as a buffer, not a parameter (DeepSeek-V3's router
    # correction bias): shown and loaded, counted as 0 as num_parameters() counts it
    buffer: bool = False
    # The array's path in tfcli.engine.weights.Weights, as the checkpoint tables and the trace
    # rows name it, with EVERY for a block / expert index: "decoder.blocks.*.attn.wq". A tied
    # component carries the path of the array it shares ("token_embedding").
    path: str
    role: Role = "matrix"
    init: Init = "normal"
    draw: DrawKey = ()  # place in the seed's draw order (see the module docstring)
    array: bool = True  # False: a module without parameters (a node, no array, no count)

    @property
    def per_instance(self) -> int:
        return 0 if self.tied or self.buffer or not self.array else prod(self.shape)

    @property
    def count(self) -> int:
        return self.per_instance * self.repeat


def _matrix(name: str, group: str, shape: tuple[int, ...], repeat: int, path: str,
            draw: DrawKey, **kw: object) -> Component:
    return Component(name, group, shape, repeat, path=path, draw=draw, **kw)  # type: ignore[arg-type]


def _bias(name: str, group: str, width: int, repeat: int, path: str,
          draw: DrawKey) -> Component:
    return Component(name, group, (width,), repeat, path=path, role="vector", init="zeros",
                     draw=draw)


def _norm(spec: Spec, name: str, path: str, draw: DrawKey, group: str = NORM, repeat: int = 1,
          width: int | None = None, heads: int | None = None) -> list[Component]:
    """A norm's scale (and LayerNorm's bias), (width,) or, one per head, (heads, width); a
    (1 + weight) norm (norm_unit_offset) starts at weight 0, the same effective scale 1. A
    LayerNorm without affine is a module of no array."""
    d = width or spec.d_model
    shape = (heads, d) if heads else (d,)
    if spec.norm in ("layernorm", "rmsnorm", "layernorm_nobias"):
        unit: Init = "zeros" if spec.norm_unit_offset else "ones"
        out = [Component(f"{name}.scale", group, shape, repeat, path=f"{path}.scale",
                         role="vector", init=unit, draw=draw)]
        if spec.norm == "layernorm":
            out.append(Component(f"{name}.bias", group, shape, repeat, path=f"{path}.bias",
                                 role="vector", init="zeros", draw=draw))
        return out
    if spec.norm == "layernorm_noaffine":
        return [Component(name, group, (d,), repeat, path=path, role="vector", array=False,
                          draw=draw)]
    return []


def _linear(name: str, group: str, shape: tuple[int, int], repeat: int, path: str, proj: str,
            draw: DrawKey, bias: bool | None = False) -> list[Component]:
    """x @ W [+ b] named `proj`: weight `{path}.w{proj}` (in, out), bias `{path}.b{proj}`."""
    out = [_matrix(f"{name}.{proj}.weight", group, shape, repeat, f"{path}.w{proj}", draw)]
    if bias:
        out.append(_bias(f"{name}.{proj}.bias", group, shape[1], repeat, f"{path}.b{proj}",
                         (*draw, 1)))
    return out


def _latent_attention(spec: Spec, name: str, path: str, repeat: int,
                      draw: DrawKey) -> list[Component]:
    """MLA (DeepSeek-V2/V3): the query (full, or q_a -> norm -> q_b), the joint down-projection
    to the latent and the shared RoPE key (kv_a), its norm, the up-projection of every head's
    no-RoPE key and value (kv_b), the output. Biases, with attention_bias, on q_a and kv_a only
    (and on o with attention_out_bias), as transformers builds them. Drawn kv_a, kv_b, o, then
    the query."""
    d, H, r = spec.d_model, spec.n_heads, spec.kv_lora_rank
    qk, dr, dn, dv = spec.head_dim, spec.qk_rope_head_dim, spec.qk_nope_head_dim, spec.v_head_dim
    def linear(proj: str, shape: tuple[int, int], rank: int, bias: bool | None = False) -> list[Component]:
        return _linear(name, ATTENTION, shape, repeat, path, proj, (*draw, rank), bias)
    if spec.q_lora_rank is None:
        out = linear("q", (d, H * qk), 4)
    else:
        out = [*linear("q_a", (d, spec.q_lora_rank), 5, spec.attention_bias),
               *_norm(spec, f"{name}.q_a_norm", f"{path}.q_a_norm", (*draw, 6), ATTENTION, repeat,
                      spec.q_lora_rank),
               *linear("q_b", (spec.q_lora_rank, H * qk), 7)]
    out += linear("kv_a", (d, r + dr), 0, spec.attention_bias)  # type: ignore[operator]
    out += _norm(spec, f"{name}.kv_a_norm", f"{path}.kv_a_norm", (*draw, 1), ATTENTION, repeat, r)
    out += linear("kv_b", (r, H * (dn + dv)), 2)  # type: ignore[arg-type, operator]
    return out + linear("o", (H * dv, d), 3, spec.attention_out_bias)  # type: ignore[operator]


def _attention(spec: Spec, name: str, path: str, repeat: int, draw: DrawKey) -> list[Component]:
    """q, k, v (d, H*dh | Hkv*dh), o (H*dh, d), their biases, in that order and drawn so."""
    if spec.latent_attention:  # decoder-only: never a cross-attention
        return _latent_attention(spec, name, path, repeat, draw)
    d, q, kv = spec.d_model, spec.n_heads * spec.head_dim, spec.kv_heads * spec.head_dim
    shapes = {"q": (d, q), "k": (d, kv), "v": (d, kv), "o": (q, d)}
    out = [_matrix(f"{name}.{proj}.weight", ATTENTION, shape, repeat, f"{path}.w{proj}",
                   (*draw, rank)) for rank, (proj, shape) in enumerate(shapes.items())]
    biased = ("q", "k", "v") if spec.attention_bias else ()
    biased += ("o",) if spec.attention_out_bias else ()
    out += [_bias(f"{name}.{proj}.bias", ATTENTION, shapes[proj][1], repeat, f"{path}.b{proj}",
                  (*draw, rank, 1)) for rank, proj in enumerate(shapes) if proj in biased]
    if spec.attention_sinks:  # one logit per query head (gpt-oss)
        out.append(_bias(f"{name}.sinks", ATTENTION, spec.n_heads, repeat, f"{path}.sinks",
                         (*draw, 7)))
    return out + _position_projections(spec, name, path, repeat, draw)


def _position_projections(spec: Spec, name: str, path: str, repeat: int,
                          draw: DrawKey) -> list[Component]:
    """Disentangled attention without share_att_key: its own (d, H*dh) projections of the
    relative-position table, pos_k for c2p and pos_q for p2c [+ biases]."""
    if not spec.disentangled_attention or spec.share_att_key:
        return []
    d, width, out = spec.d_model, spec.n_heads * spec.head_dim, []
    for rank, (term, proj) in enumerate((("c2p", "pos_k"), ("p2c", "pos_q")), start=4):
        if term in spec.disentangled_attention:
            out += _linear(name, ATTENTION, (d, width), repeat, path, proj, (*draw, rank),
                           spec.attention_bias)
    return out


def _qk_norms(spec: Spec, name: str, path: str, repeat: int, draw: DrawKey) -> list[Component]:
    """Self-attention q/k norms: per_head, one (d_head,) weight each shared by every head;
    each_head, a (d_head,) weight per head ((n_heads, d_head) and (n_kv_heads, d_head)); full,
    over the whole projection ((n_heads * d_head,) and (n_kv_heads * d_head,)); l2 has no
    weights."""
    if spec.qk_norm in ("none", "l2"):
        return []
    heads = (spec.n_heads, spec.kv_heads) if spec.qk_norm == "each_head" else (None, None)
    return [c for x, width, h in zip("qk", spec.qk_norm_widths, heads)
            for c in _norm(spec, f"{name}.{x}_norm", f"{path}.{x}_norm", (*draw, 6), ATTENTION,
                           repeat, width, h)]


def _dense_ffn(spec: Spec, name: str, path: str, repeat: int, draw: DrawKey,
               width: int | None = None) -> list[Component]:
    """up (d, f), gate (d, f) when gated, down (f, d) [+ biases]; drawn up, down, then gate."""
    d, f = spec.d_model, width or spec.d_ff
    out = [_matrix(f"{name}.up.weight", FFN, (d, f), repeat, f"{path}.w_up", (*draw, 0))]
    if spec.gated:
        out.append(_matrix(f"{name}.gate.weight", FFN, (d, f), repeat, f"{path}.w_gate",
                           (*draw, 2)))
    out.append(_matrix(f"{name}.down.weight", FFN, (f, d), repeat, f"{path}.w_down", (*draw, 1)))
    if spec.ffn_bias:
        out.append(_bias(f"{name}.up.bias", FFN, f, repeat, f"{path}.b_up", (*draw, 3)))
        if spec.gated:
            out.append(_bias(f"{name}.gate.bias", FFN, f, repeat, f"{path}.b_gate", (*draw, 3)))
        out.append(_bias(f"{name}.down.bias", FFN, d, repeat, f"{path}.b_down", (*draw, 3)))
    return out


def _ffn(spec: Spec, name: str, path: str, repeat: int, draw: DrawKey) -> list[Component]:
    """The FFN of `repeat` blocks: dense, MoE, or (moe_layer_step, dense_layers) both, each
    component repeated over the blocks of its kind (`*` then stands for those blocks). MoE is
    drawn router, experts, router bias, shared experts, shared gate."""
    moe = spec.moe_layer_count(repeat)
    dense = (_dense_ffn(spec, f"{name}.ffn", f"{path}.ffn", repeat - moe, draw)
             if moe < repeat else [])
    if not moe:
        return dense
    router = [_matrix(f"{name}.router.weight", FFN, (spec.d_model, spec.n_experts), moe,
                      f"{path}.ffn.router", (*draw, 0))]
    if spec.router_bias:  # drawn, not zero as transformers starts it: random tests then see it
        parameter = spec.router_bias_parameter  # ERNIE 4.5's; DeepSeek-V3's is a buffer
        router.append(Component(f"{name}.router.bias", FFN, (spec.n_experts,), moe,
                                "" if parameter else ROUTER_BIAS_NOTE, buffer=not parameter,
                                path=f"{path}.ffn.router_bias", role="vector", draw=(*draw, 2)))
    if spec.router_logits_bias:  # the router's own linear bias (gpt-oss): a parameter
        router.append(_bias(f"{name}.router.logits_bias", FFN, spec.n_experts, moe,
                            f"{path}.ffn.router_b", (*draw, 5)))
    experts = _dense_ffn(spec, f"{name}.experts", f"{path}.ffn.experts.{EVERY}",
                         moe * spec.n_experts, (*draw, 1, EVERY), spec.expert_width)
    return [*dense, *router, *experts, *_shared_experts(spec, name, f"{path}.ffn", moe, draw)]


def _shared_experts(spec: Spec, name: str, path: str, repeat: int,
                    draw: DrawKey) -> list[Component]:
    """Shared experts as one FFN of their summed width, and Qwen2-MoE's (d_model, 1) gate."""
    if not spec.n_shared_experts:
        return []
    out = _dense_ffn(spec, f"{name}.shared_experts", f"{path}.shared", repeat, (*draw, 3),
                     spec.shared_width)
    if spec.shared_expert_gate:
        out.append(_matrix(f"{name}.shared_gate", FFN, (spec.d_model, 1), repeat,
                           f"{path}.shared_gate", (*draw, 4)))
    return out


_MOE_FIELDS = ("router", "router_bias", "router_b", "experts", "shared", "shared_gate")  # a block's `ffn.<field>` of MoE


def block_indices(spec: Spec, path: str) -> range | list[int]:
    """The blocks `stack.blocks.*.<rest>` stands for: every block of the stack; an FFN array of
    a stack mixing dense and MoE blocks, only the blocks of its kind."""
    layers = spec.encoder_layers if path.startswith("encoder.") else spec.decoder_layers
    rest = path.split(f".blocks.{EVERY}.", 1)[-1].split(".")
    if rest[0] == "attn_norm" and not spec.first_attn_norm:  # block 0 has none (ModernBERT)
        return range(1, layers)
    if not spec.mixed_ffn_layers or rest[0] != "ffn":
        return range(layers)
    return [i for i in range(layers) if has_block(spec, path, i)]


def has_block(spec: Spec, path: str, layer: int) -> bool:
    """Whether block `layer` has the array `stack.blocks.*.<rest>` (one of block_indices, found
    without listing them: a stack may have 10^9 blocks)."""
    rest = path.split(f".blocks.{EVERY}.", 1)[-1].split(".")
    if rest[0] == "attn_norm" and not spec.first_attn_norm:
        return layer >= 1
    if not spec.mixed_ffn_layers or rest[0] != "ffn":
        return True
    moe = len(rest) > 1 and rest[1] in _MOE_FIELDS
    return spec.moe_layer(layer) == moe


def _relative_embeddings(spec: Spec, stack: str, draw: DrawKey) -> list[Component]:
    """Disentangled attention: the stack's (2 x span, d_model) relative-position table, shared
    by its blocks, and the norm applied to it once per forward pass (drawn after the blocks)."""
    if not spec.disentangled_attention:
        return []
    table = Component(f"{stack}.relative_embedding", POSITION, (spec.relative_rows, spec.d_model),
                      note="shared by all blocks", path=f"{stack}.relative_embedding",
                      role="table", draw=(*draw, 3))
    norm = _norm(spec, f"{stack}.relative_embedding_norm", f"{stack}.relative_embedding_norm",
                 (*draw, 4), POSITION) if spec.relative_embedding_norm else []
    return [table, *norm]


def _stack(spec: Spec, stack: str, n_layers: int, cross: bool, draw: DrawKey) -> list[Component]:
    """A stack: its relative-position table (DeBERTa), its blocks, its final norm."""
    blocks = _relative_embeddings(spec, stack, draw)
    if spec.shared_layers:  # one block's arrays, every block runs them: counted once
        shared = _blocks(spec, stack, 1, cross, f"{stack}.blocks.0", (*draw, 1, 0))
        blocks += [replace(c, note=SHARED_NOTE.format(n_layers)) for c in shared]
    else:
        blocks += _blocks(spec, stack, n_layers, cross, f"{stack}.blocks.{EVERY}",
                          (*draw, 1, EVERY))
    final = (_norm(spec, f"{stack}.final_norm", f"{stack}.final_norm", (*draw, 2))
             if spec.final_norm else [])
    return blocks + final


def _relative_bias(spec: Spec, stack: str, block: str, n_layers: int, path: str,
                   draw: DrawKey) -> list[Component]:
    """T5's (relative_buckets, n_heads) bias table: the stack's, shared by its blocks and drawn
    before them, or (UMT5, relative_bias_per_layer) each block's own, drawn last in it."""
    if spec.positions != "relative":
        return []
    rel = (spec.relative_buckets, spec.n_heads)
    if spec.relative_bias_per_layer:
        return [Component(f"{block}.relative_bias", POSITION, rel, n_layers,
                          path=f"{path}.relative_bias", role="table", draw=(*draw, 6))]
    stack_draw = draw[:-2] + (0,)  # the stack's key, then 0: before its blocks
    return [Component(f"{stack}.relative_bias", POSITION, rel, note="shared by all blocks",
                      path=f"{stack}.relative_bias", role="table", draw=stack_draw)]


def _blocks(spec: Spec, stack: str, n_layers: int, cross: bool, path: str,
            draw: DrawKey) -> list[Component]:
    """The arrays of n_layers blocks at `path` (`encoder.blocks.*`, or one shared block's);
    drawn attention, FFN, cross-attention, then a block's own relative-bias table."""
    block = f"{stack}.block"
    out = _relative_bias(spec, stack, block, n_layers, path, draw)
    inputs_normed = spec.norm_placement != "sublayer_post"  # it norms sublayer outputs only
    attn_normed = n_layers - (0 if spec.first_attn_norm else 1)  # block 0's may be absent
    if inputs_normed and attn_normed:
        out += _norm(spec, f"{block}.attn_norm", f"{path}.attn_norm", (*draw, 0),
                     repeat=attn_normed)
    out += _attention(spec, f"{block}.attn", f"{path}.attn", n_layers, (*draw, 1))
    out += _qk_norms(spec, f"{block}.attn", f"{path}.attn", n_layers, (*draw, 1))
    if spec.post_sublayer_norms:
        out += _norm(spec, f"{block}.attn_post_norm", f"{path}.attn_post_norm", (*draw, 1, 9),
                     repeat=n_layers)
    if cross:
        out += _norm(spec, f"{block}.cross_norm", f"{path}.cross_norm", (*draw, 4),
                     repeat=n_layers)
        out += _attention(spec, f"{block}.cross_attn", f"{path}.cross_attn", n_layers, (*draw, 5))
    if inputs_normed and spec.parallel_residual != "one_norm":  # one_norm: attn_norm's output
        out += _norm(spec, f"{block}.ffn_norm", f"{path}.ffn_norm", (*draw, 2), repeat=n_layers)
    out += _ffn(spec, block, path, n_layers, (*draw, 3))
    if spec.post_sublayer_norms:
        out += _norm(spec, f"{block}.ffn_post_norm", f"{path}.ffn_post_norm", (*draw, 3, 9),
                     repeat=n_layers)
    return out


def _embeddings(spec: Spec) -> list[Component]:
    """The tables (embedding_width wide; position_rows learned positions), their norm, and the
    projection of factorised embeddings to d_model (embedding_dim)."""
    e = spec.embedding_width
    out = [Component("embed.token", EMBEDDING, (spec.vocab_size, e), path="token_embedding",
                     role="table", draw=(0,))]
    shared = not spec.per_stack_embeddings  # else in each stack (_stack_embeddings)
    if spec.positions == "learned" and shared:
        out.append(Component("embed.position", EMBEDDING, (spec.position_rows, e),
                             path="position_embedding", role="table", draw=(1,)))
    if spec.type_vocab_size:
        out.append(Component("embed.token_type", EMBEDDING, (spec.type_vocab_size, e),
                             path="token_type_embedding", role="table", draw=(2,)))
    # the norm and the projection in the engine's order (embedding_project_first: DeBERTa)
    norm = _norm(spec, "embed.norm", "embedding_norm", (3,), width=spec.embedding_norm_width) \
        if spec.embedding_norm and shared else []
    project = _embedding_project(spec) if spec.embedding_dim is not None else []
    return out + (project + norm if spec.embedding_project_first else norm + project)


def _embedding_project(spec: Spec) -> list[Component]:
    """Factorised embeddings' (embedding_dim, d_model) projection [+ bias]."""
    out = [_matrix("embed.project.weight", EMBEDDING, (spec.embedding_width, spec.d_model), 1,
                   "embedding_project", (4,))]
    if spec.embedding_project_bias:
        out.append(_bias("embed.project.bias", EMBEDDING, spec.d_model, 1,
                         "embedding_project_bias", (4, 1)))
    return out


def _stack_embeddings(spec: Spec, stack: str, draw: DrawKey) -> list[Component]:
    """per_stack_embeddings (BART): the stack's own position table and embedding norm, shown
    before its blocks and drawn after them."""
    if not spec.per_stack_embeddings:
        return []
    e = spec.embedding_width
    out = [Component(f"{stack}.position_embedding", EMBEDDING, (spec.position_rows, e),
                     path=f"{stack}.position_embedding", role="table", draw=(*draw, 5))]
    if spec.embedding_norm:
        out += _norm(spec, f"{stack}.embedding_norm", f"{stack}.embedding_norm", (*draw, 6),
                     width=e)
    return out


def _mlm_transform(spec: Spec) -> list[Component]:
    """masked_lm's transform before the vocabulary logits: dense (d, e) [+ bias], then a norm
    of width e (e = logits_width: d_model, or embedding_dim under factorised embeddings)."""
    d, e = spec.d_model, spec.logits_width
    out = [_matrix("head.transform.weight", HEAD, (d, e), 1, "head_dense", (10,))]
    if spec.head_bias:
        out.append(_bias("head.transform.bias", HEAD, e, 1, "head_dense_bias", (10, 1)))
    return out + _norm(spec, "head.norm", "head_norm", (10, 2), HEAD, width=e)


def _classifier(spec: Spec) -> list[Component]:
    """A classification head's (d, num_labels) classifier [+ bias], after its classifier_dense
    (d, d) [+ bias] when it has one."""
    labels, d = spec.num_labels or 0, spec.d_model
    out = [_matrix("head.dense.weight", HEAD, (d, d), 1, "head_dense", (10,))] \
        if spec.classifier_dense else []
    if spec.classifier_dense and spec.head_bias:
        out.append(_bias("head.dense.bias", HEAD, d, 1, "head_dense_bias", (10, 1)))
    if spec.classifier_norm:  # ModernBERT's prediction head norms the dense's output
        out += _norm(spec, "head.norm", "head_norm", (10, 2), HEAD)
    out.append(_matrix("head.classifier.weight", HEAD, (d, labels), 1, "classifier", (11,)))
    if spec.classifier_bias:
        out.append(_bias("head.classifier.bias", HEAD, labels, 1, "classifier_bias", (11, 1)))
    return out


def _heads(spec: Spec) -> list[Component]:
    """The output heads; drawn lm_head, pooler, the transform or dense, the classifier, then
    final_logits_bias."""
    out: list[Component] = _mlm_transform(spec) if spec.head == "masked_lm" else []
    if spec.lm_head:
        shape = (spec.logits_width, spec.vocab_size)
        tied = spec.tie_embeddings
        out.append(Component("lm_head", HEAD, shape, note=TIED_NOTE if tied else "", tied=tied,
                             path="token_embedding" if tied else "lm_head", draw=(7,)))
    if spec.lm_head_bias:
        out.append(_bias("lm_head.bias", HEAD, spec.vocab_size, 1, "lm_head_bias", (9,)))
    if spec.final_logits_bias:  # drawn, not zero as transformers starts it: tests then see it
        out.append(Component("final_logits_bias", HEAD, (1, spec.vocab_size),
                             note=LOGITS_BIAS_NOTE, buffer=True, path="final_logits_bias",
                             role="vector", draw=(12,)))
    if spec.pooler:
        out.append(_matrix("pooler.weight", POOLER, (spec.d_model, spec.d_model), 1, "pooler_w",
                           (8,)))
        out.append(_bias("pooler.bias", POOLER, spec.d_model, 1, "pooler_b", (8, 1)))
    if spec.head in ("sequence_classification", "token_classification"):
        out += _classifier(spec)
    return out


def blueprint(spec: Spec) -> list[Component]:
    """Every weight of `spec` (and every parameter-free module, `array=False`), in forward order."""
    out = _embeddings(spec)
    if spec.has_encoder:
        out += _stack_embeddings(spec, "encoder", (5,))
        out += _stack(spec, "encoder", spec.encoder_layers, False, (5,))
    if spec.has_decoder:
        out += _stack_embeddings(spec, "decoder", (6,))
        out += _stack(spec, "decoder", spec.decoder_layers, spec.family == "encoder-decoder", (6,))
    return out + _heads(spec)


def components(spec: Spec) -> list[Component]:
    """Every parameter array of `spec`, in forward order (what `tfcli params` lists)."""
    return [c for c in blueprint(spec) if c.array]


def dense_ffn_components(spec: Spec, width: int | None = None) -> list[Component]:
    """One dense FFN of hidden `width` (default d_ff): an expert's arrays, for per-expert sums."""
    return _dense_ffn(spec, "ffn", "ffn", 1, (), width)


# --- concrete paths ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Placed:
    """One concrete array (or parameter-free module) of the blueprint: `decoder.blocks.3.attn.wq`."""

    path: str
    component: Component
    draw: tuple[int, ...]  # the component's draw key with its indices filled in


def _indices(spec: Spec, head: str, path: str) -> range | list[int]:
    return range(spec.n_experts) if head.endswith("experts") else block_indices(spec, path)


def concrete_paths(spec: Spec, path: str) -> list[str]:
    """`path` with every `*` filled in (one path per block / expert it stands for)."""
    return [p for p, _ in _filled(spec, path, ())]


def _filled(spec: Spec, path: str, draw: DrawKey) -> Iterator[tuple[str, DrawKey]]:
    if EVERY not in path:
        yield path, draw
        return
    head, tail = path.split(f".{EVERY}", 1)
    mark = draw.index(EVERY) if EVERY in draw else None
    for i in _indices(spec, head, path):
        filled = draw if mark is None else (*draw[:mark], i, *draw[mark + 1:])
        yield from _filled(spec, f"{head}.{i}{tail}", filled)


def placed(spec: Spec, entries: list[Component] | None = None) -> list[Placed]:
    """Every concrete array and parameter-free module of the blueprint (tied entries are the
    array they share, listed once), in draw order."""
    out = [Placed(path, c, draw) for c in (blueprint(spec) if entries is None else entries)
           if not c.tied for path, draw in _filled(spec, c.path, c.draw)]
    return sorted(out, key=lambda p: p.draw)  # type: ignore[arg-type, return-value]


def _in_block(spec: Spec, c: Component, layer: int) -> Component | None:
    """`c` with its block index filled in as `layer`, or None when block `layer` lacks it."""
    mark = f".blocks.{EVERY}."
    if mark not in c.path:
        return c
    if layer not in block_indices(spec, c.path):
        return None
    at = c.draw.index(EVERY)
    return replace(c, path=c.path.replace(mark, f".blocks.{layer}.", 1),
                   draw=(*c.draw[:at], layer, *c.draw[at + 1:]))


def block_part(spec: Spec, stack: str, layer: int, name: str) -> tuple[str, list[Placed]]:
    """The node (or array) `name` of block `layer` of `stack` (`attn`, `ffn`, `attn_norm`, ...;
    '' for the whole block): its concrete path and entries, in draw order, without expanding the
    other blocks. Under shared_layers every block is block 0."""
    layer = 0 if spec.shared_layers else layer
    node = f"{stack}.blocks.{layer}" + (f".{name}" if name else "")
    inside = [_in_block(spec, c, layer) for c in blueprint(spec)]
    mine = [c for c in inside if c is not None and (c.path == node or c.path.startswith(node + "."))]
    return node, placed(spec, mine)


def norm_components(spec: Spec, width: int | None = None) -> list[Component]:
    """A norm of the spec's kind on its own, at path `norm` (d_model wide, or `width`)."""
    return _norm(spec, "norm", "norm", (), width=width)
