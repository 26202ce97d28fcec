"""What every tfcli command shares: the option types defined once, the error handling, and
loading the SPEC argument. Commands live in tfcli/cli.py or in a tfcli/cli_<topic>.py module
of their own (plain functions using these types), registered in tfcli/cli.py with `command`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from tfcli.errors import TfcliError
from tfcli.guard import report_error
from tfcli.render.output import OutputFormat

F = TypeVar("F", bound=Callable[..., Any])

# Options shared by every command, defined once.
FormatOpt = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", help="table for people; json / csv on stdout for scripts; markdown for docs."),
]
SpecArg = Annotated[
    str,
    typer.Argument(help="A spec file, a bundled spec name (see `tfcli specs`) or a Hugging Face "
                   "model directory with config.json.", show_default=False),
]
SeedOpt = Annotated[int, typer.Option("--seed", min=0, help="Seed for every random draw.")]
DtypeOpt = Annotated[str, typer.Option("--dtype", help="Engine dtype: float32 or float64.")]
LayersOpt = Annotated[
    int | None,
    typer.Option("--layers", min=1, help="Truncate every stack to K blocks (to fit big specs)."),
]
WeightsOpt = Annotated[
    str | None,
    typer.Option("--weights", help="Hugging Face model directory (config.json + safetensors)."),
]


def handle_errors(func: F) -> F:
    """Turn a TfcliError into one message on stderr and its exit code; no traceback unless
    TFCLI_DEBUG=1. Anything else reaches the guard (tfcli.guard), which says it in one line."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except TfcliError as exc:
            raise typer.Exit(report_error(exc)) from None

    return wrapper  # type: ignore[return-value]


def load_spec_arg(spec_arg: str, layers: int | None = None) -> Any:
    """The Spec a SPEC argument names (file, bundled name or model directory), cut to `layers`."""
    from tfcli.spec_io import load_spec

    spec = load_spec(spec_arg)
    return spec.with_layers(layers) if layers else spec
