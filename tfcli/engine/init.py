"""Random weights: the one builder of a spec's Weights tree, and init_weights.

`Initializer` is the only place that says which arrays a spec has and their shapes: init_weights
draws them, the checkpoint loader's skeleton() gets placeholders from the same builder (by
overriding the three draw methods), so a new weight is added here once.
"""

from __future__ import annotations

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.layout import arrange_weights
from tfcli.engine.weights import (AttentionWeights, BlockWeights, FFNWeights,
                                  LatentAttentionWeights, MoEWeights, NormWeights, StackWeights,
                                  Weights)
from tfcli.spec.model import Spec

CHUNK_VALUES = 1 << 16  # normals drawn per call into a scratch row block (256 KiB of float32)


class Initializer:
    """Builds weights from three draw methods: `normal(*shape)` (N(0, init_std^2) from one seeded
    generator, row-major order), `zeros`, `ones`. Subclasses change what an array is (placeholders,
    other draws); the structure methods (norm ... weights) stay the one description of the tree.

    laid_out: draw straight into layout.py's memory layout (fused Q/K/V and gate/up, transposed
    storage), each value the one a row-major draw of the field alone gives, so that
    arrange_weights has nothing left to copy. Off, every field is its own C-ordered array.
    """

    def __init__(self, spec: Spec, rng: np.random.Generator, dtype: np.dtype | type = np.float32,
                 laid_out: bool = False):
        self.spec = spec
        self.rng = rng
        self.dtype = np.dtype(dtype)
        self.laid_out = laid_out

    # --- draws ---------------------------------------------------------------------------------

    def fill_normal(self, out: Array) -> None:
        """Fill a C-contiguous `out` with the generator's next out.size N(0, init_std^2) values,
        scaled in place: float32 weights are drawn as float32 (no float64 detour), float64 ones
        as float64; other dtypes are float64 draws rounded."""
        if out.dtype in (np.float32, np.float64):
            self.rng.standard_normal(out=out, dtype=out.dtype)
            out *= out.dtype.type(self.spec.init_std)
        else:
            out[...] = self.rng.standard_normal(out.shape) * self.spec.init_std

    def normal(self, *shape: int) -> Array:
        out = np.empty(shape, dtype=self.dtype)
        self.fill_normal(out)
        return out

    def zeros(self, *shape: int) -> Array:
        return np.zeros(shape, dtype=self.dtype)

    def ones(self, *shape: int) -> Array:
        return np.ones(shape, dtype=self.dtype)

    # --- draws into the layout (laid_out only; see layout.py) ----------------------------------

    def _fill_rows(self, out: Array) -> None:
        """`out` (R, C), any strides, filled as a row-major draw of (R, C) would fill it: chunks
        of rows drawn into one small scratch block, then copied into place."""
        if out.flags.c_contiguous:
            self.fill_normal(out)
            return
        rows = max(1, CHUNK_VALUES // max(1, out.shape[1]))
        scratch = np.empty((min(rows, out.shape[0]), out.shape[1]), dtype=self.dtype)
        for start in range(0, out.shape[0], rows):
            part = scratch[: min(rows, out.shape[0] - start)]  # (r, C), C-contiguous
            self.fill_normal(part)
            out[start:start + len(part)] = part

    def _column_views(self, rows: int, *widths: int) -> list[Array]:
        """Consecutive column views (rows, w_i) of one new (rows, sum w_i) array, unfilled."""
        block = np.empty((rows, sum(widths)), dtype=self.dtype)
        bounds = np.cumsum([0, *widths])
        return [block[:, a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def _zero_columns(self, *widths: int) -> list[Array]:
        if not self.laid_out:
            return [self.zeros(w) for w in widths]
        block, bounds = self.zeros(sum(widths)), np.cumsum([0, *widths])
        return [block[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def _transposed(self, rows: int, cols: int) -> Array:
        """Normal (rows, cols), stored Fortran-ordered when laid out."""
        if not self.laid_out:
            return self.normal(rows, cols)
        out = np.empty((rows, cols), dtype=self.dtype, order="F")
        self._fill_rows(out)
        return out

    # --- the tree ------------------------------------------------------------------------------

    def norm(self, width: int | None = None) -> NormWeights | None:
        kind, d = self.spec.norm, width or self.spec.d_model
        if kind == "none":
            return None
        # a (1 + weight) norm (norm_unit_offset) starts at weight 0: the same effective scale 1
        unit = self.zeros if self.spec.norm_unit_offset else self.ones
        scale = unit(d) if kind in ("layernorm", "rmsnorm", "layernorm_nobias") else None
        bias = self.zeros(d) if kind == "layernorm" else None
        return NormWeights(scale, bias)

    def attention(self, fused: bool = True) -> AttentionWeights:
        """Self-attention (Q/K/V fused when laid out), or cross-attention (`fused` off: its Q
        reads the decoder, its K/V the encoder output)."""
        s = self.spec
        q_width, kv_width = s.n_heads * s.head_dim, s.kv_heads * s.head_dim
        widths = (q_width, kv_width, kv_width)
        fused = fused and self.laid_out
        if fused:
            wq, wk, wv = self._column_views(s.d_model, *widths)
            for view in (wq, wk, wv):
                self._fill_rows(view)
        else:
            wq, wk, wv = (self.normal(s.d_model, width) for width in widths)
        w = AttentionWeights(wq, wk, wv, self._transposed(q_width, s.d_model))
        if s.attention_bias:
            w.bq, w.bk, w.bv = self._zero_columns(*widths) if fused else [self.zeros(n) for n in widths]
        if s.attention_out_bias:
            w.bo = self.zeros(s.d_model)
        if s.disentangled_attention and not s.share_att_key:  # encoder: no cross-attention
            self.position_projections(w)
        return w

    def position_projections(self, w: AttentionWeights) -> None:
        """Disentangled attention's own projections of the relative-position table: pos_k
        (c2p), then pos_q (p2c), each (d_model, H*dh) with a bias under attention_bias."""
        s, width = self.spec, self.spec.n_heads * self.spec.head_dim
        bias = self.zeros if s.attention_bias else (lambda n: None)
        if "c2p" in (s.disentangled_attention or ()):
            w.wpos_k, w.bpos_k = self.normal(s.d_model, width), bias(width)
        if "p2c" in (s.disentangled_attention or ()):
            w.wpos_q, w.bpos_q = self.normal(s.d_model, width), bias(width)

    def latent_attention(self) -> LatentAttentionWeights:
        """MLA: drawn query (or q_a, q_b), kv_a, kv_b, then the output projection."""
        s = self.spec
        H, r, dr = s.n_heads, s.kv_lora_rank or 0, s.qk_rope_head_dim or 0
        q_width = H * s.head_dim
        w = LatentAttentionWeights(self.normal(s.d_model, r + dr), self.norm(r),  # type: ignore[arg-type]
                                   self.normal(r, H * ((s.qk_nope_head_dim or 0) + s.value_dim)),
                                   self._transposed(H * s.value_dim, s.d_model))
        if s.q_lora_rank is None:
            w.wq = self.normal(s.d_model, q_width)
        else:
            w.wq_a, w.q_a_norm = self.normal(s.d_model, s.q_lora_rank), self.norm(s.q_lora_rank)
            w.wq_b = self.normal(s.q_lora_rank, q_width)
            w.bq_a = self.zeros(s.q_lora_rank) if s.attention_bias else None
        if s.attention_bias:
            w.bkv_a = self.zeros(r + dr)
        if s.attention_out_bias:
            w.bo = self.zeros(s.d_model)
        return w

    def dense_ffn(self, width: int | None = None) -> FFNWeights:
        """Drawn up, down, then gate; laid out, gate and up are one (gate | up) array. `width`:
        the hidden width (an expert's), default d_ff."""
        s = self.spec.model_copy(update={"d_ff": width}) if width else self.spec
        fused = s.gated and self.laid_out
        if fused:
            gate, up = self._column_views(s.d_model, s.d_ff, s.d_ff)
            self._fill_rows(up)
            w = FFNWeights(up, self._transposed(s.d_ff, s.d_model), gate)
            self._fill_rows(gate)
        else:
            w = FFNWeights(self.normal(s.d_model, s.d_ff), self._transposed(s.d_ff, s.d_model))
            w.w_gate = self.normal(s.d_model, s.d_ff) if s.gated else None
        if s.ffn_bias:
            w.b_down = self.zeros(s.d_model)
            if fused:
                w.b_gate, w.b_up = self._zero_columns(s.d_ff, s.d_ff)
            else:
                w.b_up, w.b_gate = self.zeros(s.d_ff), self.zeros(s.d_ff) if s.gated else None
        return w

    def ffn(self, layer: int = 0) -> FFNWeights | MoEWeights:
        s = self.spec
        if not s.moe_layer(layer):
            return self.dense_ffn()
        router = self.normal(s.d_model, s.n_experts)
        width = s.expert_d_ff  # None: d_ff, drawn as before
        w = MoEWeights(router, [self.dense_ffn(width) for _ in range(s.n_experts)])
        if s.router_bias:  # drawn, not zero as transformers starts it: random tests then see it
            w.router_bias = self.normal(s.n_experts)
        if s.n_shared_experts:
            w.shared = self.dense_ffn(s.shared_width)
            w.shared_gate = self.normal(s.d_model, 1) if s.shared_expert_gate else None
        return w

    def block(self, cross: bool = False, layer: int = 0) -> BlockWeights:
        s = self.spec
        # sublayer_post has norms on the sublayers' outputs only; a one_norm parallel block
        # feeds the FFN from attn_norm's output
        # first_attn_norm false: block 0's attention reads the embedding norm (ModernBERT)
        unnormed = s.norm_placement == "sublayer_post" or (layer == 0 and not s.first_attn_norm)
        attn_norm = None if unnormed else self.norm()
        ffn_norm = (None if s.norm_placement == "sublayer_post" or s.parallel_residual == "one_norm"
                    else self.norm())
        attn = self.latent_attention() if s.latent_attention else self.attention()
        b = BlockWeights(attn_norm, attn, ffn_norm, self.ffn(layer))
        if s.post_sublayer_norms:
            b.attn_post_norm, b.ffn_post_norm = self.norm(), self.norm()
        if self.spec.qk_norm != "none":
            q_width, k_width = self.spec.qk_norm_widths
            b.attn.q_norm, b.attn.k_norm = self.norm(q_width), self.norm(k_width)
        if cross:
            b.cross_norm, b.cross_attn = self.norm(), self.attention(fused=False)
        if s.relative_bias_per_layer:
            b.relative_bias = self.normal(s.relative_buckets, s.n_heads)
        return b

    def stack(self, n_layers: int, cross: bool) -> StackWeights:
        s = self.spec
        shared_table = s.positions == "relative" and not s.relative_bias_per_layer
        rel = self.normal(s.relative_buckets, s.n_heads) if shared_table else None
        if s.shared_layers:  # one block's arrays, run by every block: no copies
            blocks = [self.block(cross)] * n_layers
        else:
            blocks = [self.block(cross, i) for i in range(n_layers)]
        stack = StackWeights(blocks, self.norm() if s.final_norm else None, rel)
        if s.disentangled_attention:  # DeBERTa: the stack's relative-position table
            stack.relative_embedding = self.normal(s.relative_rows, s.d_model)
            stack.relative_embedding_norm = self.norm() if s.relative_embedding_norm else None
        if s.per_stack_embeddings:  # BART: the stack's own position table and embedding norm
            e = s.embedding_width
            stack.position_embedding = self.normal(s.position_rows, e)
            stack.embedding_norm = self.norm(e) if s.embedding_norm else None
        return stack

    def weights(self) -> Weights:
        """The whole tree of `spec`, drawn in a fixed order (the seed's values depend on it)."""
        s = self.spec
        # tied (or headless) embedding: Fortran-ordered when laid out, the head reads its transpose
        e = s.embedding_width
        token = (self.normal(s.vocab_size, e) if s.lm_head and not s.tie_embeddings
                 else self._transposed(s.vocab_size, e))
        shared_tables = not s.per_stack_embeddings  # else each stack draws its own
        position = (self.normal(s.position_rows, e) if s.positions == "learned" and shared_tables
                    else None)
        token_type = self.normal(s.type_vocab_size, e) if s.type_vocab_size else None
        emb_norm = self.norm(s.embedding_norm_width) if s.embedding_norm and shared_tables else None
        project = self.normal(e, s.d_model) if s.embedding_dim is not None else None
        encoder = self.stack(s.encoder_layers, cross=False) if s.has_encoder else None
        decoder = (self.stack(s.decoder_layers, cross=s.family == "encoder-decoder")
                   if s.has_decoder else None)
        head = self.normal(s.logits_width, s.vocab_size) if s.lm_head and not s.tie_embeddings else None
        weights = Weights(token, position, token_type, emb_norm, encoder, decoder, head)
        if project is not None:
            weights.embedding_project = project
            weights.embedding_project_bias = self.zeros(s.d_model) if s.embedding_project_bias else None
        if s.pooler:
            weights.pooler_w, weights.pooler_b = self.normal(s.d_model, s.d_model), self.zeros(s.d_model)
        if s.lm_head_bias:
            weights.lm_head_bias = self.zeros(s.vocab_size)
        self.task_head(weights)
        if s.final_logits_bias:  # drawn, not zero as transformers starts it: tests then see it
            weights.final_logits_bias = self.normal(1, s.vocab_size)
        return weights

    def task_head(self, weights: Weights) -> None:
        """masked_lm's transform and a classifier, drawn last (other heads keep their draws)."""
        s = self.spec
        if s.head == "masked_lm":  # d_model -> logits_width (embedding_dim when factorised)
            weights.head_dense = self.normal(s.d_model, s.logits_width)
            weights.head_dense_bias = self.zeros(s.logits_width) if s.head_bias else None
            weights.head_norm = self.norm(s.logits_width)
        if s.classifier_dense:
            weights.head_dense = self.normal(s.d_model, s.d_model)
            weights.head_dense_bias = self.zeros(s.d_model) if s.head_bias else None
            weights.head_norm = self.norm() if s.classifier_norm else None
        if s.num_labels is not None:  # set for the classification heads only
            weights.classifier = self.normal(s.d_model, s.num_labels)
            weights.classifier_bias = self.zeros(s.num_labels) if s.classifier_bias else None


def init_weights(spec: Spec, seed: int = 0, dtype: np.dtype | type = np.float32) -> Weights:
    """Random weights for `spec` from np.random.default_rng(seed), drawn straight into the
    decode layout (arrange_weights then finds nothing to move)."""
    init = Initializer(spec, np.random.default_rng(seed), dtype, laid_out=True)
    return arrange_weights(init.weights())
