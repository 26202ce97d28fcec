"""Rich rendering of `tfcli gpus`: one row per accelerator, the sources under the table."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from tfcli.analysis.gpus.catalog import Accelerator, GpuList
from tfcli.render.safe import plain
from tfcli.render.tables import FitTable
from tfcli.render.units import human_bytes


def _tflops(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


def _row(entry: Accelerator) -> list[str]:
    return [entry.name, entry.vendor, human_bytes(entry.memory_bytes), _tflops(entry.bf16_tflops),
            _tflops(entry.fp16_tflops), _tflops(entry.fp8_tflops), _tflops(entry.fp32_tflops),
            f"{entry.bandwidth / 1e9:,.0f}", ", ".join(entry.aliases)]


def _sources(gpus: GpuList) -> Text:
    """One line per source (the A100s share a datasheet), then each entry's note."""
    names: dict[str, list[str]] = {}
    for e in gpus.entries:
        names.setdefault(e.source, []).append(e.name)
    lines = [f"{', '.join(n)}: {source}" for source, n in names.items()]
    lines += [f"{e.name}: {e.note}" for e in gpus.entries if e.note]
    return plain("sources:\n" + "\n".join(lines), style="dim", keep="\n")


def render_gpus(gpus: GpuList) -> RenderableType:
    table = FitTable(title="accelerators — dense peak TFLOP/s (not 2:4 sparse), memory, bandwidth",
                     caption="`--gpu cpu` measures this machine (tfcli gpus --measure-cpu shows it)")
    table.add_column("name")
    table.add_column("vendor", drop=2)
    table.add_column("memory", justify="right", number=True)
    for head in ("bf16", "fp16", "fp8", "fp32"):
        table.add_column(head, justify="right", number=True, drop=1 if head == "fp16" else None)
    table.add_column("GB/s", justify="right", number=True)
    table.add_column("aliases", drop=3)
    for entry in gpus.entries:
        table.add_row(*_row(entry))
    return Group(table, _sources(gpus))
