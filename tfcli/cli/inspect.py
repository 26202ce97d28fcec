"""`tfcli params`, `specs`, `validate`, `schema`, `import-config` and `trace`: what a spec
is, counted and traced without running it. Plain functions on the shared option types,
registered in tfcli/cli/app.py's COMMANDS."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tfcli.api import model as api
from tfcli.cli.options import FormatOpt, LayersOpt, SpecArg, old_name, renamed
from tfcli.cli.perf import CausalHalfOpt, MacsOpt, MatmulsOnlyOpt, WindowOpt, flop_convention
from tfcli.core.dtypes import ActivationDtype, KvDtype
from tfcli.core.errors import EXIT_BAD_INPUT
from tfcli.render.output import OutputFormat, emit, emit_text, stderr_console


def params_cmd(
    spec: SpecArg,
    seq_len: Annotated[int | None, typer.Option("--seq-len", min=1, help="Tokens the KV cache holds per sequence (default: the spec's max_seq_len).")] = None,
    batch: Annotated[int, typer.Option(min=1, help="KV-cache batch size.")] = 1,
    kv_dtype: Annotated[KvDtype, typer.Option(help="KV-cache dtype.")] = "float32",
    layers: LayersOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    context: Annotated[int | None, old_name("--context", "--seq-len", min=1)] = None,
) -> None:
    """Parameter count per component, exact to the parameter; memory; KV cache.

    Example: tfcli params llama-3-8b --seq-len 8192 --batch 4 --kv-dtype bfloat16
    """
    from tfcli.render.params import render_params

    seq_len = renamed("--context", "--seq-len", context, seq_len)
    report = api.load(spec, layers=layers).params(seq_len=seq_len, batch=batch,
                                                  kv_dtype=kv_dtype.value)
    emit(report, fmt, lambda: render_params(report))


def specs_cmd(
    name: Annotated[str | None, typer.Argument(metavar="NAME", help="A bundled spec: print its YAML as shipped, to start your own from (tfcli specs gpt2 > my.yaml).", show_default=False)] = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """The bundled specs, one line each: family, layers, d_model, total parameters; with NAME,
    that spec's YAML. lesson-tiny is a 4-block decoder of d_model 16 (16,704 parameters): every
    command runs on it in milliseconds.

    Example: tfcli specs llama-3-8b > my-llama.yaml
    """
    from tfcli.render.catalog import render_catalog

    if name is not None:
        from tfcli.spec.load import bundled_spec_text

        emit_text(bundled_spec_text(name))
        return
    catalog = api.specs()
    emit(catalog, fmt, lambda: render_catalog(catalog))


def validate_cmd(
    specs: Annotated[list[str], typer.Argument(metavar="SPEC", help="Spec files or names.", show_default=False)],
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Check spec files: OK or the error for each; exit 2 if any is bad.

    Example: tfcli validate specs/*.yaml
    """
    from tfcli.render.catalog import render_validation

    report = api.validate(specs)
    emit(report, fmt, lambda: render_validation(report))
    if not report.ok:
        raise typer.Exit(EXIT_BAD_INPUT)


def schema_cmd() -> None:
    """Print the JSON Schema of the spec format, for editors that validate YAML as you type.

    Example: tfcli schema > tfcli-spec.schema.json
    """
    import json

    from tfcli.spec.model import spec_json_schema

    emit_text(json.dumps(spec_json_schema(), indent=2) + "\n")


def import_config_cmd(
    directory: Annotated[str, typer.Argument(metavar="DIR",
        help="Hugging Face model directory with config.json, a Hub id (org/name), or a GGUF file.")],
) -> None:
    """Turn a Hugging Face config.json (or a GGUF file's metadata) into a tfcli spec (YAML on
    stdout).

    Example: tfcli import-config ./my-llama > my-llama.yaml
    """
    from tfcli.checkpoints import spec_to_yaml
    from tfcli.sources import resolve_checkpoint

    spec = resolve_checkpoint(directory).load_spec()
    emit_text(spec_to_yaml(spec, source=directory))


def trace_cmd(
    spec: SpecArg,
    batch: Annotated[int, typer.Option(min=1, help="Sequences per batch.")] = 1,
    seq_len: Annotated[int | None, typer.Option(min=1, help="Tokens per sequence (default min(max_seq_len, 128)).")] = None,
    src_len: Annotated[int | None, typer.Option(min=1, help="Encoder-decoder: source length.")] = None,
    tgt_len: Annotated[int | None, typer.Option(min=1, help="Encoder-decoder: target length.")] = None,
    depth: Annotated[int, typer.Option(min=1, max=3, help="Fold rows: 1 block, 2 sublayer, 3 op.")] = 3,
    dtype: Annotated[ActivationDtype, typer.Option(help="Activation dtype for the byte column.")] = "float32",
    execute: Annotated[bool, typer.Option("--execute", help="Run a real forward pass and check every shape.")] = False,
    macs: MacsOpt = False,
    causal_half: CausalHalfOpt = False,
    window: WindowOpt = False,
    matmuls_only: MatmulsOnlyOpt = False,
    layers: LayersOpt = None,
    seed: Annotated[int | None, typer.Option("--seed", min=0, help="--execute: seed of the random weights (default 0).")] = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Shapes, FLOPs and activation memory through each block, analytic for any size.

    Example: tfcli trace llama-2-7b --seq-len 4096 --depth 2
    """
    from tfcli.render.trace import render_trace

    model = api.load(spec, layers=layers)
    report = model.trace(batch=batch, seq_len=seq_len, src_len=src_len, tgt_len=tgt_len,
                         depth=depth, dtype=dtype.value,
                         convention=flop_convention(macs, causal_half, window, matmuls_only))
    if not execute:
        emit(report, fmt, lambda: render_trace(report))
        return
    _trace_execute(model, report, seed or 0, fmt)


def _trace_execute(model: Any, report: Any, seed: int, fmt: OutputFormat) -> None:
    """--execute: the analytic trace plus the shape check, as one result."""
    from rich.console import Group

    from tfcli.core.errors import CheckFailedError
    from tfcli.render.trace import render_execute_check, render_trace

    both = model.check_trace(report, seed=seed, progress=True)
    check = both.check
    emit(both, fmt, lambda: Group(render_trace(report), render_execute_check(check)))
    if fmt in (OutputFormat.csv, OutputFormat.markdown):  # no place in the rows: to stderr
        stderr_console().print(render_execute_check(check))
    if not check.ok:
        raise CheckFailedError(f"{len(check.mismatches)} analytic shapes differ from the forward pass")
