"""`tfcli diff A B`: registered in tfcli/cli/app.py with `command("diff")(diff_cmd)`."""

from __future__ import annotations

from typing import Annotated

import typer

from tfcli.cli.options import FormatOpt, load_spec_arg
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
    from tfcli.analysis.diff import build_spec_diff
    from tfcli.render.diff import render_diff

    a, b = load_spec_arg(spec_a), load_spec_arg(spec_b)
    diff = build_spec_diff(a, b, seq_len=seq_len, batch=batch, kv_dtype=kv_dtype.value)
    emit(diff, fmt, lambda: render_diff(diff))
