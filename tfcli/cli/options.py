"""What every tfcli command shares: the option types defined once and the error handling.
Commands live in tfcli/cli/app.py or in a tfcli/cli/<topic>.py module
of their own (plain functions using these types), registered in tfcli/cli/app.py with `command`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from tfcli.api.terms import cli_terms
from tfcli.core.dtypes import EngineDtype
from tfcli.core.errors import TfcliError
from tfcli.cli.guard import RENAMED_OPTIONS, report_error, say
from tfcli.render.output import OutputFormat

F = TypeVar("F", bound=Callable[..., Any])

# Options shared by every command, defined once.
FormatOpt = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", help="table for people; json / csv on stdout for scripts; markdown for docs."),
]
SpecArg = Annotated[
    str,
    typer.Argument(metavar="SPEC", help="A spec file, a bundled spec name (see `tfcli specs`) or "
                   "a Hugging Face model directory with config.json.", show_default=False),
]
SeedOpt = Annotated[int, typer.Option("--seed", min=0, help="Seed for every random draw.")]
DtypeOpt = Annotated[EngineDtype, typer.Option("--dtype", help="What the engine computes in.")]
LayersOpt = Annotated[
    int | None,
    typer.Option("--layers", min=1, metavar="K", help="Every stack with K blocks: fewer to fit a big spec, more to size a deeper variant."),
]
WeightsOpt = Annotated[
    str | None,
    typer.Option("--weights", metavar="DIR", help="Tensors from this Hugging Face model directory "
                 "(safetensors) or GGUF file, the architecture from SPEC: an edited spec over a "
                 "checkpoint's weights. To take both from DIR, give DIR as SPEC. A FILE.npz "
                 "holds your own arrays by engine path (decoder.blocks.0.attn.wq, x @ W; "
                 "blocks.* for every block) over the spec's random draw."),
]


def handle_errors(func: F) -> F:
    """Turn a TfcliError into one message on stderr and its exit code; no traceback unless
    TFCLI_DEBUG=1. Anything else reaches the guard (tfcli.cli.guard), which says it in one line."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with cli_terms():  # the API's messages keep their --flags here
                return func(*args, **kwargs)
        except TfcliError as exc:
            raise typer.Exit(report_error(exc)) from None

    return wrapper  # type: ignore[return-value]


T = TypeVar("T")


def old_name(old: str, new: str, **kwargs: Any) -> Any:
    """The typer.Option kept, hidden, under a renamed option's old name for one release (read
    it through `renamed`); a mistyped name is then pointed at the new one."""
    RENAMED_OPTIONS[old] = new
    return typer.Option(old, hidden=True, help=f"Old name of {new}.", **kwargs)


def renamed(old: str, new: str, old_value: T | None, new_value: T) -> T:
    """The value of an option that was renamed: its old name stays, hidden, for one release and
    says so on stderr; both at once is refused (which one should win?)."""
    if old_value is None:
        return new_value
    if new_value is not None:
        from tfcli.core.errors import BadInputError

        raise BadInputError(f"{old} is the old name of {new}: give {new} alone")
    say(f"tfcli: note: {old} is deprecated and goes in the next release; use {new}")
    return old_value


def one_text(positional: str | None, option: str | None) -> str | None:
    """The text given as an argument (`tfcli generate gpt2 "Hello"`) or as --text."""
    if positional is not None and option is not None:
        from tfcli.core.errors import BadInputError

        raise BadInputError("give the text as an argument or as --text, not both")
    return option if positional is None else positional


