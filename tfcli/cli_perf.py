"""`tfcli gpus` and `tfcli perf`: the accelerator catalog and the roofline estimate.
Plain functions on the shared option types, registered in tfcli/cli.py with `command`."""

from __future__ import annotations

from typing import Annotated

import typer

from tfcli.cli_options import FormatOpt
from tfcli.render.output import OutputFormat, emit


def gpus_cmd(
    measure_cpu: Annotated[bool, typer.Option("--measure-cpu", help="Also measure this machine's CPU (float32 GEMM peak, memory bandwidth; about 3 s): the `cpu` entry of --gpu.")] = False,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """The accelerators --gpu takes: memory, dense peak TFLOP/s per dtype, memory bandwidth, and
    the spec sheet each figure comes from.

    Example: tfcli gpus --format csv
    """
    from tfcli.analysis.gpus import build_gpu_list
    from tfcli.render.gpus import render_gpus

    gpus = build_gpu_list(measure_cpu=measure_cpu)
    emit(gpus, fmt, lambda: render_gpus(gpus))
