"""Rich rendering of `tfcli perf`: one table of figures, each with how it was computed."""

from __future__ import annotations

from rich.console import Group, RenderableType

from tfcli.analysis.perf.result import Decode, PerfEstimate, Prefill, Training
from tfcli.render.safe import plain
from tfcli.render.tables import FitTable
from tfcli.render.units import human_bytes, human_flops
from tfcli.render.units import human_rate as _rate  # shared with the sweep table
from tfcli.render.units import human_seconds as _seconds

Row = tuple[str, str, str]  # figure, value, how


def _prefill_rows(e: PerfEstimate, p: Prefill) -> list[Row]:
    peak = f"{e.accelerator.peak_flops(e.dtype) / 1e12:.4g} TFLOP/s"
    return [
        ("prefill FLOPs", human_flops(p.flops), f"trace of {p.tokens:,} tokens"),
        ("  compute-bound", _seconds(p.compute_seconds), f"FLOPs / ({peak} x MFU {e.mfu:g})"),
        ("  per-op roofline", _seconds(p.roofline_seconds),
         f"sum of max(FLOPs / peak, bytes / bandwidth){_plus_op_cost(e)}, {p.attention} "
         f"attention; {p.memory_bound_ops} of {p.ops} ops memory-bound; "
         f"{human_bytes(p.bytes)} moved"),
        ("time to first token", _seconds(e.ttft_seconds), "the slower of the two"),
    ]


def _plus_op_cost(e: PerfEstimate) -> str:
    """How the accelerator's fixed cost per op enters a sum ('' for the catalog's 0)."""
    cost = e.accelerator.op_seconds
    return f" + {cost * 1e6:.3g} us per op" if cost > 0 else ""


def _decode_rows(e: PerfEstimate, d: Decode) -> list[Row]:
    rows = [
        ("decode bytes / step", human_bytes(d.weight_bytes + d.kv_bytes),
         f"weights {human_bytes(d.weight_bytes)} + KV cache {human_bytes(d.kv_bytes)} "
         f"({d.context:,} tokens x batch {d.batch})"),
        ("  memory-bound step", _seconds(d.memory_seconds), "bytes / bandwidth"),
        ("  compute-bound step", _seconds(d.compute_seconds),
         f"{human_flops(d.flops)} / peak"),
    ]
    if d.op_overhead_seconds > 0:
        rows.append(("  fixed cost of its ops", _seconds(d.op_overhead_seconds),
                     f"ops x{_plus_op_cost(e).removeprefix(' +')}"))
    step = "the slower step" + (" + the ops' fixed cost" if d.op_overhead_seconds > 0 else "")
    rows.append(("decode tokens/s", _rate(d.tokens_per_s),
                 f"batch / ({step}) ({_rate(d.tokens_per_s / d.batch)} per sequence)"))
    return rows


def _training_rows(e: PerfEstimate, t: Training) -> list[Row]:
    rows = [
        ("training FLOPs / token", human_flops(t.flops_per_token),
         f"forward {human_flops(t.forward_flops_per_token)} x {t.multiplier}"
         f"{' (full recomputation)' if t.multiplier == 4 else ''}"),
        ("  6N", human_flops(t.six_n),
         f"N = {t.matmul_params:,} parameters in matmuls; exact / 6N = "
         f"{t.flops_per_token / t.six_n:.3f}"),
        ("step time", _seconds(t.step_seconds),
         f"{t.step_tokens // t.gpus:,} tokens per GPU at MFU {e.mfu:g}"),
        ("training tokens/s", _rate(t.tokens_per_s), f"{t.gpus} GPU(s), data parallel"),
    ]
    if t.gpu_hours is not None and t.tokens is not None:
        rows += [("GPU-hours", _rate(t.gpu_hours, 3), f"for {t.tokens:.3g} tokens"),
                 ("  wall-clock", _seconds(t.gpu_hours * 3600 / t.gpus), f"over {t.gpus} GPU(s)")]
    return rows


def _title(e: PerfEstimate) -> str:
    g = e.accelerator
    return (f"{e.spec_name} on {g.name} — batch {e.batch}, seq_len {e.seq_len}, {e.dtype} "
            f"(KV {e.kv_dtype}); peak {g.peak_flops(e.dtype) / 1e12:.4g} TFLOP/s, "
            f"{g.bandwidth / 1e9:,.4g} GB/s")


def render_perf(e: PerfEstimate) -> RenderableType:
    table = FitTable(title=_title(e), caption=f"FLOPs counted: {e.convention.describe()}")
    table.add_column("figure")
    table.add_column("value", justify="right", number=True)
    table.add_column("how", drop=1)
    rows = _prefill_rows(e, e.prefill)
    rows += _decode_rows(e, e.decode) if e.decode is not None else []
    rows += _training_rows(e, e.training) if e.training is not None else []
    for row in rows:
        table.add_row(*row)
    notes = [plain(f"note: {n}", style="dim") for n in e.notes]
    return Group(table, *notes)
