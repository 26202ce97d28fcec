"""Analytic per-op trace of one forward pass: shapes, owned parameters, FLOPs, activation bytes.

Never allocates a weight or an activation: a llama-2-70b trace is a few thousand small tuples.
Rows follow the Observer table of docs/CONTRACT.md (same paths, ops and order), which is what
tfcli.analysis.trace.check.execute_check verifies against a real forward pass.

Entry points for `tfcli trace`:
    report = build_trace(spec, batch=..., seq_len=..., src_len=..., tgt_len=..., dtype=...)
    report = report.at_depth(depth)   # to_dict() / csv_rows() then fold to that depth
    tfcli.render.trace.render_trace(report)

Parameters are attributed from tfcli.spec.counts.components, so the rows sum to
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

from tfcli.analysis.trace.rows import (
    NOTHING, Owned, Shape, TraceRow, check_depth, fold_rows, repeated,
)
from tfcli.analysis.trace.text import (  # the stated constants and the convention line
    ACTIVATION_FLOPS, ADD_FLOPS, MAX_LISTED_BLOCKS, NORM_FLOPS, SOFTMAX_FLOPS, convention_text,
    uniform_tail,
)
from tfcli.core.dtypes import ACTIVATION_DTYPES, DTYPE_BYTES, check_dtype
from tfcli.core.errors import BadInputError
from tfcli.spec.blueprint import EVERY, Component, components
from tfcli.core.shapes import shape_text
from tfcli.spec.model import Spec


DEFAULT_SEQ_LEN = 128  # default length: min(spec.max_seq_len, 128), small enough to --execute
MAX_SIZE = 2**40  # --batch / lengths: past this, FLOP totals would outgrow a float's range
_WEIGHTS_BLOCK = re.compile(r"\.blocks\.(\d+)(?=\.|$)")  # the block index of a Weights path


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


def _token_flops(comps: list[Component]) -> int:
    """One token through the linear layers `comps` (their weights and biases, as the blueprint
    lists them): 2 FLOPs per multiply-add of a matrix, ADD_FLOPS per bias element."""
    return sum(2 * math.prod(c.shape) if c.role == "matrix" else ADD_FLOPS * math.prod(c.shape)
               for c in comps if c.role != "table")


def _activation_flops(spec: Spec) -> int:
    """Per hidden element: the nonlinearity, plus the gate product when gated."""
    return ACTIVATION_FLOPS + (1 if spec.gated else 0)


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
        # every array a row may read, tied ones under the path they share (a tied head reads
        # the token table as its matrix): what a linear row's FLOPs are computed from
        self._arrays = components(spec)
        self._read: dict[str, list[Component]] = {}

    def owned(self, *prefixes: str, blocks: int = 1) -> Owned:
        """Parameters (per block of `blocks`) and Weights paths of the components at `prefixes`
        (a path, or the paths under it). A prefix in block i, `decoder.blocks.3.attn.wq`, finds
        the component of every block, `decoder.blocks.*.attn.wq`, and names it for block i."""
        if self.spec.shared_layers:
            return self._owned_shared(prefixes)
        total, paths = 0, []
        for prefix in prefixes:
            block = _WEIGHTS_BLOCK.search(prefix)
            every = _WEIGHTS_BLOCK.sub(f".blocks.{EVERY}", prefix, count=1)
            count, found = self._components_at(every)
            total += count
            paths += [p.replace(f".blocks.{EVERY}", f".blocks.{block.group(1)}", 1) for p in found] \
                if block else found
        return Owned(total // blocks, tuple(paths))

    def _owned_shared(self, prefixes: tuple[str, ...]) -> Owned:
        """shared_layers: block 0's rows own the one block's arrays, later blocks' rows none
        (they run the same arrays: FLOPs, no parameters)."""
        total, paths = 0, []
        for prefix in prefixes:
            block = _WEIGHTS_BLOCK.search(prefix)
            if block is None or block.group(1) == "0":
                count, found = self._components_at(prefix)
                total, paths = total + count, paths + found
        return Owned(total, tuple(paths))

    def reads(self, *prefixes: str) -> list[Component]:
        """The blueprint's arrays at `prefixes` (a path, or the paths under it) that a row
        reads, whoever owns them: block i's path finds every block's component (block 0's
        under shared_layers)."""
        out: list[Component] = []
        for prefix in prefixes:
            index = "0" if self.spec.shared_layers else EVERY
            key = _WEIGHTS_BLOCK.sub(f".blocks.{index}", prefix, count=1)
            if key not in self._read:
                self._read[key] = [c for c in self._arrays
                                   if c.path == key or c.path.startswith(key + ".")]
            out += self._read[key]
        return out

    def linear(self, tokens: int, *prefixes: str) -> int:
        """FLOPs of `tokens` rows through the linear layers at `prefixes` (weight, then bias)."""
        return tokens * _token_flops(self.reads(*prefixes))

    def dense_ffn_token_flops(self, prefix: str) -> int:
        """One token through one dense FFN at `prefix` (up, gate, activation, down): its arrays'
        FLOPs and the activation on each hidden element (its up projection's width)."""
        arrays = self.reads(prefix)
        width = next(c.shape[1] for c in arrays if c.path.endswith(".w_up"))
        return _token_flops(arrays) + _activation_flops(self.spec) * width

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

    def embed(self, length: int, owns_tables: bool, stack: str = "") -> None:
        """The embedding rows of `stack`'s input; the first call owns the shared tables, each
        stack its own position table and norm (per_stack_embeddings: `decoder.` ones)."""
        s, x = self.spec, (self.batch, length, self.spec.embedding_width)
        def own(prefix: str) -> Owned:
            if s.per_stack_embeddings and prefix in ("position_embedding", "embedding_norm"):
                return self.owned(f"{stack}.{prefix}")
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
        if s.embedding_project_first:  # DeBERTa: the norm then runs d_model wide
            self.embedding_project(x, owns_tables)
            x = (*x[:2], s.d_model)
            norm = NORM_FLOPS * math.prod(x)
        if s.embedding_norm:
            self.add("embed", "embedding_norm", [x], x, own("embedding_norm"), norm)
        if not s.embedding_project_first:
            self.embedding_project(x, owns_tables)

    def embedding_project(self, x: Shape, owns_tables: bool) -> None:
        """Factorised embeddings: (B, T, e) @ (e, d) [+ b], when the spec has embedding_dim."""
        s = self.spec
        if s.embedding_dim is None:
            return
        out = (*x[:2], s.d_model)
        flops = self.linear(math.prod(x[:2]), "embedding_project", "embedding_project_bias")
        project = (self.owned("embedding_project", "embedding_project_bias")
                   if owns_tables else NOTHING)
        self.add("embed", "embedding_project", [x], out, project, flops)

    def stack(self, stack: str, length: int, memory_len: int | None) -> None:
        """Every block of `stack` (with cross-attention over memory_len source positions)."""
        s = self.spec
        layers = s.encoder_layers if stack == "encoder" else s.decoder_layers
        listed = layers if layers <= MAX_LISTED_BLOCKS else uniform_tail(s, layers)
        if listed is None:  # no block m <= MAX_LISTED_BLOCKS after which all are of one kind
            raise BadInputError(f"{s.name}: trace lists every block of a stack that mixes dense "
                                f"and MoE blocks past block {MAX_LISTED_BLOCKS}, at most "
                                f"{MAX_LISTED_BLOCKS}; it has {layers:,} (use --layers)")
        self.relative_embedding(stack)
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

    def relative_embedding(self, stack: str) -> None:
        """Disentangled attention: the stack's relative-position table (read, 0 FLOPs) and its
        norm, once per forward pass, before the blocks."""
        s = self.spec
        if not s.disentangled_attention:
            return
        path = f"{stack}.relative_embedding"
        table = self.reads(path)[0].shape  # (2 x span, d_model): the blueprint's table
        self.add(path, "relative_embedding", [table], table, self.owned(path))
        if s.relative_embedding_norm:
            self.add(path, "norm", [table], table, self.owned(f"{path}_norm"),
                     NORM_FLOPS * math.prod(table))

    def block(self, stack: str, i: int, layers: int, length: int, memory_len: int | None) -> None:
        """Block i of `stack` (of `layers`); block 0 owns the stack's T5 relative-bias table
        (each block its own under relative_bias_per_layer)."""
        w = f"{stack}.blocks.{i}"
        if self.spec.relative_bias_per_layer:  # UMT5: every block owns its own table
            rel_bias = self.owned(f"{w}.relative_bias", blocks=layers)
        else:
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
        if prefix.endswith(".attn_norm") and not s.first_attn_norm:  # ModernBERT: not block 0's
            if prefix.endswith(".blocks.0.attn_norm"):
                return
            layers -= 1
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

        def project(op: str, name: str, inp: Shape, out: Shape, tokens: int) -> None:
            weights = (f"{w}.w{name}", f"{w}.b{name}")
            owned = self.owned(*weights, blocks=layers)
            self.add(path, op, [inp], out, owned, self.linear(tokens, *weights))

        self.norm(path, norm, layers, T, "pre")
        project("q_proj", "q", x, q, B * T)
        project("k_proj", "k", memory, kv, B * S)
        project("v_proj", "v", memory, kv, B * S)
        for name, shape in (("q", q), ("k", kv)):  # qk_norm (self-attention): before RoPE
            owned = self.owned(f"{w}.{name}_norm", blocks=layers)
            if owned.paths:
                self.add(path, f"{name}_norm", [shape], shape, owned, NORM_FLOPS * math.prod(shape))
        if s.disentangled_attention:  # DeBERTa's c2p / p2c terms, before the content scores
            self.position_scores(path, w, layers, T)
        pair_flops = 2 * B * H * T * S * dh  # every (query, key) pair: one dh-long dot product
        self.add(path, "scores", [q, kv], scores, score_params, pair_flops)
        if s.attn_logit_softcap is not None:  # c * tanh(s / c), elementwise
            self.add(path, "softcap", [scores], scores, NOTHING,
                     ACTIVATION_FLOPS * math.prod(scores))
        self.add(path, "softmax", [scores], scores, NOTHING, SOFTMAX_FLOPS * math.prod(scores))
        self.add(path, "weighted_sum", [scores, kv], q, NOTHING, pair_flops)
        project("out_proj", "o", q, x, B * T)  # heads merged: (B, T, H*dh) @ wo
        self.norm(path, f"{w}_post_norm", layers, T, "body")  # attn_post_norm
        if s.parallel_residual == "off":  # parallel: one residual add, after the FFN
            self.residual(path, norm, layers, T)

    def position_scores(self, path: str, w: str, layers: int, length: int) -> None:
        """Disentangled attention (tfcli.engine.disentangled_attention): the R = 2 x span table
        rows projected per head (pos_key_proj for c2p, pos_query_proj for p2c; the attention's
        own k / q projections under share_att_key, owning nothing), then each term against all
        R rows, 2 B H T R dh, gathered to (B, H, T, T) and added: 1 per score."""
        s, B, T = self.spec, self.batch, length
        stack = w.split(".", 1)[0]  # the stack's table: its blocks share it
        table = self.reads(f"{stack}.relative_embedding")[0].shape  # (R, d)
        H, dh, R = s.n_heads, s.head_dim, table[0]
        heads, scores = (H, R, dh), (B, H, T, T)
        for term, op, proj, shared in (("c2p", "pos_key_proj", "pos_k", "k"),
                                       ("p2c", "pos_query_proj", "pos_q", "q")):
            if term in (s.disentangled_attention or ()):
                owned = self.owned(f"{w}.w{proj}", f"{w}.b{proj}", blocks=layers)
                reads = shared if s.share_att_key else proj  # share_att_key: k / q's own
                self.add(path, op, [table], heads, owned,
                         self.linear(R, f"{w}.w{reads}", f"{w}.b{reads}"))
        for term in (t for t in ("c2p", "p2c") if t in (s.disentangled_attention or ())):
            query = (B, H, T, dh)  # c2p: the queries; p2c: the keys (S = T)
            self.add(path, term, [query, heads], scores, NOTHING,
                     2 * B * H * T * R * dh + ADD_FLOPS * math.prod(scores))

    def latent_attention(self, path: str, w: str, norm: str, layers: int, length: int,
                         score_params: Owned) -> None:
        """MLA self-attention, in the engine's probe order (tfcli.engine.latent_attention): the
        query (whole, or through the q_lora bottleneck), the latent and shared RoPE key, the
        expansion of all S = length latents to every head's key and value, attention, output."""
        s, B, T = self.spec, self.batch, length
        H, d, qk, dv = s.n_heads, s.d_model, s.head_dim, s.value_dim
        r, dr, dn = s.kv_lora_rank or 0, s.qk_rope_head_dim or 0, s.qk_nope_head_dim or 0
        x, heads = (B, T, d), (B, T, H, qk)

        def project(op: str, names: tuple[str, ...], inp: Shape, out: Shape) -> None:
            weights = tuple(f"{w}.{n}" for n in names)
            owned = self.owned(*weights, blocks=layers)
            self.add(path, op, [inp], out, owned, self.linear(B * T, *weights))

        def latent_norm(op: str, width: int) -> None:
            shape = (B, T, width)
            self.add(path, op, [shape], shape, self.owned(f"{w}.{op}", blocks=layers),
                     NORM_FLOPS * math.prod(shape))

        self.norm(path, norm, layers, T, "pre")
        if s.q_lora_rank is None:
            project("q_proj", ("wq",), x, heads)
        else:
            low = (B, T, s.q_lora_rank)
            project("q_a_proj", ("wq_a", "bq_a"), x, low)
            latent_norm("q_a_norm", s.q_lora_rank)
            project("q_b_proj", ("wq_b",), low, heads)
        project("kv_a_proj", ("wkv_a", "bkv_a"), x, (B, T, r + dr))
        latent_norm("kv_a_norm", r)
        # every cached latent (S = T here) expanded on each call: 2 B S r H (dn + dv)
        project("kv_b_proj", ("wkv_b",), (B, T, r), (B, H, T, dn + dv))
        q, keys, scores = (B, H, T, qk), (B, H, T, qk), (B, H, T, T)
        self.add(path, "scores", [q, keys], scores, score_params, 2 * B * H * T * T * qk)
        if s.attn_logit_softcap is not None:  # c * tanh(s / c), elementwise
            self.add(path, "softcap", [scores], scores, NOTHING,
                     ACTIVATION_FLOPS * math.prod(scores))
        self.add(path, "softmax", [scores], scores, NOTHING, SOFTMAX_FLOPS * math.prod(scores))
        values = (B, H, T, dv)
        self.add(path, "weighted_sum", [scores, values], values, NOTHING, 2 * B * H * T * T * dv)
        project("out_proj", ("wo", "bo"), values, x)
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
        x, h = (self.batch, length, s.d_model), (self.batch, length, s.d_ff)
        def weights(proj: str) -> tuple[str, str]:
            return f"{w}.w_{proj}", f"{w}.b_{proj}"
        def add(op: str, proj: str, inp: Shape, out: Shape) -> None:
            owned = self.owned(*weights(proj), blocks=layers)
            self.add(path, op, [inp], out, owned, self.linear(tokens, *weights(proj)))
        add("ffn_up", "up", x, h)
        if s.gated:
            add("ffn_gate", "gate", x, h)
        inputs = [h, h] if s.gated else [h]
        self.add(path, "activation", inputs, h, NOTHING, _activation_flops(s) * math.prod(h))
        add("ffn_down", "down", h, x)

    def moe(self, path: str, w: str, layers: int, length: int) -> None:
        s, tokens = self.spec, self.batch * length
        x, routed = (self.batch, length, s.d_model), (self.batch, length, s.n_experts)
        router = self.linear(tokens, f"{w}.router")
        # the router row owns router_bias too (a buffer: 0 parameters, see convention_text)
        owned = self.owned(f"{w}.router", f"{w}.router_bias", blocks=layers)
        self.add(path, "router", [x], routed, owned, router)
        experts = tokens * s.experts_per_token * self.dense_ffn_token_flops(f"{w}.experts")
        self.add(path, "experts", [x, routed], x, self.owned(f"{w}.experts", blocks=layers),
                 experts)
        if s.shared_expert_gate:  # sigmoid(x . w) (B, T, 1), then the shared output scaled by it
            gate = self.linear(tokens, f"{w}.shared_gate") + tokens * (ACTIVATION_FLOPS + s.d_model)
            self.add(path, "shared_gate", [x], (*x[:2], 1),
                     self.owned(f"{w}.shared_gate", blocks=layers), gate)
        if s.n_shared_experts:  # one FFN of the summed width on every token, added to the output
            shared = tokens * (self.dense_ffn_token_flops(f"{w}.shared") + ADD_FLOPS * s.d_model)
            self.add(path, "shared_experts", [x], x, self.owned(f"{w}.shared", blocks=layers),
                     shared)

    def head(self, length: int) -> None:
        s, B, d = self.spec, self.batch, self.spec.d_model
        x = (B, length, d)
        e, read = s.logits_width, (B, length, s.logits_width)  # what the logits read
        if s.head == "masked_lm":  # BERT's transform: norm(act(h @ W + b)) on every token
            transform = (self.linear(B * length, "head_dense", "head_dense_bias")
                         + ACTIVATION_FLOPS * B * length * e)
            self.add("head", "transform", [x], read, self.owned("head_dense", "head_dense_bias"),
                     transform)
            self.add("head", "transform_norm", [read], read, self.owned("head_norm"),
                     NORM_FLOPS * B * length * e)
        if s.lm_head:  # a tied head owns nothing: its table belongs to token_embedding
            logits = (B, length, s.vocab_size)
            # a tied head's matrix is the token table's (its component carries that path);
            # final_logits_bias, a 0-count buffer, is still one add per logit
            matrix = "token_embedding" if s.tie_embeddings else "lm_head"
            flops = self.linear(B * length, matrix, "lm_head_bias", "final_logits_bias")
            owned = self.owned("lm_head", "lm_head_bias") if s.lm_head_bias else self.owned("lm_head")
            if s.final_logits_bias:
                owned = self.owned("lm_head", "final_logits_bias")
            self.add("head", "logits", [read], logits, owned, flops)
        if s.lm_head and s.final_logit_softcap is not None:  # c * tanh(z / c), elementwise
            logits = (B, length, s.vocab_size)
            self.add("head", "softcap", [logits], logits, NOTHING,
                     ACTIVATION_FLOPS * math.prod(logits))
        if s.pooler:  # tanh(W h[:, 0] + b): the first token of each sequence only
            pooler = self.linear(B, "pooler_w", "pooler_b") + ACTIVATION_FLOPS * B * d
            self.add("head", "pooler", [x], (B, d), self.owned("pooler_w", "pooler_b"), pooler)
        if s.num_labels is not None:  # a classifier: on every token, or one token per sequence
            self.classifier(length)

    def classifier(self, length: int) -> None:
        """(d, num_labels) on every token (token_classification) or on what a sequence
        classifier reads, one (B, d) row per sequence (the pooler's output, the last real or
        the first token)."""
        s, B, d, labels = self.spec, self.batch, self.spec.d_model, self.spec.num_labels or 0
        tokens = B * length if s.head == "token_classification" else B
        x = (B, length, d) if s.head == "token_classification" else (B, d)
        if s.classifier_pooling == "mean":  # sum over the real tokens, one divide per value
            self.add("head", "mean_pool", [(B, length, d)], x, NOTHING,
                     ADD_FLOPS * B * length * d + B * d)
        if s.classifier_dense:  # act(x @ W + b) on each row the classifier reads
            self.add("head", "classifier_dense", [x], x,
                     self.owned("head_dense", "head_dense_bias"),
                     self.linear(tokens, "head_dense", "head_dense_bias")
                     + ACTIVATION_FLOPS * tokens * d)
        if s.classifier_norm:  # ModernBERT's prediction head: its norm after the activation
            self.add("head", "classifier_norm", [x], x, self.owned("head_norm"),
                     NORM_FLOPS * tokens * d)
        self.add("head", "classifier", [x], (*x[:-1], labels),
                 self.owned("classifier", "classifier_bias"),
                 self.linear(tokens, "classifier", "classifier_bias"))


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
    tracer.embed(src, owns_tables=True, stack="encoder")  # encoder-decoder: source, then target
    tracer.stack("encoder", src, None)
    tracer.embed(tgt, owns_tables=False, stack="decoder")
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
