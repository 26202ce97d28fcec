"""The `tfcli params` report: components merged per projection, totals, memory, KV cache."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, NamedTuple

from tfcli.checkpoints.stored import StoredWeights
from tfcli.core.dtypes import DTYPE_BYTES, WEIGHT_DTYPES
from tfcli.core.errors import BadInputError, shown
from tfcli.spec.counts import (
    ATTENTION, EMBEDDING, FFN, HEAD,
    Component, block_indices, components, expanded_kv_values_per_layer_token, inactive_expert_parameters,
    kv_cache_bytes, kv_cache_bytes_per_token, kv_cache_window_bytes, kv_values_per_layer_token,
)
from tfcli.core.shapes import shapes_text
from tfcli.spec.model import Spec

_SUFFIXES = (".weight", ".bias", ".scale")
MAX_COUNT = 2**40  # --seq-len / --batch: the bound trace, perf and memory set (their MAX_SIZE)


@dataclass(frozen=True)
class ComponentRow:
    """One projection, norm or table: weight and bias merged, counted over its repeats."""

    name: str  # e.g. "decoder.block.attn.q"
    group: str
    shapes: tuple[tuple[int, ...], ...]  # weight shape, then bias shape when present
    # the Weights path of each of those arrays, e.g. ("decoder.blocks.*.attn.wq",
    # "decoder.blocks.*.attn.bq"); `*`: every block (and expert), see tfcli.spec.counts.EVERY
    paths: tuple[str, ...]
    per_block: int  # parameters in one block (block rows) or in the whole row otherwise
    blocks: int  # how many blocks repeat it (1 outside blocks; those of its kind, see `kind`)
    count: int
    share: float  # of the total
    note: str = ""
    # in a stack mixing dense and MoE blocks, an FFN row's kind ("dense" or "MoE"): it repeats
    # over those blocks only; "" otherwise
    kind: str = ""
    # a buffer (DeepSeek-V3's router_bias): values stored, none of them parameters (count 0)
    buffer_values: int = 0

    @property
    def stack(self) -> str:
        return self.name.split(".block.")[0] if ".block." in self.name else ""


@dataclass(frozen=True)
class KVCacheFigures:
    context: int
    batch: int
    dtype: str
    per_token_bytes: int
    total_bytes: int  # every token of the context cached, as tfcli's engine does
    # A sliding-window model shorter than the context needs only the last `window` tokens in a
    # rolling buffer (transformers' sliding-window cache layers): its bytes, else None.
    # With a layer_pattern only the local layers hold the window, the global ones every token.
    window: int | None = None
    window_bytes: int | None = None
    local_layers: int = 0  # decoder layers with the window (all of them without a pattern)
    layers: int = 0  # decoder layers with a self-attention cache
    per_layer_token_bytes: int = 0  # one layer, one token of one sequence
    # Multi-head latent attention (DeepSeek MLA) caches the latent and the shared RoPE key
    # (kv_lora_rank + qk_rope_head_dim values per layer-token); beside it, what full multi-head
    # K/V would need (n_heads x (qk_nope + qk_rope + v_head_dim)), its total, and the ratio.
    latent: bool = False
    expanded_per_layer_token_bytes: int | None = None
    expanded_total_bytes: int | None = None
    expanded_ratio: float | None = None  # expanded / latent bytes


class BlockSubtotal(NamedTuple):
    """One stack's block rows summed: parameters per block (None when dense and MoE blocks
    differ), the stack's blocks, and their exact total."""

    per_block: int | None
    n_layers: int
    total: int


@dataclass(frozen=True)
class ParamsReport:
    spec_name: str
    family: str
    rows: list[ComponentRow]
    block_subtotals: dict[str, BlockSubtotal]  # stack -> its blocks' parameters
    total: int
    non_embedding: int
    active: int
    attention: int
    ffn: int
    estimate_12ld2: int
    memory_bytes: dict[str, int]
    kv_cache: KVCacheFigures
    notes: list[str] = field(default_factory=list)
    # the source model's task head that tfcli does not build (Spec.body_only): every count
    # here is of the body alone, and each format says so
    body_only: str | None = None
    # what the SPEC argument's checkpoint file stores (a GGUF's tensors), when it is one
    stored: StoredWeights | None = None
    active_detail: str = "dense: all"  # what `active` counts, in words

    @property
    def ffn_share_of_blocks(self) -> float:
        return self.ffn / (self.ffn + self.attention) if self.ffn + self.attention else 0.0

    @property
    def estimate_reference(self) -> int:
        """What 12·L·d² estimates: the blocks' parameters, i.e. the non-embedding count (of one
        token's active experts for MoE: the formula has one dense 4d FFN per block)."""
        return self.non_embedding - (self.total - self.active)

    @property
    def estimate_compared_with(self) -> str:
        return "active non-embedding" if self.active != self.total else "non-embedding"

    @property
    def estimate_rel_error(self) -> float:
        """(estimate - exact) / exact, against the like-for-like exact count above."""
        reference = self.estimate_reference
        return (self.estimate_12ld2 - reference) / reference if reference else 0.0

    @property
    def estimate_leaves_out(self) -> str:
        """What the formula does not model for this architecture beyond the embeddings, in
        words ('' when nothing)."""
        parts = []
        if self.active != self.total:
            parts.append("the routed experts: it assumes one dense 4d FFN per block")
        if self.family == "encoder-decoder":
            parts.append("decoder cross-attention (4d² per decoder block)")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec_name,
            "family": self.family,
            "body_only": self.body_only,
            "total": self.total,
            "non_embedding": self.non_embedding,
            "active": self.active,
            "active_detail": self.active_detail,
            "attention": self.attention,
            "ffn": self.ffn,
            "ffn_share_of_attention_plus_ffn": self.ffn_share_of_blocks,
            "estimate_12ld2": self.estimate_12ld2,
            # compared like with like: the estimate is of the blocks, not of the embeddings
            "estimate_compared_with": self.estimate_compared_with.replace(" ", "_").replace("-", "_"),
            "estimate_reference": self.estimate_reference,
            "estimate_rel_error": self.estimate_rel_error,
            "estimate_leaves_out": self.estimate_leaves_out,
            "components": [_row_dict(r) for r in self.rows],
            "block_subtotals": {k: v._asdict() for k, v in self.block_subtotals.items()},
            "memory_bytes": self.memory_bytes,
            "kv_cache_bytes": self.kv_cache.total_bytes,
            "kv_cache": asdict(self.kv_cache),
            "notes": self.notes,
            "stored_weights": self.stored.to_dict() if self.stored else None,
        }

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        header = ["name", "group", "shape", "per_block", "blocks", "count", "share", "note"]
        rows: list[list[object]] = [
            [r.name, r.group, shapes_text(r.shapes), r.per_block, r.blocks, r.count,
             f"{r.share:.6f}", r.note]
            for r in self.rows
        ]
        total, note = ("total", "") if self.body_only is None else \
            ("total (body only)", f"body only: {self.body_only}")
        rows.append([total, "", "", "", "", self.total, "1.000000", note])
        return header, rows

    def markdown_tables(self) -> list[tuple[str, list[str], list[list[object]]]]:
        """`--format markdown`: the CSV component rows, then the summary the table view shows
        under them (exact figures: parameters, bytes)."""
        return [(f"{self.spec_name} — parameters per component", *self.csv_rows()),
                ("summary", ["what", "value"], self.summary_rows())]

    def summary_rows(self) -> list[list[object]]:
        kv = self.kv_cache
        rows: list[list[object]] = [
            ["total", self.total], ["non-embedding", self.non_embedding],
            ["active per token", self.active], ["attention", self.attention],
            ["FFN", self.ffn], ["estimate 12·L·d²", self.estimate_12ld2]]
        rows += [[f"weights in {dtype} (bytes)", size] for dtype, size in self.memory_bytes.items()]
        rows.append([f"KV cache per token ({kv.dtype}, bytes)", kv.per_token_bytes])
        rows.append([f"KV cache, {kv.context} tokens × batch {kv.batch} (bytes)", kv.total_bytes])
        return rows


def _row_dict(row: ComponentRow) -> dict[str, Any]:
    return {
        "name": row.name, "count": row.count, "group": row.group,
        "shapes": [list(s) for s in row.shapes], "paths": list(row.paths),
        "per_block": row.per_block,
        "blocks": row.blocks, "share": row.share, "note": row.note,
        "kind": row.kind, "buffer_values": row.buffer_values,
    }


def _base_name(name: str) -> str:
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name


def _stack_layers(spec: Spec, name: str) -> int:
    """The blocks a stack's block rows count: every layer's, or one (shared_layers: every
    layer runs the same arrays, held and counted once)."""
    if ".block." not in name or spec.shared_layers:
        return 1
    return spec.encoder_layers if name.startswith("encoder") else spec.decoder_layers


def _row_blocks(spec: Spec, name: str, path: str) -> tuple[int, str]:
    """The blocks a block row repeats over, and its kind when that is not all of the stack's
    (an FFN array of a stack mixing dense and MoE blocks; attn_norm without block 0's,
    first_attn_norm false)."""
    layers = _stack_layers(spec, name)
    if ".block." not in name or not (spec.mixed_ffn_layers or not spec.first_attn_norm):
        return layers, ""
    blocks = len(block_indices(spec, path))
    if blocks == layers or not spec.mixed_ffn_layers:
        return blocks, ""
    return blocks, "MoE" if spec.moe_layer(block_indices(spec, path)[0]) else "dense"


def merge_rows(spec: Spec, comps: list[Component], total: int) -> list[ComponentRow]:
    """Merge weight/bias/scale arrays of the same projection into one row, keeping order; a
    buffer (router_bias) keeps a row of its own, so the shapes beside a count are its own, as
    does the bias of a tied array (a masked-LM decoder's: the tied row shows 0)."""
    merged: dict[str, list[Component]] = {}
    for c in comps:
        base = _base_name(c.name)
        alone = c.buffer or (base in merged and merged[base][0].tied)
        merged.setdefault(c.name if alone else base, []).append(c)
    rows = []
    for name, parts in merged.items():
        count = sum(p.count for p in parts)
        blocks, kind = _row_blocks(spec, name, parts[0].path)
        buffered = sum(math.prod(p.shape) * p.repeat for p in parts if p.buffer)
        rows.append(ComponentRow(
            name=name, group=parts[0].group, shapes=tuple(p.shape for p in parts),
            paths=tuple(p.path for p in parts),
            per_block=count // blocks, blocks=blocks, count=count,
            share=count / total if total else 0.0, note=parts[0].note, kind=kind,
            buffer_values=buffered,
        ))
    return rows


def _block_subtotals(spec: Spec, rows: list[ComponentRow]) -> dict[str, BlockSubtotal]:
    """Per stack: the block rows' sum; per block only when every block has the same rows (not
    when a row skips a block: first_attn_norm false)."""
    out: dict[str, BlockSubtotal] = {}
    for r in rows:
        if r.stack:
            per, _, total = out.get(r.stack, BlockSubtotal(0, _stack_layers(spec, r.name), 0))
            uniform = per is not None and not r.kind and r.blocks == _stack_layers(spec, r.name)
            out[r.stack] = BlockSubtotal(per + r.per_block if uniform else None,  # type: ignore[operator]
                                         _stack_layers(spec, r.name), total + r.count)
    return out


def _memory(total: int) -> dict[str, int]:
    # ceil: an odd count of int4 weights still needs its last half-filled byte
    return {dt: math.ceil(total * DTYPE_BYTES[dt]) for dt in WEIGHT_DTYPES}


def _notes(spec: Spec, context: int) -> list[str]:
    notes = []
    if spec.shared_layers:
        notes.append(f"shared_layers: one block's arrays run by all {spec.encoder_layers:,} "
                     "encoder layers, held and counted once (the block rows above)")
    if spec.description:  # what the spec says of its source, import-config's reader notes
        # included: what the counts leave out (DeepSeek-V3's multi-token-prediction layer)
        notes.append(f"spec: {spec.description}")
    if spec.body_only:
        notes.append(f"body only: {spec.body_only}; its parameters are not in any count")
    if context > spec.max_seq_len:
        notes.append(f"KV cache sized for {context:,} tokens, beyond {spec.name}'s max_seq_len "
                     f"{spec.max_seq_len:,}")
    if spec.lm_head and spec.tie_embeddings:
        notes.append("output head tied to the token embedding: counted once")
    if spec.n_experts:
        notes.append(f"MoE: {spec.experts_per_token} of {spec.n_experts} experts active per token"
                     + _moe_note(spec))
    if not spec.has_decoder:
        notes.append("encoder-only: no KV cache during inference")
    return notes


def _estimate_note(report: ParamsReport) -> list[str]:
    leaves_out = report.estimate_leaves_out
    return [f"12·L·d² (attention 4d² + a 4d FFN 8d² per block) leaves out {leaves_out}"] if leaves_out else []


def build_params_report(spec: Spec, *, context: int | None = None, batch: int = 1,
                        kv_dtype: str = "float32",
                        stored: StoredWeights | None = None) -> ParamsReport:
    """Every figure `tfcli params` shows, computed analytically (no weights allocated)."""
    comps = components(spec)
    total = sum(c.count for c in comps)
    rows = merge_rows(spec, comps, total)
    embedding = sum(c.count for c in comps if c.group in (EMBEDDING, HEAD))
    for option, value in (("--seq-len", context), ("--batch", batch)):  # as asked for
        if value is not None and not 1 <= value <= MAX_COUNT:  # past any real run
            raise BadInputError(f"{option} must be between 1 and 2^40 ({MAX_COUNT:,}), got "
                                f"{shown(value)}")
    context = spec.max_seq_len if context is None else context
    if spec.positions == "learned" and context > spec.max_seq_len:  # as trace / perf / memory
        raise BadInputError(f"--seq-len {context} exceeds max_seq_len {spec.max_seq_len} of "
                            f"{spec.name} (learned positions have no row past it)")
    source_len = context if spec.family == "encoder-decoder" else 0
    window = spec.sliding_window if spec.family == "decoder" else None  # an encoder caches none
    if window is not None and window >= context:  # the window hides no cached token
        window = None
    kv = KVCacheFigures(
        context, batch, kv_dtype, int(kv_cache_bytes_per_token(spec, kv_dtype)),
        kv_cache_bytes(spec, context, batch, kv_dtype, source_len=source_len), window,
        kv_cache_window_bytes(spec, context, batch, kv_dtype),
        spec.local_layers, spec.decoder_layers,
        math.ceil(kv_values_per_layer_token(spec) * DTYPE_BYTES[kv_dtype]),
        **_expanded_kv(spec, context, batch, kv_dtype),
    )
    report = ParamsReport(
        spec_name=spec.name, family=spec.family, rows=rows,
        block_subtotals=_block_subtotals(spec, rows), total=total,
        non_embedding=total - embedding, active=total - inactive_expert_parameters(spec),
        attention=sum(c.count for c in comps if c.group == ATTENTION),
        ffn=sum(c.count for c in comps if c.group == FFN),
        estimate_12ld2=12 * spec.total_layers * spec.d_model**2,
        memory_bytes=_memory(total), kv_cache=kv, notes=_notes(spec, context),
        body_only=spec.body_only, stored=stored, active_detail=_active_detail(spec),
    )
    return replace(report, notes=report.notes + _buffer_notes(rows) + _estimate_note(report))


def _buffer_notes(rows: list[ComponentRow]) -> list[str]:
    """Each buffer row's note (router_bias: stored, shown, in no count) with its values."""
    return [f"{r.name}: {r.note}; {r.buffer_values:,} values, in no count"
            for r in rows if r.buffer_values]


def _active_detail(spec: Spec) -> str:
    """What the active-per-token count holds: for MoE, k routed experts of each MoE block and
    everything else (inactive_expert_parameters subtracts the other routed experts only)."""
    if not spec.n_experts:
        return "dense: all"
    shared = ", the shared experts" if spec.n_shared_experts else ""
    dense = ", the dense blocks" if spec.mixed_ffn_layers else ""
    return (f"MoE: {spec.experts_per_token} of {spec.n_experts} routed experts per MoE block"
            f"{shared}, the router{dense}, attention and embeddings")


def _expanded_kv(spec: Spec, context: int, batch: int, kv_dtype: str) -> dict[str, Any]:
    """Under MLA, what full multi-head K/V would cache, beside the latent (KVCacheFigures)."""
    if not spec.latent_attention:
        return {}
    per_layer_token = expanded_kv_values_per_layer_token(spec) * DTYPE_BYTES[kv_dtype]
    total = per_layer_token * spec.decoder_layers * context * batch
    ratio = expanded_kv_values_per_layer_token(spec) / kv_values_per_layer_token(spec)
    return {"latent": True, "expanded_per_layer_token_bytes": math.ceil(per_layer_token),
            "expanded_total_bytes": math.ceil(total), "expanded_ratio": ratio}


def _moe_note(spec: Spec) -> str:
    """Shared experts (always active) and dense blocks of an MoE stack, when there are any."""
    shared = (f", plus {spec.n_shared_experts} shared expert(s) on every token"
              if spec.n_shared_experts else "")
    layers = spec.decoder_layers
    mixed = (f"; {spec.moe_layer_count(layers):,} of {layers:,} blocks MoE, the others dense"
             if spec.mixed_ffn_layers else "")
    return shared + mixed
