"""Analytic per-op trace of one forward pass: shapes, owned parameters, FLOPs, activation bytes.

Never allocates a weight or an activation: a llama-2-70b trace is a few thousand small tuples.
Rows follow the Observer table of docs/CONTRACT.md (same paths, ops and order), which is what
tfcli.analysis.trace_check.execute_check verifies against a real forward pass.

Entry points for `tfcli trace`:
    report = build_trace(spec, batch=..., seq_len=..., src_len=..., tgt_len=..., dtype=...)
    report = report.at_depth(depth)   # to_dict() / csv_rows() then fold to that depth
    tfcli.render.trace.render_trace(report)

Parameters are attributed from tfcli.params.components, so the rows sum to
total_parameters(spec), and each row names the Weights paths of the arrays it owns
(`weights`: "decoder.blocks.3.attn.wq"; `*` for every expert, "decoder.blocks.1-79.attn.wq"
for a repeated span), the same paths as the params components and the checkpoint tables. The T5
relative-bias table of each stack is owned by the `scores` op of that stack's first block; a
table shared by source and target (token, position) is owned by the first `embed` rows (the
encoder's).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

from tfcli.analysis.trace_rows import (
    NOTHING, Owned, Shape, TraceRow, check_depth, fold_rows, repeated,
)
from tfcli.dtypes import ACTIVATION_DTYPES, DTYPE_BYTES, check_dtype
from tfcli.errors import BadInputError
from tfcli.params import EVERY, components
from tfcli.shapes import shape_text
from tfcli.spec import Spec


DEFAULT_SEQ_LEN = 128  # default length: min(spec.max_seq_len, 128), small enough to --execute
MAX_LISTED_BLOCKS = 256  # deeper stacks show block 0 and one row group for blocks 1..L-1
MAX_SIZE = 2**40  # --batch / lengths: past this, FLOP totals would outgrow a float's range
_WEIGHTS_BLOCK = re.compile(r"\.blocks\.(\d+)(?=\.|$)")  # the block index of a Weights path

# FLOPs per output element of elementwise ops: small stated constants (see convention_text).
ADD_FLOPS = 1  # residual add, position / token-type add, bias add
NORM_FLOPS = 5  # statistics, normalise, scale, shift (one figure for every norm kind)
SOFTMAX_FLOPS = 3  # exp, sum, divide (Hoffmann et al. 2022, Appendix F)
ACTIVATION_FLOPS = 4  # one nonlinearity; a gated FFN adds 1 for the gate product


@dataclass(frozen=True)
class TraceReport:
    """The analytic trace of one forward pass; `depth` only selects what to_dict/csv_rows show."""

    spec_name: str
    family: str
    batch: int
    seq_len: int  # sequence length (encoder-decoder: the default of src_len and tgt_len)
    src_len: int | None  # encoder-decoder only
    tgt_len: int | None  # encoder-decoder only
    dtype: str  # activation dtype for act_bytes
    rows: tuple[TraceRow, ...]  # every op, in forward order
    convention: str  # how FLOPs and bytes are counted, for display
    tokens: int  # tokens processed: batch x seq_len, or batch x (src_len + tgt_len)
    depth: int = 3

    @property
    def total_params(self) -> int:
        return sum(r.params for r in self.rows)

    @property
    def total_flops(self) -> int:
        return sum(r.flops for r in self.rows)

    @property
    def total_act_bytes(self) -> int:
        return sum(r.act_bytes for r in self.rows)

    @property
    def flops_per_token(self) -> float:
        """Forward FLOPs per processed token (total / tokens)."""
        return self.total_flops / self.tokens

    def fold(self, depth: int) -> list[TraceRow]:
        """Rows merged per block (1), per sublayer (2) or not at all (3); totals unchanged."""
        return fold_rows(self.rows, depth)

    def at_depth(self, depth: int) -> TraceReport:
        """The same report with to_dict() and csv_rows() folded to `depth`."""
        check_depth(depth)
        return replace(self, depth=depth)

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec_name, "family": self.family, "batch": self.batch,
            "seq_len": self.seq_len, "src_len": self.src_len, "tgt_len": self.tgt_len,
            "dtype": self.dtype, "depth": self.depth,
            "rows": [r.to_dict() for r in self.fold(self.depth)],
            "total_params": self.total_params, "total_flops": self.total_flops,
            "total_act_bytes": self.total_act_bytes, "tokens": self.tokens,
            "flops_per_token": self.flops_per_token, "convention": self.convention,
        }

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        """Header and one line per (folded) row; shapes as 1x128x768, inputs joined by ';'."""
        header = ["path", "op", "inputs", "output", "params", "flops", "act_bytes"]
        rows: list[list[object]] = [
            [r.path, r.op, ";".join(map(shape_text, r.inputs)), shape_text(r.output),
             r.params, r.flops, r.act_bytes]
            for r in self.fold(self.depth)
        ]
        return header, rows


# --- FLOPs of the building blocks ---------------------------------------------------------------


def _linear_flops(tokens: int, n_in: int, n_out: int, bias: bool) -> int:
    """x (tokens, n_in) @ W (n_in, n_out) [+ b]: 2 FLOPs per multiply-add, 1 per bias add."""
    return tokens * (2 * n_in * n_out + (ADD_FLOPS * n_out if bias else 0))


def _activation_flops(spec: Spec) -> int:
    """Per hidden element: the nonlinearity, plus the gate product when gated."""
    return ACTIVATION_FLOPS + (1 if spec.gated else 0)


def _dense_ffn_token_flops(spec: Spec, width: int | None = None) -> int:
    """One token through one dense FFN (up, gate, activation, down) of hidden `width` (d_ff)."""
    d, f, bias = spec.d_model, width or spec.d_ff, bool(spec.ffn_bias)
    up = _linear_flops(1, d, f, bias) * (2 if spec.gated else 1)
    return up + _activation_flops(spec) * f + _linear_flops(1, f, d, bias)


def _gemma_text(spec: Spec) -> str:
    """The convention for soft-capping, the embedding scale and (1 + weight) norms, when used."""
    parts = []
    if spec.attn_logit_softcap is not None or spec.final_logit_softcap is not None:
        parts.append(" Soft-capping c*tanh(x/c) (softcap rows after scores and logits): the "
                     "activation figure per element (its two scalings, like score scaling, "
                     "not counted).")
    if spec.scale_embeddings:
        parts.append(" Embedding scale by sqrt(d_model) (embed_scale): 1 per element.")
    if spec.norm_unit_offset:
        parts.append(" (1 + weight) norms (norm_unit_offset): the norm figure.")
    return "".join(parts)


def _local_layers(spec: Spec) -> str:
    """Which layers a sliding window applies to, when a layer_pattern mixes kinds."""
    if spec.layer_pattern is None:
        return ""
    return f"of the local layers ({spec.local_layers:,} of {spec.decoder_layers:,}) "


def convention_text(spec: Spec, dtype: str) -> str:
    """How the trace counts; shown under the table and carried in JSON."""
    encoder_decoder = spec.family == "encoder-decoder"
    per_token = "batch x (src_len + tgt_len)" if encoder_decoder else "batch x seq_len"
    k = spec.experts_per_token
    moe = f" MoE experts: only the {k} routed experts per token{_moe_text(spec)}." \
        if spec.n_experts else ""
    qk = (" q/k norms (qk_norm): the norm figure per element of q and of k."
          if spec.qk_norm != "none" else "") + _latent_text(spec) + _gemma_text(spec)
    parallel = (" Parallel residual: one residual_add row per block, after the FFN, 2 FLOPs per "
                "element (x + attn + ffn)." if spec.parallel_residual != "off" else "")
    window = (f" Nor are keys outside the {spec.sliding_window:,}-token sliding window "
              f"{_local_layers(spec)}subtracted." if spec.sliding_window else "")
    return (
        "FLOPs: 2 per multiply-add (x @ W with W (m, n): 2mn per token); attention scores (QK^T) "
        f"and weighted sum (PV) counted for every query-key pair: causal masking is NOT halved.{window} "
        f"Elementwise, per output element: residual/position/token-type/bias add {ADD_FLOPS}, "
        f"norm {NORM_FLOPS}, softmax {SOFTMAX_FLOPS}, activation {ACTIVATION_FLOPS} (+1 for a "
        f"gated product). Not counted: embedding lookups, score scaling, masks, RoPE rotation"
        f"{_rotary_note(spec)}, "
        f"relative-bias add, routing top-k, tied-head rescale.{moe}{qk}{parallel} Per token: total / "
        f"({per_token}). Activation bytes: output elements x {DTYPE_BYTES[dtype]:g} bytes "
        f"({dtype}), summed over ops (not peak memory). A stack of more than "
        f"{MAX_LISTED_BLOCKS} blocks lists block 0, then blocks 1..L-1 as one row named for its stack and range (e.g. 'decoder.1-79') "
        "(identical blocks), their figures summed"
        f"{_listing_text(spec)}."
    )


def _listing_text(spec: Spec) -> str:
    """Where the listing differs for a deep stack of this spec: more blocks before the run."""
    layers = spec.decoder_layers
    m = uniform_tail(spec, layers) if layers > MAX_LISTED_BLOCKS else None
    if m is None or m == 1:
        return ""
    return (f"; here the decoder lists blocks 0..{m - 1}, and blocks {m}..L-1, all of one kind "
            "(dense or MoE), make that row")


def _moe_text(spec: Spec) -> str:
    """The convention for shared experts, their gate and dense blocks of an MoE stack."""
    parts = []
    if spec.n_shared_experts:
        parts.append(f", plus the {spec.n_shared_experts} shared expert(s) on every token (one "
                     f"FFN of width {spec.shared_width:,}, its add into the output 1 per element)")
    if spec.shared_expert_gate:
        parts.append(", their sigmoid gate 2 d_model per token for x.w, the activation figure "
                     "and 1 per element for the scaling")
    if spec.mixed_ffn_layers:
        parts.append(f"; {spec.moe_layer_count(spec.decoder_layers):,} of "
                     f"{spec.decoder_layers:,} blocks are MoE, the others dense (d_ff)")
    return "".join(parts) + _routing_text(spec)


def _routing_text(spec: Spec) -> str:
    """What DeepSeek-style routing adds beyond the router's x @ W, none of it counted."""
    parts = []
    if spec.router_scoring == "sigmoid":
        parts.append("sigmoid scoring")
    if spec.router_bias:
        parts.append("the correction bias (router_bias: a buffer, 0 parameters, owned by the "
                     "router row)")
    if spec.group_limited:
        parts.append(f"group-limited choice ({spec.expert_groups} groups, the best "
                     f"{spec.topk_groups} by {spec.group_score})")
    if spec.routed_scaling_factor != 1:
        parts.append(f"scaling by routed_scaling_factor {spec.routed_scaling_factor:g}")
    if not parts:
        return ""
    return f"; the router row counts x @ W only: {', '.join(parts)} not counted, like routing top-k"


def _latent_text(spec: Spec) -> str:
    """The convention for multi-head latent attention (MLA), when used."""
    if not spec.latent_attention:
        return ""
    r, dr, dn = spec.kv_lora_rank, spec.qk_rope_head_dim, spec.qk_nope_head_dim
    query = ("q_proj" if spec.q_lora_rank is None else
             f"q_a_proj to the {spec.q_lora_rank}-wide q_lora_rank, q_a_norm, q_b_proj")
    return (f" Latent attention (MLA): the query by {query}; kv_a_proj to the {r}-dim latent "
            f"and the {dr}-dim shared RoPE key, kv_a_norm (the norm figure) on the latent; "
            f"kv_b_proj expands all S cached latents to every head's key and value on each call, "
            f"2 x B x S x r x H x (dn + dv) FLOPs (S = seq_len in one forward pass; not the "
            f"absorbed form); scores over qk = dn + dr = {dn} + {dr} = {spec.head_dim} dims per "
            f"head, the weighted sum over v_head_dim = {spec.value_dim}.")


def _rotary_note(spec: Spec) -> str:
    """Which dimensions RoPE rotates, when not the default (every dim, rotate-half pairs): like
    all of RoPE, partial rotary adds no row and no FLOPs (the other dims pass unchanged)."""
    partial = spec.rotary_width < spec.head_dim
    if spec.positions != "rope" or (not partial and spec.rope_pairing == "half"):
        return ""
    if not partial:
        return f" ({spec.rope_pairing} pairs)"
    if spec.latent_attention:  # MLA rotates the qk_rope_head_dim dims after the nope ones
        return (f" (MLA: the last {spec.rotary_width} of each head's {spec.head_dim} query dims "
                f"and the shared RoPE key, {spec.rope_pairing} pairs)")
    return (f" (partial rotary: the first {spec.rotary_width} of each head's {spec.head_dim} "
            f"dims, {spec.rope_pairing} pairs)")


def uniform_tail(spec: Spec, layers: int) -> int | None:
    """The first block m >= 1 from which blocks m..L-1 (at least two) are all of one kind,
    dense or MoE, so that one row group stands for them; None past MAX_LISTED_BLOCKS. Block 0
    is always listed (it owns a T5 stack's relative-bias table). Counted with moe_layer_count,
    never by listing the blocks: a stack may have 10^9 of them."""
    moe_total = spec.moe_layer_count(layers)
    for m in range(1, min(MAX_LISTED_BLOCKS, layers - 2) + 1):
        if moe_total - spec.moe_layer_count(m) in (0, layers - m):  # MoE in m..L-1: none or all
            return m
    return None


# norm_placement values that put a norm row at each place in a sublayer (see _Tracer.norm)
_PLACEMENTS = {"pre": ("pre", "sandwich"), "body": ("sublayer_post", "sandwich"),
               "post": ("post",)}


# --- the trace builder --------------------------------------------------------------------------


class _Tracer:
    """Accumulates rows in forward order; parameter ownership comes from params.components."""

    def __init__(self, spec: Spec, batch: int, dtype: str) -> None:
        self.spec, self.batch = spec, batch
        self.element_bytes = DTYPE_BYTES[dtype]
        self.rows: list[TraceRow] = []
        # a tied head owns nothing: its table belongs to token_embedding
        self._counts = [(c.path, c.count) for c in components(spec) if not c.tied]
        self._found: dict[str, tuple[int, list[str]]] = {}  # prefix with `*` -> its components

    def owned(self, *prefixes: str, blocks: int = 1) -> Owned:
        """Parameters (per block of `blocks`) and Weights paths of the components at `prefixes`
        (a path, or the paths under it). A prefix in block i, `decoder.blocks.3.attn.wq`, finds
        the component of every block, `decoder.blocks.*.attn.wq`, and names it for block i."""
        total, paths = 0, []
        for prefix in prefixes:
            block = _WEIGHTS_BLOCK.search(prefix)
            every = _WEIGHTS_BLOCK.sub(f".blocks.{EVERY}", prefix, count=1)
            count, found = self._components_at(every)
            total += count
            paths += [p.replace(f".blocks.{EVERY}", f".blocks.{block.group(1)}", 1) for p in found] \
                if block else found
        return Owned(total // blocks, tuple(paths))

    def _components_at(self, prefix: str) -> tuple[int, list[str]]:
        """Parameters and paths of the components at `prefix`, looked up once per prefix."""
        if prefix not in self._found:
            hits = [(p, n) for p, n in self._counts if p == prefix or p.startswith(prefix + ".")]
            self._found[prefix] = (sum(n for _, n in hits), [p for p, _ in hits])
        return self._found[prefix]

    def add(self, path: str, op: str, inputs: list[Shape], output: Shape,
            owned: Owned = NOTHING, flops: int = 0) -> None:
        act_bytes = math.ceil(math.prod(output) * self.element_bytes)
        self.rows.append(TraceRow(path, op, tuple(inputs), output, owned.params, flops, act_bytes,
                                  weights=owned.paths))

    def embed(self, length: int, owns_tables: bool) -> None:
        s, x = self.spec, (self.batch, length, self.spec.d_model)
        def own(prefix: str) -> Owned:
            return self.owned(prefix) if owns_tables else NOTHING
        self.add("embed", "token_embedding", [x[:2]], x, own("token_embedding"))
        if s.scale_embeddings:  # x * sqrt(d_model): one multiply per element
            self.add("embed", "embed_scale", [x], x, NOTHING, math.prod(x))
        add, norm = ADD_FLOPS * math.prod(x), NORM_FLOPS * math.prod(x)
        if s.positions in ("learned", "sinusoidal"):
            table = (length, s.d_model)  # rows of the learned table, or the sinusoids
            self.add("embed", "position_embedding", [x, table], x, own("position_embedding"), add)
        if s.type_vocab_size:
            self.add("embed", "token_type_embedding", [x, x[:2]], x, own("token_type_embedding"),
                     add)
        if s.embedding_norm:
            self.add("embed", "embedding_norm", [x], x, own("embedding_norm"), norm)

    def stack(self, stack: str, length: int, memory_len: int | None) -> None:
        """Every block of `stack` (with cross-attention over memory_len source positions)."""
        s = self.spec
        layers = s.encoder_layers if stack == "encoder" else s.decoder_layers
        listed = layers if layers <= MAX_LISTED_BLOCKS else uniform_tail(s, layers)
        if listed is None:  # no block m <= MAX_LISTED_BLOCKS after which all are of one kind
            raise BadInputError(f"{s.name}: trace lists every block of a stack that mixes dense "
                                f"and MoE blocks past block {MAX_LISTED_BLOCKS}, at most "
                                f"{MAX_LISTED_BLOCKS}; it has {layers:,} (use --layers)")
        for i in range(listed):
            self.block(stack, i, layers, length, memory_len)
        if listed < layers:  # blocks m..L-1 are identical: one block's rows, times L-m
            start, first = len(self.rows), f"{stack}.{listed}"
            self.block(stack, listed, layers, length, memory_len)
            span, repeat = f"{first}-{layers - 1}", layers - listed
            self.rows[start:] = [repeated(r, first, span, repeat) for r in self.rows[start:]]
        if s.final_norm:
            x = (self.batch, length, s.d_model)
            norm_params = self.owned(f"{stack}.final_norm")
            self.add(f"{stack}.final_norm", "norm", [x], x, norm_params, NORM_FLOPS * math.prod(x))

    def block(self, stack: str, i: int, layers: int, length: int, memory_len: int | None) -> None:
        """Block i of `stack` (of `layers`); block 0 owns the stack's T5 relative-bias table."""
        w = f"{stack}.blocks.{i}"
        rel_bias = self.owned(f"{stack}.relative_bias") if i == 0 else NOTHING
        self.attention(f"{stack}.{i}.attn", f"{w}.attn", f"{w}.attn_norm", layers,
                       length, length, rel_bias)
        if memory_len is not None:
            self.attention(f"{stack}.{i}.cross_attn", f"{w}.cross_attn", f"{w}.cross_norm",
                           layers, length, memory_len, NOTHING)
        self.ffn(f"{stack}.{i}.ffn", w, layers, length, i)

    def norm(self, path: str, prefix: str, layers: int, length: int, placement: str) -> None:
        """A norm row where the spec's norm_placement puts one: before the sublayer ("pre"),
        on its output inside the residual ("body") or after the residual add ("post")."""
        s = self.spec
        if s.norm_placement in _PLACEMENTS[placement] and s.norm != "none":
            x = (self.batch, length, s.d_model)
            self.add(path, "norm", [x], x, self.owned(prefix, blocks=layers),
                     NORM_FLOPS * math.prod(x))

    def residual(self, path: str, norm: str, layers: int, length: int) -> None:
        x = (self.batch, length, self.spec.d_model)
        self.add(path, "residual_add", [x, x], x, NOTHING, ADD_FLOPS * math.prod(x))
        self.norm(path, norm, layers, length, "post")

    def attention(self, path: str, w: str, norm: str, layers: int, length: int, keys: int,
                  score_params: Owned) -> None:
        """One attention sublayer: queries over `length` positions, keys over `keys`."""
        if self.spec.latent_attention:  # decoder self-attention only
            self.latent_attention(path, w, norm, layers, length, score_params)
            return
        s, B, T, S = self.spec, self.batch, length, keys
        H, Hkv, dh, d = s.n_heads, s.kv_heads, s.head_dim, s.d_model
        x, memory = (B, T, d), (B, S, d)
        q, kv, scores = (B, H, T, dh), (B, Hkv, S, dh), (B, H, T, S)

        def project(op: str, name: str, inp: Shape, out: Shape, tokens: int, n_in: int,
                    n_out: int) -> None:
            bias = s.attention_out_bias if name == "o" else s.attention_bias
            flops = _linear_flops(tokens, n_in, n_out, bool(bias))
            owned = self.owned(f"{w}.w{name}", f"{w}.b{name}", blocks=layers)
            self.add(path, op, [inp], out, owned, flops)

        self.norm(path, norm, layers, T, "pre")
        project("q_proj", "q", x, q, B * T, d, H * dh)
        project("k_proj", "k", memory, kv, B * S, d, Hkv * dh)
        project("v_proj", "v", memory, kv, B * S, d, Hkv * dh)
        for name, shape in (("q", q), ("k", kv)):  # qk_norm (self-attention): before RoPE
            owned = self.owned(f"{w}.{name}_norm", blocks=layers)
            if owned.paths:
                self.add(path, f"{name}_norm", [shape], shape, owned, NORM_FLOPS * math.prod(shape))
        pair_flops = 2 * B * H * T * S * dh  # every (query, key) pair: one dh-long dot product
        self.add(path, "scores", [q, kv], scores, score_params, pair_flops)
        if s.attn_logit_softcap is not None:  # c * tanh(s / c), elementwise
            self.add(path, "softcap", [scores], scores, NOTHING,
                     ACTIVATION_FLOPS * math.prod(scores))
        self.add(path, "softmax", [scores], scores, NOTHING, SOFTMAX_FLOPS * math.prod(scores))
        self.add(path, "weighted_sum", [scores, kv], q, NOTHING, pair_flops)
        project("out_proj", "o", q, x, B * T, H * dh, d)  # heads merged: (B, T, H*dh) @ wo
        self.norm(path, f"{w}_post_norm", layers, T, "body")  # attn_post_norm
        if s.parallel_residual == "off":  # parallel: one residual add, after the FFN
            self.residual(path, norm, layers, T)

    def latent_attention(self, path: str, w: str, norm: str, layers: int, length: int,
                         score_params: Owned) -> None:
        """MLA self-attention, in the engine's probe order (tfcli.engine.latent_attention): the
        query (whole, or through the q_lora bottleneck), the latent and shared RoPE key, the
        expansion of all S = length latents to every head's key and value, attention, output."""
        s, B, T = self.spec, self.batch, length
        H, d, qk, dv = s.n_heads, s.d_model, s.head_dim, s.value_dim
        r, dr, dn = s.kv_lora_rank or 0, s.qk_rope_head_dim or 0, s.qk_nope_head_dim or 0
        x, heads = (B, T, d), (B, T, H, qk)

        def project(op: str, names: tuple[str, ...], inp: Shape, out: Shape, n_in: int,
                    n_out: int, bias: bool | None = False) -> None:
            owned = self.owned(*(f"{w}.{n}" for n in names), blocks=layers)
            self.add(path, op, [inp], out, owned, _linear_flops(B * T, n_in, n_out, bool(bias)))

        def latent_norm(op: str, width: int) -> None:
            shape = (B, T, width)
            self.add(path, op, [shape], shape, self.owned(f"{w}.{op}", blocks=layers),
                     NORM_FLOPS * math.prod(shape))

        self.norm(path, norm, layers, T, "pre")
        if s.q_lora_rank is None:
            project("q_proj", ("wq",), x, heads, d, H * qk)
        else:
            low = (B, T, s.q_lora_rank)
            project("q_a_proj", ("wq_a", "bq_a"), x, low, d, s.q_lora_rank, s.attention_bias)
            latent_norm("q_a_norm", s.q_lora_rank)
            project("q_b_proj", ("wq_b",), low, heads, s.q_lora_rank, H * qk)
        project("kv_a_proj", ("wkv_a", "bkv_a"), x, (B, T, r + dr), d, r + dr, s.attention_bias)
        latent_norm("kv_a_norm", r)
        # every cached latent (S = T here) expanded on each call: 2 B S r H (dn + dv)
        project("kv_b_proj", ("wkv_b",), (B, T, r), (B, H, T, dn + dv), r, H * (dn + dv))
        q, keys, scores = (B, H, T, qk), (B, H, T, qk), (B, H, T, T)
        self.add(path, "scores", [q, keys], scores, score_params, 2 * B * H * T * T * qk)
        if s.attn_logit_softcap is not None:  # c * tanh(s / c), elementwise
            self.add(path, "softcap", [scores], scores, NOTHING,
                     ACTIVATION_FLOPS * math.prod(scores))
        self.add(path, "softmax", [scores], scores, NOTHING, SOFTMAX_FLOPS * math.prod(scores))
        values = (B, H, T, dv)
        self.add(path, "weighted_sum", [scores, values], values, NOTHING, 2 * B * H * T * T * dv)
        project("out_proj", ("wo", "bo"), values, x, H * dv, d, s.attention_out_bias)
        self.norm(path, f"{w}_post_norm", layers, T, "body")  # attn_post_norm
        if s.parallel_residual == "off":
            self.residual(path, norm, layers, T)

    def ffn(self, path: str, w: str, layers: int, length: int, i: int) -> None:
        """Block i's FFN sublayer; MoE or dense rows own their arrays per block of that kind."""
        s, parallel = self.spec, self.spec.parallel_residual
        if parallel != "one_norm":  # one_norm: the FFN reads the attention's norm output
            self.norm(path, f"{w}.ffn_norm", layers, length, "pre")
        moe = s.moe_layer_count(layers)
        if s.moe_layer(i):
            self.moe(path, f"{w}.ffn", moe, length)
        else:
            self.dense_ffn(path, f"{w}.ffn", layers - moe, length)
        self.norm(path, f"{w}.ffn_post_norm", layers, length, "body")
        if parallel == "off":
            self.residual(path, f"{w}.ffn_norm", layers, length)
        else:  # x + attn + ffn: one row, two adds per element
            x = (self.batch, length, self.spec.d_model)
            self.add(path, "residual_add", [x, x, x], x, NOTHING, 2 * ADD_FLOPS * math.prod(x))

    def dense_ffn(self, path: str, w: str, layers: int, length: int) -> None:
        s, tokens = self.spec, self.batch * length
        x, h, bias = (self.batch, length, s.d_model), (self.batch, length, s.d_ff), bool(s.ffn_bias)
        def own(proj: str) -> Owned:
            return self.owned(f"{w}.w_{proj}", f"{w}.b_{proj}", blocks=layers)
        up = _linear_flops(tokens, s.d_model, s.d_ff, bias)
        self.add(path, "ffn_up", [x], h, own("up"), up)
        if s.gated:
            self.add(path, "ffn_gate", [x], h, own("gate"), up)
        inputs = [h, h] if s.gated else [h]
        self.add(path, "activation", inputs, h, NOTHING, _activation_flops(s) * math.prod(h))
        down = _linear_flops(tokens, s.d_ff, s.d_model, bias)
        self.add(path, "ffn_down", [h], x, own("down"), down)

    def moe(self, path: str, w: str, layers: int, length: int) -> None:
        s, tokens = self.spec, self.batch * length
        x, routed = (self.batch, length, s.d_model), (self.batch, length, s.n_experts)
        router = _linear_flops(tokens, s.d_model, s.n_experts, False)
        # the router row owns router_bias too (a buffer: 0 parameters, see convention_text)
        owned = self.owned(f"{w}.router", f"{w}.router_bias", blocks=layers)
        self.add(path, "router", [x], routed, owned, router)
        experts = tokens * s.experts_per_token * _dense_ffn_token_flops(s, s.expert_width)
        self.add(path, "experts", [x, routed], x, self.owned(f"{w}.experts", blocks=layers),
                 experts)
        if s.shared_expert_gate:  # sigmoid(x . w) (B, T, 1), then the shared output scaled by it
            gate = _linear_flops(tokens, s.d_model, 1, False) + tokens * (ACTIVATION_FLOPS + s.d_model)
            self.add(path, "shared_gate", [x], (*x[:2], 1),
                     self.owned(f"{w}.shared_gate", blocks=layers), gate)
        if s.n_shared_experts:  # one FFN of the summed width on every token, added to the output
            shared = tokens * (_dense_ffn_token_flops(s, s.shared_width) + ADD_FLOPS * s.d_model)
            self.add(path, "shared_experts", [x], x, self.owned(f"{w}.shared", blocks=layers),
                     shared)

    def head(self, length: int) -> None:
        s, B, d = self.spec, self.batch, self.spec.d_model
        x = (B, length, d)
        if s.lm_head:  # a tied head owns nothing: its table belongs to token_embedding
            logits = (B, length, s.vocab_size)
            flops = _linear_flops(B * length, d, s.vocab_size, s.lm_head_bias)
            owned = self.owned("lm_head", "lm_head_bias") if s.lm_head_bias else self.owned("lm_head")
            self.add("head", "logits", [x], logits, owned, flops)
        if s.lm_head and s.final_logit_softcap is not None:  # c * tanh(z / c), elementwise
            logits = (B, length, s.vocab_size)
            self.add("head", "softcap", [logits], logits, NOTHING,
                     ACTIVATION_FLOPS * math.prod(logits))
        if s.pooler:  # tanh(W h[:, 0] + b): the first token of each sequence only
            pooler = _linear_flops(B, d, d, True) + ACTIVATION_FLOPS * B * d
            self.add("head", "pooler", [x], (B, d), self.owned("pooler_w", "pooler_b"), pooler)


# --- entry point --------------------------------------------------------------------------------


def _resolve_lengths(spec: Spec, seq_len: int | None, src_len: int | None,
                     tgt_len: int | None) -> tuple[int, int | None, int | None]:
    seq = min(spec.max_seq_len, DEFAULT_SEQ_LEN) if seq_len is None else seq_len
    if spec.family != "encoder-decoder":
        if src_len is not None or tgt_len is not None:
            raise BadInputError(f"--src-len/--tgt-len apply to encoder-decoder specs; "
                                f"{spec.name} is a {spec.family}: use --seq-len")
        return seq, None, None
    return seq, seq if src_len is None else src_len, seq if tgt_len is None else tgt_len


def _check_inputs(spec: Spec, batch: int, lengths: dict[str, int | None], dtype: str) -> None:
    check_dtype("--dtype", dtype, ACTIVATION_DTYPES)
    for option, value in {"--batch": batch, **lengths}.items():
        if value is not None and value < 1:
            raise BadInputError(f"{option} must be at least 1, got {value}")
        if value is not None and value > MAX_SIZE:
            raise BadInputError(f"{option} must be at most 2^40 ({MAX_SIZE:,}), got "
                                f"{str(value)[:30]}{'...' if len(str(value)) > 30 else ''}")
        if option != "--batch" and value is not None and spec.positions == "learned" \
                and value > spec.max_seq_len:
            raise BadInputError(f"{option} {value} exceeds max_seq_len {spec.max_seq_len} of "
                                f"{spec.name} (learned positions have no row past it)")


def _trace_forward(tracer: _Tracer, spec: Spec, seq: int, src: int | None,
                   tgt: int | None) -> int:
    """Add every row in the engine's order; returns the tokens per sequence processed."""
    if src is None or tgt is None:
        tracer.embed(seq, owns_tables=True)
        tracer.stack("encoder" if spec.family == "encoder" else "decoder", seq, None)
        tracer.head(seq)
        return seq
    tracer.embed(src, owns_tables=True)  # encoder-decoder: source first, then target
    tracer.stack("encoder", src, None)
    tracer.embed(tgt, owns_tables=False)
    tracer.stack("decoder", tgt, memory_len=src)
    tracer.head(tgt)
    return src + tgt


def build_trace(spec: Spec, *, batch: int = 1, seq_len: int | None = None,
                src_len: int | None = None, tgt_len: int | None = None,
                dtype: str = "float32") -> TraceReport:
    """The analytic trace of one forward pass of `batch` sequences.

    seq_len defaults to min(spec.max_seq_len, 128); for encoder-decoder, src_len (encoder) and
    tgt_len (decoder) default to seq_len. BadInputError for a length past max_seq_len with
    learned positions, a non-positive size, or an unknown dtype.
    """
    seq, src, tgt = _resolve_lengths(spec, seq_len, src_len, tgt_len)
    given = {"--seq-len": seq, "--src-len": src, "--tgt-len": tgt}
    _check_inputs(spec, batch, given, dtype)
    tracer = _Tracer(spec, batch, dtype)
    tokens = batch * _trace_forward(tracer, spec, seq, src, tgt)
    return TraceReport(
        spec_name=spec.name, family=spec.family, batch=batch, seq_len=seq, src_len=src,
        tgt_len=tgt, dtype=dtype, rows=tuple(tracer.rows),
        convention=convention_text(spec, dtype), tokens=tokens,
    )
