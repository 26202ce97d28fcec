"""The convention line of `tfcli trace`: how its FLOPs and bytes are counted, in words, with the
stated per-element constants, and where a deep stack's listing folds (uniform_tail). Split from
tfcli.analysis.trace.build, which builds the rows with these constants."""

from __future__ import annotations

from tfcli.core.dtypes import DTYPE_BYTES
from tfcli.spec.model import Spec

MAX_LISTED_BLOCKS = 256  # deeper stacks show block 0 and one row group for blocks 1..L-1

# FLOPs per output element of elementwise ops: small stated constants (see convention_text).
ADD_FLOPS = 1  # residual add, position / token-type add, bias add
NORM_FLOPS = 5  # statistics, normalise, scale, shift (one figure for every norm kind)
SOFTMAX_FLOPS = 3  # exp, sum, divide (Hoffmann et al. 2022, Appendix F)
ACTIVATION_FLOPS = 4  # one nonlinearity; a gated FFN adds 1 for the gate product


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
    scaled = [row for row, field in (("embed_scale", spec.embedding_multiplier),
                                      ("residual_scale", spec.residual_multiplier),
                                      ("logits_scaling", spec.logits_scaling)) if field is not None]
    if scaled:
        parts.append(f" Scalar multipliers ({', '.join(scaled)}): 1 per element.")
    return "".join(parts)


def _local_layers(spec: Spec) -> str:
    """Which layers a sliding window applies to, when a layer_pattern mixes kinds."""
    if spec.layer_pattern is None:
        return ""
    return f"of the local layers ({spec.local_layers:,} of {spec.total_layers:,}) "


def convention_text(spec: Spec, dtype: str) -> str:
    """How the trace counts; shown under the table and carried in JSON."""
    encoder_decoder = spec.family == "encoder-decoder"
    per_token = "batch x (src_len + tgt_len)" if encoder_decoder else "batch x seq_len"
    k = spec.experts_per_token
    moe = f" MoE experts: only the {k} routed experts per token{_moe_text(spec)}." \
        if spec.n_experts else ""
    qk = (" q/k norms (qk_norm): the norm figure per element of q and of k."
          if spec.qk_norm != "none" else "") + _latent_text(spec) + _gemma_text(spec) + \
        _disentangled_text(spec)
    parallel = (" Parallel residual: one residual_add row per block, after the FFN, 2 FLOPs per "
                "element (x + attn + ffn)." if spec.parallel_residual != "off" else "")
    w = spec.sliding_window or 0
    reach = (f"bidirectional sliding window (|i - j| < {w:,}) " if spec.family == "encoder"
             else f"{w:,}-token sliding window ")
    window = f" Nor are keys outside the {reach}{_local_layers(spec)}subtracted." if w else ""
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


def _disentangled_text(spec: Spec) -> str:
    """The convention for DeBERTa's disentangled attention, when used."""
    terms = spec.disentangled_attention
    if not terms:
        return ""
    shared = ("the attention's own k / q projections (share_att_key: their rows own nothing "
              "there)" if spec.share_att_key else "pos_key_proj / pos_query_proj")
    return (f" Disentangled attention ({' + '.join(terms)}): the {spec.relative_rows}-row "
            f"relative table (relative_embedding, read once per stack) through {shared}, "
            "2 x R x d x H x dh per block; each term against all R rows, 2 x B x H x T x R x dh, "
            "as transformers computes it before gathering T columns, plus 1 per score for its "
            "add; log buckets and gathers not counted.")


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
