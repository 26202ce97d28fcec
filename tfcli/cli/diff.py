"""`tfcli diff A B`: registered in tfcli/cli/app.py with `command("diff")(diff_cmd)`."""

from __future__ import annotations

from typing import Annotated

import typer

from tfcli.api import model as api
from tfcli.cli.options import FormatOpt
from tfcli.core.dtypes import KvDtype
from tfcli.render.output import OutputFormat, emit

_SPEC_HELP = "A spec file, a bundled spec name (see `tfcli specs`), a model directory or a Hub id."
SpecA = Annotated[str, typer.Argument(metavar="A", help=_SPEC_HELP, show_default=False)]
SpecB = Annotated[str, typer.Argument(metavar="B", help=_SPEC_HELP + " Compared with A.",
                                      show_default=False)]


def diff_cmd(
    spec_a: SpecA,
    spec_b: SpecB,
    seq_len: Annotated[int | None, typer.Option("--seq-len", min=1, help="Tokens per sequence, for FLOPs per token and the KV cache's context (default: the shorter max_seq_len).")] = None,
    batch: Annotated[int, typer.Option(min=1, help="KV-cache batch size.")] = 1,
    kv_dtype: Annotated[KvDtype, typer.Option(help="KV-cache dtype.")] = KvDtype.float32,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Two specs side by side: architecture, parameters per component, totals, FLOPs per token,
    KV cache, weights memory and the inference plan of tfcli memory; with B − A and B ÷ A.

    Example: tfcli diff llama-2-7b mistral-7b
    """
    from tfcli.render.diff import render_diff

    diff = api.diff(spec_a, spec_b, seq_len=seq_len, batch=batch, kv_dtype=kv_dtype.value)
    emit(diff, fmt, lambda: render_diff(diff))
