"""`python -m tfcli`, and an entry point that also covers the import of tfcli's modules: a
Ctrl-C while they load (typer, rich, the command table: a few hundred milliseconds) exits 130
with nothing on stderr, as one during a command does, instead of a KeyboardInterrupt traceback."""

import sys

EXIT_INTERRUPTED = 130  # tfcli.core.errors.EXIT_INTERRUPTED, spelled here: that module may be loading


def main() -> None:
    try:
        from tfcli.cli.app import main as cli_main
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    cli_main()


if __name__ == "__main__":
    main()
