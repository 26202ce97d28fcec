"""Rich rendering of `tfcli memory`: the breakdown, its total, and the GPU verdict."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from tfcli.analysis.memory.fit import FitSearch, GpuFit, MemoryReport
from tfcli.analysis.memory.plan import MemoryPlan
from tfcli.render.safe import plain
from tfcli.render.tables import FitTable
from tfcli.render.units import human_bytes, percent


def _breakdown(plan: MemoryPlan) -> FitTable:
    scope = "per GPU, " if plan.mode == "training" else ""
    table = FitTable(title=f"{plan.spec_name} — {plan.mode} memory ({scope}batch {plan.batch}, "
                           f"seq_len {plan.seq_len:,})")
    table.add_column("part")
    table.add_column("bytes", justify="right", number=True)
    table.add_column("share", justify="right", number=True, drop=1)
    table.add_column("how", drop=2)
    total = plan.total or 1
    for p in plan.parts:
        table.add_row(p.name, human_bytes(p.bytes), percent(p.bytes / total), plain(p.note))
    table.add_section()
    table.add_row(Text("total", style="bold"), Text(human_bytes(plan.total), style="bold"),
                  "100.0%", "")
    return table


def _verdict(fit: GpuFit) -> Text:
    word = Text("fits", style="green bold") if fit.fits else Text("does not fit", style="red bold")
    room = fit.usable_bytes - fit.need_bytes
    spare = f"{human_bytes(room)} spare" if room >= 0 else f"{human_bytes(-room)} over"
    return Text.assemble(f"{fit.gpu} ({human_bytes(fit.memory_bytes)}, of which "
                         f"{human_bytes(fit.usable_bytes)} usable after a "
                         f"{human_bytes(fit.reserve_bytes)} reserve for {fit.reserve_for}): ",
                         word, f" — {spare}")


def _search(search: FitSearch, plan: MemoryPlan) -> Text:
    def say(value: int | None, capped: bool, bound: str) -> str:
        if value is None:
            return "none (not even 1)"
        return f"{value:,}" + (f" (the {bound}; more may fit)" if capped else "")

    return Text(f"largest batch at seq_len {plan.seq_len:,}: "
                f"{say(search.max_batch, search.batch_capped, 'search bound')}; longest "
                f"seq_len at batch {plan.batch}: "
                f"{say(search.max_seq_len, search.seq_capped, 'spec max_seq_len')}")


def render_memory(report: MemoryReport) -> RenderableType:
    parts: list[RenderableType] = [_breakdown(report.plan)]
    if report.fit is not None:
        parts.append(_verdict(report.fit))
    if report.search is not None:
        parts.append(_search(report.search, report.plan))
    parts += [plain(f"note: {n}", style="dim") for n in report.plan.notes]
    return Group(*parts)
