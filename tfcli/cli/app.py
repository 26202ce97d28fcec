"""The tfcli command line: the Typer app and its COMMANDS, each a thin function in a cli/
module that parses options, makes one call to the API (tfcli.api) and hands the result to a
renderer. Heavy modules (numpy engine, torch, matplotlib) are imported
inside the commands that need them, so `tfcli --help` and `tfcli params` start fast.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from tfcli import __version__
from tfcli.cli import diff, inspect, memory, perf, run
from tfcli.cli.guard import GuardedCommand, GuardedGroup
from tfcli.cli.options import F, handle_errors

app = typer.Typer(
    name="tfcli",
    help="Inspect and run Transformer architectures: exact parameter counts, per-op traces, "
    "a NumPy forward pass, KV-cached generation and depth sweeps.",
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    cls=GuardedGroup,  # one line per error, whatever fails (option errors, full disks, bugs)
)


def command(*args: Any, **kwargs: Any) -> Callable[[F], F]:
    """`@app.command` with the error handling every command shares."""

    def register(func: F) -> F:
        app.command(*args, cls=GuardedCommand, **kwargs)(handle_errors(func))
        return func

    return register


def _version(value: bool) -> None:
    if value:
        typer.echo(f"tfcli {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                           help="Show the version and exit.")
    ] = False,
) -> None:
    """Inspect and run Transformer architectures."""


# Every command, in --help's order: (name, the plain function in its cli/ module).
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("params", inspect.params_cmd),
    ("specs", inspect.specs_cmd),
    ("validate", inspect.validate_cmd),
    ("schema", inspect.schema_cmd),
    ("import-config", inspect.import_config_cmd),
    ("run", run.run_cmd),
    ("generate", run.generate_cmd),
    ("trace", inspect.trace_cmd),
    ("depth-sweep", run.depth_sweep_cmd),
    ("gpus", perf.gpus_cmd),
    ("perf", perf.perf_cmd),
    ("diff", diff.diff_cmd),
    ("memory", memory.memory_cmd),
)
for _name, _function in COMMANDS:
    command(_name)(_function)


def main() -> None:
    """Console-script entry point. A Ctrl-C that lands before the guard runs (while typer builds
    the command group) or after it exits 130 as quietly as one during a command."""
    try:
        app(prog_name="tfcli")
    except KeyboardInterrupt as stop:
        from tfcli.core.errors import EXIT_SIGNAL_BASE, interrupt_signal  # loaded already

        raise SystemExit(EXIT_SIGNAL_BASE + interrupt_signal(stop)) from None


if __name__ == "__main__":  # pragma: no cover
    main()
