"""The tfcli error family. Every error a user can cause is a TfcliError with an exit code.

The CLI maps these to one message on stderr and the exit code; anything else is a bug and
shows a traceback only under TFCLI_DEBUG=1.
"""

from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
EXIT_CHECK_FAILED = 1  # the tool ran, but a check it was asked to make failed
EXIT_BAD_INPUT = 2  # the user's input (spec, option, file) is wrong
EXIT_OUTPUT_FAILED = 74  # the result could not be written (sysexits.h EX_IOERR: disk full)
EXIT_INTERNAL = 70  # a bug in tfcli (sysexits.h EX_SOFTWARE): an exception no check expected
EXIT_INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as a shell reports it
EXIT_BROKEN_PIPE = 141  # the reader left (`| head -1`): 128 + SIGPIPE, as for any writer killed by it


class TfcliError(Exception):
    """Base of every error tfcli reports to the user without a traceback."""

    exit_code: int = EXIT_BAD_INPUT

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadInputError(TfcliError):
    """An option, file or value given by the user is wrong."""


class CheckFailedError(TfcliError):
    """A check the user asked for (e.g. --check-cache) did not hold."""

    exit_code = EXIT_CHECK_FAILED


class OutputError(TfcliError):
    """Standard output refused the result (a full disk, a closed file)."""

    exit_code = EXIT_OUTPUT_FAILED


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a spec: where it is and what is wrong."""

    field: str  # dotted location, e.g. "n_heads"; "" for the document itself
    message: str
    line: int | None = None  # 1-based line in the YAML file, when known

    def render(self, source: str) -> str:
        where = f"{source}:{self.line}" if self.line else source
        field = f" field '{self.field}':" if self.field else ""
        return f"{where}:{field} {self.message}"


class SpecError(TfcliError):
    """A spec file or spec value is invalid. Carries every problem found, each on its own line."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        super().__init__("\n".join(p.render(source) for p in problems))


class SpecConsistencyError(TfcliError):
    """Raised inside the Spec model when fields contradict each other.

    Deliberately not a ValueError: pydantic lets it through untouched, so the field name survives
    and load_spec() can attach the YAML line. Code that builds a Spec directly gets it as is.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"field '{field}': {message}")
        self.field = field
        self.detail = message
