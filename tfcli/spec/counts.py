"""Analytic parameter counts per component, a pure function of the Spec. Never allocates a
weight array.

Each Component mirrors one array (or one repeated group of arrays) in tfcli.engine.weights, so
the count here equals what init_weights allocates, to the parameter. This module sits below the
engine, the checkpoint loader and the analyses (it imports only tfcli.spec.model and tfcli.core.dtypes;
tests/test_layering.py keeps it so): all of them count with it.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, replace
from math import prod

from tfcli.core.dtypes import DTYPE_BYTES
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
# is every decoder block, `ffn.experts.*` every expert of a block.
EVERY = "*"


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

    @property
    def per_instance(self) -> int:
        return 0 if self.tied or self.buffer else prod(self.shape)

    @property
    def count(self) -> int:
        return self.per_instance * self.repeat


def _norm(spec: Spec, name: str, path: str, group: str = NORM, repeat: int = 1,
          width: int | None = None) -> list[Component]:
    d = width or spec.d_model
    if spec.norm in ("layernorm", "rmsnorm", "layernorm_nobias"):
        out = [Component(f"{name}.scale", group, (d,), repeat, path=f"{path}.scale")]
        if spec.norm == "layernorm":
            out.append(Component(f"{name}.bias", group, (d,), repeat, path=f"{path}.bias"))
        return out
    return []


def _latent_attention(spec: Spec, name: str, path: str, repeat: int) -> list[Component]:
    """MLA (DeepSeek-V2/V3): the query (full, or q_a -> norm -> q_b), the joint down-projection
    to the latent and the shared RoPE key (kv_a), its norm, the up-projection of every head's
    no-RoPE key and value (kv_b), the output. Biases, with attention_bias, on q_a and kv_a only
    (and on o with attention_out_bias), as transformers builds them."""
    d, H, r = spec.d_model, spec.n_heads, spec.kv_lora_rank
    qk, dr, dn, dv = spec.head_dim, spec.qk_rope_head_dim, spec.qk_nope_head_dim, spec.v_head_dim
    def linear(proj: str, shape: tuple[int, int], bias: bool | None = False) -> list[Component]:
        out = [Component(f"{name}.{proj}.weight", ATTENTION, shape, repeat, path=f"{path}.w{proj}")]
        if bias:
            out.append(Component(f"{name}.{proj}.bias", ATTENTION, (shape[1],), repeat,
                                 path=f"{path}.b{proj}"))
        return out
    if spec.q_lora_rank is None:
        out = linear("q", (d, H * qk))
    else:
        out = [*linear("q_a", (d, spec.q_lora_rank), spec.attention_bias),
               *_norm(spec, f"{name}.q_a_norm", f"{path}.q_a_norm", ATTENTION, repeat,
                      spec.q_lora_rank),
               *linear("q_b", (spec.q_lora_rank, H * qk))]
    out += linear("kv_a", (d, r + dr), spec.attention_bias)  # type: ignore[operator]
    out += _norm(spec, f"{name}.kv_a_norm", f"{path}.kv_a_norm", ATTENTION, repeat, r)
    out += linear("kv_b", (r, H * (dn + dv)))  # type: ignore[arg-type, operator]
    return out + linear("o", (H * dv, d), spec.attention_out_bias)  # type: ignore[operator]


def _attention(spec: Spec, name: str, path: str, repeat: int) -> list[Component]:
    if spec.latent_attention:  # decoder-only: never a cross-attention
        return _latent_attention(spec, name, path, repeat)
    d, q, kv = spec.d_model, spec.n_heads * spec.head_dim, spec.kv_heads * spec.head_dim
    out = [
        Component(f"{name}.q.weight", ATTENTION, (d, q), repeat, path=f"{path}.wq"),
        Component(f"{name}.k.weight", ATTENTION, (d, kv), repeat, path=f"{path}.wk"),
        Component(f"{name}.v.weight", ATTENTION, (d, kv), repeat, path=f"{path}.wv"),
        Component(f"{name}.o.weight", ATTENTION, (q, d), repeat, path=f"{path}.wo"),
    ]
    biases = (("q", q), ("k", kv), ("v", kv)) if spec.attention_bias else ()
    biases += (("o", d),) if spec.attention_out_bias else ()
    for proj, width in biases:
        out.append(Component(f"{name}.{proj}.bias", ATTENTION, (width,), repeat,
                             path=f"{path}.b{proj}"))
    return out + _position_projections(spec, name, path, repeat)


def _position_projections(spec: Spec, name: str, path: str, repeat: int) -> list[Component]:
    """Disentangled attention without share_att_key: its own (d, H*dh) projections of the
    relative-position table, pos_k for c2p and pos_q for p2c [+ biases]."""
    if not spec.disentangled_attention or spec.share_att_key:
        return []
    d, width, out = spec.d_model, spec.n_heads * spec.head_dim, []
    for term, proj in (("c2p", "pos_k"), ("p2c", "pos_q")):
        if term in spec.disentangled_attention:
            out.append(Component(f"{name}.{proj}.weight", ATTENTION, (d, width), repeat,
                                 path=f"{path}.w{proj}"))
            if spec.attention_bias:
                out.append(Component(f"{name}.{proj}.bias", ATTENTION, (width,), repeat,
                                     path=f"{path}.b{proj}"))
    return out


def _qk_norms(spec: Spec, name: str, path: str, repeat: int) -> list[Component]:
    """Self-attention q/k norms: per_head, one (d_head,) weight each shared by every head;
    full, over the whole projection ((n_heads * d_head,) and (n_kv_heads * d_head,))."""
    if spec.qk_norm == "none":
        return []
    return [c for x, width in zip("qk", spec.qk_norm_widths)
            for c in _norm(spec, f"{name}.{x}_norm", f"{path}.{x}_norm", ATTENTION, repeat, width)]


def _dense_ffn(spec: Spec, name: str, path: str, repeat: int,
               width: int | None = None) -> list[Component]:
    d, f = spec.d_model, width or spec.d_ff
    out = [Component(f"{name}.up.weight", FFN, (d, f), repeat, path=f"{path}.w_up")]
    if spec.gated:
        out.append(Component(f"{name}.gate.weight", FFN, (d, f), repeat, path=f"{path}.w_gate"))
    out.append(Component(f"{name}.down.weight", FFN, (f, d), repeat, path=f"{path}.w_down"))
    if spec.ffn_bias:
        out.append(Component(f"{name}.up.bias", FFN, (f,), repeat, path=f"{path}.b_up"))
        if spec.gated:
            out.append(Component(f"{name}.gate.bias", FFN, (f,), repeat, path=f"{path}.b_gate"))
        out.append(Component(f"{name}.down.bias", FFN, (d,), repeat, path=f"{path}.b_down"))
    return out


def _ffn(spec: Spec, name: str, path: str, repeat: int) -> list[Component]:
    """The FFN of `repeat` blocks: dense, MoE, or (moe_layer_step, dense_layers) both, each
    component repeated over the blocks of its kind (`*` then stands for those blocks)."""
    moe = spec.moe_layer_count(repeat)
    dense = _dense_ffn(spec, f"{name}.ffn", f"{path}.ffn", repeat - moe) if moe < repeat else []
    if not moe:
        return dense
    router = [Component(f"{name}.router.weight", FFN, (spec.d_model, spec.n_experts), moe,
                        path=f"{path}.ffn.router")]
    if spec.router_bias:
        router.append(Component(f"{name}.router.bias", FFN, (spec.n_experts,), moe,
                                ROUTER_BIAS_NOTE, buffer=True, path=f"{path}.ffn.router_bias"))
    experts = _dense_ffn(spec, f"{name}.experts", f"{path}.ffn.experts.{EVERY}",
                         moe * spec.n_experts, spec.expert_width)
    return [*dense, *router, *experts, *_shared_experts(spec, name, f"{path}.ffn", moe)]


def _shared_experts(spec: Spec, name: str, path: str, repeat: int) -> list[Component]:
    """Shared experts as one FFN of their summed width, and Qwen2-MoE's (d_model, 1) gate."""
    if not spec.n_shared_experts:
        return []
    out = _dense_ffn(spec, f"{name}.shared_experts", f"{path}.shared", repeat, spec.shared_width)
    if spec.shared_expert_gate:
        out.append(Component(f"{name}.shared_gate", FFN, (spec.d_model, 1), repeat,
                             path=f"{path}.shared_gate"))
    return out


_MOE_FIELDS = ("router", "router_bias", "experts", "shared", "shared_gate")  # a block's `ffn.<field>` of MoE


def block_indices(spec: Spec, path: str) -> range | list[int]:
    """The blocks `stack.blocks.*.<rest>` stands for: every block of the stack; an FFN array of
    a stack mixing dense and MoE blocks, only the blocks of its kind."""
    layers = spec.encoder_layers if path.startswith("encoder.") else spec.decoder_layers
    rest = path.split(f".blocks.{EVERY}.", 1)[-1].split(".")
    if rest[0] == "attn_norm" and not spec.first_attn_norm:  # block 0 has none (ModernBERT)
        return range(1, layers)
    if not spec.mixed_ffn_layers or rest[0] != "ffn":
        return range(layers)
    moe = len(rest) > 1 and rest[1] in _MOE_FIELDS
    return [i for i in range(layers) if spec.moe_layer(i) == moe]


def _relative_embeddings(spec: Spec, stack: str) -> list[Component]:
    """Disentangled attention: the stack's (2 x span, d_model) relative-position table, shared
    by its blocks, and the norm applied to it once per forward pass."""
    if not spec.disentangled_attention:
        return []
    table = Component(f"{stack}.relative_embedding", POSITION, (spec.relative_rows, spec.d_model),
                      note="shared by all blocks", path=f"{stack}.relative_embedding")
    norm = _norm(spec, f"{stack}.relative_embedding_norm", f"{stack}.relative_embedding_norm",
                 POSITION) if spec.relative_embedding_norm else []
    return [table, *norm]


def _stack(spec: Spec, stack: str, n_layers: int, cross: bool) -> list[Component]:
    if spec.disentangled_attention:  # encoder only (spec_disentangled)
        return _relative_embeddings(spec, stack) + _plain_stack(spec, stack, n_layers, cross)
    return _plain_stack(spec, stack, n_layers, cross)


def _plain_stack(spec: Spec, stack: str, n_layers: int, cross: bool) -> list[Component]:
    if spec.shared_layers:  # one block's arrays, every block runs them: counted once
        shared = _blocks(spec, stack, 1, cross, f"{stack}.blocks.0")
        return [replace(c, note=SHARED_NOTE.format(n_layers)) for c in shared] + \
            _stack_final_norm(spec, stack)
    return _blocks(spec, stack, n_layers, cross, f"{stack}.blocks.{EVERY}") + \
        _stack_final_norm(spec, stack)


def _stack_final_norm(spec: Spec, stack: str) -> list[Component]:
    return _norm(spec, f"{stack}.final_norm", f"{stack}.final_norm") if spec.final_norm else []


def _blocks(spec: Spec, stack: str, n_layers: int, cross: bool, path: str) -> list[Component]:
    """The arrays of n_layers blocks at `path` (`encoder.blocks.*`, or one shared block's)."""
    block = f"{stack}.block"
    out: list[Component] = []
    if spec.positions == "relative":
        rel = (spec.relative_buckets, spec.n_heads)
        if spec.relative_bias_per_layer:  # UMT5: each block's self-attention has its own table
            out.append(Component(f"{block}.relative_bias", POSITION, rel, n_layers,
                                 path=f"{path}.relative_bias"))
        else:
            out.append(Component(f"{stack}.relative_bias", POSITION, rel,
                                 note="shared by all blocks", path=f"{stack}.relative_bias"))
    inputs_normed = spec.norm_placement != "sublayer_post"  # it norms sublayer outputs only
    attn_normed = n_layers - (0 if spec.first_attn_norm else 1)  # block 0's may be absent
    if inputs_normed and attn_normed:
        out += _norm(spec, f"{block}.attn_norm", f"{path}.attn_norm", repeat=attn_normed)
    out += _attention(spec, f"{block}.attn", f"{path}.attn", n_layers)
    out += _qk_norms(spec, f"{block}.attn", f"{path}.attn", n_layers)
    if spec.post_sublayer_norms:
        out += _norm(spec, f"{block}.attn_post_norm", f"{path}.attn_post_norm", repeat=n_layers)
    if cross:
        out += _norm(spec, f"{block}.cross_norm", f"{path}.cross_norm", repeat=n_layers)
        out += _attention(spec, f"{block}.cross_attn", f"{path}.cross_attn", n_layers)
    if inputs_normed and spec.parallel_residual != "one_norm":  # one_norm: attn_norm's output
        out += _norm(spec, f"{block}.ffn_norm", f"{path}.ffn_norm", repeat=n_layers)
    out += _ffn(spec, block, path, n_layers)
    if spec.post_sublayer_norms:
        out += _norm(spec, f"{block}.ffn_post_norm", f"{path}.ffn_post_norm", repeat=n_layers)
    return out


def _embeddings(spec: Spec) -> list[Component]:
    """The tables (embedding_width wide; position_rows learned positions), their norm, and the
    projection of factorised embeddings to d_model (embedding_dim)."""
    e = spec.embedding_width
    out = [Component("embed.token", EMBEDDING, (spec.vocab_size, e), path="token_embedding")]
    shared = not spec.per_stack_embeddings  # else in each stack (_stack_embeddings)
    if spec.positions == "learned" and shared:
        out.append(Component("embed.position", EMBEDDING, (spec.position_rows, e),
                             path="position_embedding"))
    if spec.type_vocab_size:
        out.append(Component("embed.token_type", EMBEDDING, (spec.type_vocab_size, e),
                             path="token_type_embedding"))
    # the norm and the projection in the engine's order (embedding_project_first: DeBERTa)
    norm = _norm(spec, "embed.norm", "embedding_norm", width=spec.embedding_norm_width) \
        if spec.embedding_norm and shared else []
    project = _embedding_project(spec) if spec.embedding_dim is not None else []
    return out + (project + norm if spec.embedding_project_first else norm + project)


def _embedding_project(spec: Spec) -> list[Component]:
    """Factorised embeddings' (embedding_dim, d_model) projection [+ bias]."""
    out = [Component("embed.project.weight", EMBEDDING, (spec.embedding_width, spec.d_model),
                     path="embedding_project")]
    if spec.embedding_project_bias:
        out.append(Component("embed.project.bias", EMBEDDING, (spec.d_model,),
                             path="embedding_project_bias"))
    return out


def _stack_embeddings(spec: Spec, stack: str) -> list[Component]:
    """per_stack_embeddings (BART): the stack's own position table and embedding norm."""
    if not spec.per_stack_embeddings:
        return []
    e = spec.embedding_width
    out = [Component(f"{stack}.position_embedding", EMBEDDING, (spec.position_rows, e),
                     path=f"{stack}.position_embedding")]
    if spec.embedding_norm:
        out += _norm(spec, f"{stack}.embedding_norm", f"{stack}.embedding_norm", width=e)
    return out


def _mlm_transform(spec: Spec) -> list[Component]:
    """masked_lm's transform before the vocabulary logits: dense (d, e) [+ bias], then a norm
    of width e (e = logits_width: d_model, or embedding_dim under factorised embeddings)."""
    d, e = spec.d_model, spec.logits_width
    out = [Component("head.transform.weight", HEAD, (d, e), path="head_dense")]
    if spec.head_bias:
        out.append(Component("head.transform.bias", HEAD, (e,), path="head_dense_bias"))
    return out + _norm(spec, "head.norm", "head_norm", HEAD, width=e)


def _classifier(spec: Spec) -> list[Component]:
    """A classification head's (d, num_labels) classifier [+ bias], after its classifier_dense
    (d, d) [+ bias] when it has one."""
    labels, d = spec.num_labels or 0, spec.d_model
    out = [Component("head.dense.weight", HEAD, (d, d), path="head_dense")] \
        if spec.classifier_dense else []
    if spec.classifier_dense and spec.head_bias:
        out.append(Component("head.dense.bias", HEAD, (d,), path="head_dense_bias"))
    if spec.classifier_norm:  # ModernBERT's prediction head norms the dense's output
        out += _norm(spec, "head.norm", "head_norm", HEAD)
    out.append(Component("head.classifier.weight", HEAD, (d, labels), path="classifier"))
    if spec.classifier_bias:
        out.append(Component("head.classifier.bias", HEAD, (labels,), path="classifier_bias"))
    return out


def _heads(spec: Spec) -> list[Component]:
    out: list[Component] = _mlm_transform(spec) if spec.head == "masked_lm" else []
    if spec.lm_head:
        shape = (spec.logits_width, spec.vocab_size)
        tied = spec.tie_embeddings
        out.append(Component("lm_head", HEAD, shape, note=TIED_NOTE if tied else "", tied=tied,
                             path="token_embedding" if tied else "lm_head"))
    if spec.lm_head_bias:
        out.append(Component("lm_head.bias", HEAD, (spec.vocab_size,), path="lm_head_bias"))
    if spec.final_logits_bias:
        out.append(Component("final_logits_bias", HEAD, (1, spec.vocab_size),
                             note=LOGITS_BIAS_NOTE, buffer=True, path="final_logits_bias"))
    if spec.pooler:
        out.append(Component("pooler.weight", POOLER, (spec.d_model, spec.d_model), path="pooler_w"))
        out.append(Component("pooler.bias", POOLER, (spec.d_model,), path="pooler_b"))
    if spec.head in ("sequence_classification", "token_classification"):
        out += _classifier(spec)
    return out


def components(spec: Spec) -> list[Component]:
    """Every parameter array of `spec`, in forward order."""
    out = _embeddings(spec)
    if spec.has_encoder:
        out += _stack_embeddings(spec, "encoder")
        out += _stack(spec, "encoder", spec.encoder_layers, cross=False)
    if spec.has_decoder:
        out += _stack_embeddings(spec, "decoder")
        out += _stack(spec, "decoder", spec.decoder_layers, cross=spec.family == "encoder-decoder")
    return out + _heads(spec)


def total_parameters(spec: Spec) -> int:
    return sum(c.count for c in components(spec))


def inactive_expert_parameters(spec: Spec) -> int:
    """Expert weights a token does not touch: (n_experts - experts_per_token) routed experts
    per MoE block (shared experts, the router and dense blocks are all active)."""
    if not spec.n_experts:
        return 0
    per_expert = sum(c.per_instance for c in _dense_ffn(spec, "e", "e", 1, spec.expert_width))
    layers = sum(spec.moe_layer_count(n) for n in (spec.encoder_layers, spec.decoder_layers))
    return (spec.n_experts - spec.experts_per_token) * per_expert * layers


def kv_values_per_layer_token(spec: Spec) -> int:
    """Values one decoder layer caches per token of one sequence: K and V of every K/V head;
    under MLA the latent and the shared RoPE key, kv_lora_rank + qk_rope_head_dim."""
    if spec.latent_attention:
        return spec.kv_lora_rank + spec.qk_rope_head_dim  # type: ignore[operator]
    return 2 * spec.kv_heads * spec.head_dim


def expanded_kv_values_per_layer_token(spec: Spec) -> int:
    """What full multi-head K/V would cache per layer and token: every head's key (d_head) and
    value (v_head_dim under MLA). Equals kv_values_per_layer_token without MLA."""
    return spec.kv_heads * (spec.head_dim + spec.value_dim)


def kv_cache_bytes_per_token(spec: Spec, dtype: str = "float32") -> float:
    """Bytes of decoder self-attention K and V (MLA: latent and RoPE key) cached per token per
    sequence."""
    return kv_values_per_layer_token(spec) * spec.decoder_layers * DTYPE_BYTES[dtype]


def kv_cache_window_bytes(spec: Spec, context: int, batch: int = 1,
                          dtype: str = "float32") -> int | None:
    """KV-cache bytes when each local (sliding-window) layer keeps only its last sliding_window
    tokens, a rolling buffer as transformers' sliding-window cache layers, and each global
    layer of a layer_pattern every token: min(context, window) tokens per local layer. None
    when the window hides no cached token (no window, or one at least `context` long)."""
    window = spec.sliding_window
    if window is None or window >= context or spec.family != "decoder":  # an encoder caches none
        return None
    per_layer_token = kv_values_per_layer_token(spec) * DTYPE_BYTES[dtype]
    local = spec.local_layers
    tokens = local * window + (spec.decoder_layers - local) * context
    return int(round(batch * per_layer_token * tokens))


def kv_cache_bytes(spec: Spec, context: int, batch: int = 1, dtype: str = "float32",
                   source_len: int = 0) -> int:
    """Total KV-cache bytes: self-attention for `context` tokens, plus (encoder-decoder) the
    cross-attention K/V over `source_len` encoder positions, for `batch` sequences."""
    per_token = kv_cache_bytes_per_token(spec, dtype)
    cross = per_token * source_len if spec.family == "encoder-decoder" else 0
    return int(round(batch * (per_token * context + cross)))
