"""Rich rendering of the `tfcli params` report."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from tfcli.analysis.params_report import ComponentRow, ParamsReport
from tfcli.checkpoints.stored import StoredWeights
from tfcli.render.safe import plain
from tfcli.render.tables import FitTable
from tfcli.render.units import human_bytes, human_count, percent
from tfcli.core.shapes import TABLE_TIMES, shapes_text


def _component_table(report: ParamsReport) -> FitTable:
    scope = " (body only)" if report.body_only else ""
    table = FitTable(title=f"{report.spec_name} — parameters per component{scope}")
    table.add_column("component")
    table.add_column("shape", drop=3)  # wraps at " + "; first to leave a narrow terminal
    table.add_column("per block", justify="right", number=True, drop=2)
    table.add_column("parameters", justify="right", number=True)
    table.add_column("share", justify="right", number=True, drop=1)
    current_stack = None
    for row in report.rows:
        if row.stack != current_stack and current_stack in report.block_subtotals:
            _add_subtotal(table, report, current_stack)
        if row.stack and row.stack != current_stack:
            blocks = report.block_subtotals[row.stack].n_layers  # the stack's, not the row's
            table.add_row(Text(f"{row.stack} block (× {blocks})", style="bold cyan"))
        current_stack = row.stack
        _add_component(table, row)
    if current_stack in report.block_subtotals:
        _add_subtotal(table, report, current_stack)
    table.add_section()
    table.add_row(Text(f"total{scope}", style="bold"), "", "", Text(f"{report.total:,}", style="bold"),
                  "100.0%")
    return table


def _add_component(table: FitTable, row: ComponentRow) -> None:
    name = row.name.split(".block.")[-1] if row.stack else row.name
    indent = "  " if row.stack else ""
    if row.note.startswith("tied"):
        table.add_row(name, Text("tied", style="dim"), "", "0", "")
        return
    # a buffer (its note is under the tables); an FFN row of a mixed dense / MoE stack
    tags = ["buffer"] if row.buffer_values else []
    tags += [f"{row.kind} × {row.blocks}"] if row.kind else []
    if tags:
        name = f"{name} ({', '.join(tags)})"
    per_block = f"{row.per_block:,}" if row.stack else ""
    shape = shapes_text(row.shapes, TABLE_TIMES, grouped=True)
    share = "" if row.buffer_values else percent(row.share)
    table.add_row(indent + name, shape, per_block, f"{row.count:,}", share)


def _add_subtotal(table: FitTable, report: ParamsReport, stack: str | None) -> None:
    per, n, total = report.block_subtotals[stack or ""]
    label = Text(f"  subtotal × {n}", style="italic")
    per_text = "" if per is None else f"{per:,}"  # None: dense and MoE blocks differ
    table.add_row(label, "", per_text, Text(f"{total:,}", style="bold"),
                  percent(total / report.total))


CLASSIC_FFN_SHARE, NEAR = 2 / 3, 0.01  # an MLP of d_ff = 4·d_model beside 4 d×d projections


def _ffn_note(report: ParamsReport) -> str:
    """Why ~2/3, where the share is ~2/3: the FFN's 8·d² of a block's 12·d² (the estimate
    row's 12·L·d²); elsewhere (MoE, GQA, another d_ff) the figure needs no such note."""
    if abs(report.ffn_share_of_blocks - CLASSIC_FFN_SHARE) > NEAR:
        return ""
    return " (8·d² of 12·d²: the d_ff = 4·d_model rule)"


def _summary_table(report: ParamsReport) -> FitTable:
    table = FitTable(title="summary", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right", number=True)
    table.add_column("detail")
    scope = " (body only)" if report.body_only else ""
    table.add_row(f"total{scope}", f"{report.total:,}", human_count(report.total))
    table.add_row("non-embedding", f"{report.non_embedding:,}",
                  "excludes token / position / type embeddings and the output head")
    table.add_row("active per token", f"{report.active:,}", report.active_detail)
    blocks = report.attention + report.ffn
    table.add_row("attention", f"{report.attention:,}",
                  f"{percent(report.attention / blocks if blocks else 0)} of attention + FFN")
    table.add_row("FFN", f"{report.ffn:,}",
                  f"{percent(report.ffn_share_of_blocks)} of attention + FFN{_ffn_note(report)}")
    table.add_row("estimate 12·L·d²", f"{report.estimate_12ld2:,}",
                  f"{report.estimate_rel_error:+.2%} vs exact {report.estimate_compared_with} "
                  f"({report.estimate_reference:,})")
    for dtype, size in report.memory_bytes.items():
        table.add_row(f"weights in {dtype}", human_bytes(size), f"{size:,} bytes")
    kv = report.kv_cache
    cross = " (+ cross-attention K/V over as many source tokens)" if report.family == "encoder-decoder" else ""
    table.add_row(f"KV cache ({kv.dtype})", human_bytes(kv.total_bytes),
                  f"{human_bytes(kv.per_token_bytes)}/token × {kv.context:,} tokens × batch {kv.batch}{cross}")
    if kv.latent:
        _add_latent_rows(table, report)
    if kv.window_bytes is not None and kv.local_layers < kv.layers:  # local and global layers
        table.add_row("KV cache, windowed local layers", human_bytes(kv.window_bytes),
                      f"{kv.local_layers} local layers × the last {kv.window:,} tokens + "
                      f"{kv.layers - kv.local_layers} global × {kv.context:,}, "
                      f"{human_bytes(kv.per_token_bytes / kv.layers)}/token/layer × batch "
                      f"{kv.batch} (tfcli's engine keeps every token)")
    elif kv.window_bytes is not None:
        table.add_row("KV cache, rolling window", human_bytes(kv.window_bytes),
                      f"{human_bytes(kv.per_token_bytes)}/token × the last {kv.window:,} tokens × "
                      f"batch {kv.batch}: the {kv.window:,}-token sliding window needs no more "
                      "(tfcli's engine keeps every token)")
    return table


def _add_latent_rows(table: FitTable, report: ParamsReport) -> None:
    """MLA: the latent each layer caches per token, and what full multi-head K/V would need."""
    kv = report.kv_cache
    table.add_row("KV cache, MLA latent", f"{kv.per_layer_token_bytes:,} B",
                  f"per token per layer (the latent and the shared RoPE key), × {kv.layers} "
                  "layers in the KV cache above")
    table.add_row("full multi-head K/V", human_bytes(kv.expanded_total_bytes or 0),
                  f"would be {kv.expanded_per_layer_token_bytes or 0:,} B per token per layer "
                  f"(every head's K and V): {kv.expanded_ratio or 0:.1f}× the latent")


def render_params(report: ParamsReport) -> RenderableType:
    parts: list[RenderableType] = [_component_table(report), _summary_table(report)]
    if report.stored is not None:
        parts.append(_stored_table(report.stored))
        parts.append(plain(f"checkpoint vs spec: {report.stored.verdict}"))
    parts += [plain(f"note: {note}", style="dim") for note in report.notes]
    return Group(*parts)


def _stored_table(stored: StoredWeights) -> FitTable:
    """The checkpoint's own tensors by role and storage type (GGUF quantisation types)."""
    table = FitTable(title=f"stored in {stored.source} ({stored.format})")
    table.add_column("tensors")
    table.add_column("type")
    table.add_column("count", justify="right", number=True, drop=2)
    table.add_column("parameters", justify="right", number=True)
    table.add_column("bytes", justify="right", number=True)
    table.add_column("bits/weight", justify="right", number=True, drop=1)
    for g in stored.groups:
        table.add_row(g.role, g.dtype, f"{g.tensors:,}", f"{g.parameters:,}",
                      human_bytes(g.n_bytes), f"{g.bits_per_weight:.2f}")
    table.add_section()
    bits = 8 * stored.n_bytes / stored.parameters if stored.parameters else 0.0
    table.add_row(Text("total", style="bold"), "", "", Text(f"{stored.parameters:,}", style="bold"),
                  human_bytes(stored.n_bytes), f"{bits:.2f}")
    return table
