"""The command line's last line of defence: whatever happens, at most one line on stderr and an
exit code - never a traceback, never click's five-line usage box, never "Exception ignored".

`GuardedGroup` is the click group of the Typer app; its `main` runs click in non-standalone mode
and maps every outcome (so `tfcli ...`, `python -m tfcli` and CliRunner tests all get it):

    option error (click's UsageError)        one line naming the option, did-you-mean      2
    TfcliError                               its message                                   its code
    stdout cannot take the output            "cannot write the output: ...", any buffering 74
    stdout's reader left (`| head -1`)       nothing                                       0
    MemoryError / RecursionError             the input is too big / nested too deeply      2
    Ctrl-C                                   nothing (or the note of a result cut short)   130
    SIGTERM / SIGHUP                         the same                                      143 / 129
    anything else                            "internal error (a bug ...)"                  70
    stderr full or closed                    dropped (progress, notes, messages)           unchanged

A failed write leaves its bytes in Python's buffer, and the interpreter flushes stdout again at
exit, printing "Exception ignored ... Errno 28" and exiting 120. So once a standard stream has
failed, /dev/null is put under its file descriptor: that last flush then succeeds, silently.

A write that is cut short is a failure too: stdout, when it is a file descriptor, is rebuilt over
tfcli.core.files.CompleteWriter (same encoding, errors, line buffering and write-through), which writes
every byte or raises. Python's own stdout drops the rest of a write the disk cut short and goes
on as if it had succeeded (BufferedWriter returns the short count, TextIOWrapper ignores it): a
full disk gave exit 0 and a truncated file.

SIGTERM (`timeout`, CI cancellation, `docker stop`) and SIGHUP (a closed terminal) would kill the
process where it stands, skipping every finally block (a temporary file stays behind): for the
run they raise tfcli.core.errors.Interrupted instead, a KeyboardInterrupt that exits 128 + n. A signal
the parent set to be ignored (`nohup`) stays ignored.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import io
import os
import re
import signal
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

import typer
from typer.core import TyperCommand, TyperGroup

from tfcli.core.errors import (
    EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_INTERNAL, EXIT_OUTPUT_FAILED, EXIT_SIGNAL_BASE,
    BadInputError, Interrupted, TfcliError, interrupt_signal, shown,
)
from tfcli.core.files import CompleteWriter
from tfcli.render.safe import visible

MAX_MESSAGE_CHARS = 4000  # an error line longer than this is cut, saying how much was left out
MAX_DETAIL_CHARS = 200  # of an unexpected exception's text
MAX_SHOWN_VALUE = 60  # of an option value echoed in a message
PREFIX = "tfcli: error: "
# Renamed options: old name -> new (tfcli.cli.options.old_name fills it), so a did-you-mean
# names the option to use, not the hidden old one.
RENAMED_OPTIONS: dict[str, str] = {}


class GuardedGroup(TyperGroup):
    """The app's click group; every run goes through `run_guarded`. Bare `tfcli` is
    `tfcli --help` (exit 0); help is tfcli's own plain text (tfcli/cli/help.py)."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args) or ["--help"]

        def invoke() -> Any:
            check_integer_options(self, argv)
            return super(GuardedGroup, self).main(argv, prog_name, complete_var,
                                                  standalone_mode=False, **extra)

        code = run_guarded(invoke, self, argv)
        if standalone_mode:
            sys.exit(code)
        return code

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _carried_stop():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _carried_stop():
            return super().invoke(ctx)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from tfcli.cli.help import command_help

        formatter.write(command_help(self, ctx))


class _CarriedStop(BaseException):
    """A KeyboardInterrupt (Ctrl-C, or a SIGTERM / SIGHUP raised as Interrupted) on its way from
    the command to the guard: typer turns a KeyboardInterrupt into a plain exit 130, losing
    which signal it was and the note of a result cut short."""

    def __init__(self, stop: KeyboardInterrupt) -> None:
        super().__init__(stop)
        self.stop = stop


@contextlib.contextmanager
def _carried_stop() -> Iterator[None]:
    try:
        yield
    except KeyboardInterrupt as stop:
        raise _CarriedStop(stop) from None


class GuardedCommand(TyperCommand):
    """Every tfcli command: its help is tfcli's own plain text, the same under any typer, and an
    option its mode does not read is refused before the command's body runs (cli_modes)."""

    def invoke(self, ctx: Any) -> Any:
        from tfcli.api.modes import check_option_modes

        check_option_modes(ctx)
        return super().invoke(ctx)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from tfcli.cli.help import command_help

        formatter.write(command_help(self, ctx))


# --- integer options ------------------------------------------------------------------------

_INTEGER = re.compile(r"-?[0-9]+")  # ASCII digits: the rule --tokens and --depths follow too


def check_integer_options(group: TyperGroup, argv: list[str]) -> None:
    """Integer options read their value through int(), which takes '1_0' as 10 and '+3', ' 7' or
    '１２' too, while --tokens refuses them: one rule for every integer the user types. Only the
    values of the command's integer options are looked at (a --text of '--batch' is text)."""
    name = next((arg for arg in argv if not arg.startswith("-")), None)
    command = group.commands.get(name) if name else None
    if command is None:
        return
    takes_value = {opt: p for p in command.params if getattr(p, "is_flag", True) is False
                   for opt in (*p.opts, *p.secondary_opts)}
    args = iter(argv[argv.index(name) + 1:])
    for arg in args:
        if arg == "--":
            return
        option, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        param = takes_value.get(option)
        if param is None:
            continue
        value = value if eq else next(args, None)
        if value is not None and _is_int_option(param) and not _INTEGER.fullmatch(value):
            raise BadInputError(f"{option}: {shown(value, MAX_SHOWN_VALUE)} is not an integer "
                                f"(ASCII digits, e.g. 16) (see tfcli {name} --help)")


def _is_int_option(param: Any) -> bool:
    descriptor = getattr(param, "type_descriptor", None)
    return descriptor is not None and descriptor.annotation is int


# --- the standard streams -----------------------------------------------------------------------


class WatchedStream:
    """A standard stream that remembers the first write or flush that failed (rich, csv, click
    and print all write through sys.stdout, so this sees every one of them).

    stderr is `best_effort`: a progress bar or a note that a full or broken stderr refuses is
    dropped (and /dev/null put under fd 2) instead of aborting a command whose result, on
    stdout, is fine; the exit code still tells how it went."""

    def __init__(self, stream: TextIO, fd: int, best_effort: bool = False) -> None:
        self.stream = stream
        self.fd = fd
        self.best_effort = best_effort
        self.failure: OSError | None = None

    def write(self, text: str) -> int:
        try:
            try:
                return self.stream.write(text)
            except UnicodeEncodeError:  # an ASCII or Latin-1 stdout (LC_ALL=C, cron, old ttys)
                self.stream.write(encodable(text, self.stream))
                return len(text)
        except OSError as exc:
            self._failed(exc)
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as exc:
            self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        self.failure = self.failure or exc
        if not self.best_effort:
            raise exc
        _silence(self.stream, self.fd)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, buffer, ...
        return getattr(self.stream, name)


# Our own typography, spelled in ASCII for a stream that cannot encode it: '50,257×768' must
# not become '50,257?768'. Whatever is still unencodable (user text) becomes an escape.
_ASCII_SPELLING = str.maketrans({"×": "x", "—": "-", "–": "-", "…": "...", "·": "*", "→": "->",
                                 "←": "<-", "≈": "~", "≤": "<=", "≥": ">=", "±": "+/-",
                                 "²": "^2", "√": "sqrt", "‘": "'", "’": "'", "“": '"', "”": '"',
                                 "•": "*", "│": "|", "─": "-", "━": "-", "┃": "|"})


def encodable(text: str, stream: Any) -> str:
    """`text` as `stream`'s encoding can write it: typography spelled in ASCII, anything else
    that does not encode (an emoji in a spec name) as a backslash escape."""
    encoding = getattr(stream, "encoding", None) or "ascii"
    spelled = text.translate(_ASCII_SPELLING)
    return spelled.encode(encoding, "backslashreplace").decode(encoding)


class ClosedStream(io.TextIOBase):
    """Stands in for a stdout that was closed at start (`tfcli specs >&-`, where Python sets
    sys.stdout to None and click would print nothing and exit 0): every write fails."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def isatty(self) -> bool:
        return False


def _occupy_closed_fds() -> None:
    """Put /dev/null on a closed fd 0-2, so no file tfcli opens later lands on fd 1 or 2 and
    gets our output or messages written into it."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            spare = os.open(os.devnull, os.O_RDWR)
            if spare != fd:
                os.dup2(spare, fd)
                os.close(spare)


def _watch_std_streams() -> tuple[WatchedStream, WatchedStream]:
    if sys.stdout is None or sys.stderr is None:
        _occupy_closed_fds()
    if sys.stdout is None:
        sys.stdout = ClosedStream()
    if sys.stderr is None:  # messages have nowhere to go; the exit code still tells
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (lives to exit)
    out = WatchedStream(_complete_writes(sys.stdout), 1)
    err = WatchedStream(sys.stderr, 2, best_effort=True)
    sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
    return out, err


def _complete_writes(stream: Any) -> Any:
    """`stream` (Python's stdout) rebuilt over CompleteWriter when it writes to a file
    descriptor, with its encoding, errors, line buffering and write-through; under
    PYTHONUNBUFFERED (a raw stream below the text layer) with no buffer between, as Python has
    it. Anything else (a CliRunner's in-memory stream, a stdout a caller replaced) as it is."""
    if not isinstance(stream, io.TextIOWrapper):
        return stream
    try:
        fd = stream.fileno()
        stream.flush()  # nothing is written yet; if something were, it goes first
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return stream
    raw = CompleteWriter(fd)
    unbuffered = isinstance(stream.buffer, io.RawIOBase)
    return io.TextIOWrapper(raw if unbuffered else io.BufferedWriter(raw),  # type: ignore[arg-type]
                            encoding=stream.encoding, errors=stream.errors,
                            line_buffering=stream.line_buffering,
                            write_through=stream.write_through)


def _silence(stream: Any, fd: int) -> None:
    """/dev/null under `fd` when `stream` writes to it (not a CliRunner's in-memory stream)."""
    try:
        if stream.fileno() != fd:
            return
    except (OSError, ValueError, AttributeError):
        return
    spare = os.open(os.devnull, os.O_WRONLY)
    os.dup2(spare, fd)
    os.close(spare)


def say(line: str) -> None:
    """One line on stderr; a stderr that cannot take it (full, closed) is silenced instead."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # ValueError: the stream was closed under us
        _silence(sys.stderr, 2)


# --- messages ---------------------------------------------------------------------------------


def error_text(message: str) -> str:
    """`message` safe for a terminal: control bytes (ESC, BEL, \\r, bidi overrides, undecodable
    bytes) shown as escapes, the line breaks between a SpecError's problems kept, and the whole
    cut at MAX_MESSAGE_CHARS."""
    if len(message) > MAX_MESSAGE_CHARS:
        left = len(message) - MAX_MESSAGE_CHARS
        message = f"{message[:MAX_MESSAGE_CHARS]}… ({left:,} more characters)"
    return visible(message, keep="\n")


def report_error(exc: TfcliError) -> int:
    """Say a TfcliError (with its traceback under TFCLI_DEBUG=1); its exit code."""
    _debug_traceback(exc)
    say(PREFIX + error_text(exc.message))
    return exc.exit_code


def _debug_traceback(exc: BaseException) -> None:
    if os.environ.get("TFCLI_DEBUG") == "1":
        try:
            traceback.print_exception(exc, file=sys.stderr)
        except (OSError, ValueError):
            _silence(sys.stderr, 2)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def usage_message(exc: typer.TyperException, group: TyperGroup, argv: list[str]) -> str:
    """click's usage error as one line: the option first, the value given, a did-you-mean, and
    where to look (`tfcli run --help`)."""
    message = _click_message(exc, argv)
    for arg in sorted(set(argv), key=len, reverse=True):  # click echoes what was typed, whole
        if len(arg) > MAX_SHOWN_VALUE:
            message = message.replace(arg, _cut(arg, MAX_SHOWN_VALUE))
    message = _cut(message, MAX_MESSAGE_CHARS).rstrip(".")
    if message[1:2].islower():  # "No such option" -> "no such option", as tfcli's own messages
        message = message[:1].lower() + message[1:]
    return f"{message} (see {_command_path(exc, group, argv)} --help)"


def _click_message(exc: typer.TyperException, argv: list[str]) -> str:
    """click's text flattened to one line; a bad option value led by the option and the value."""
    possibilities = getattr(exc, "possibilities", None)
    if possibilities:  # click ranked them with difflib, closest first
        names = dict.fromkeys(RENAMED_OPTIONS.get(p, p) for p in possibilities)
        return f"{exc.message}; did you mean {' or '.join(names)}?"  # closest first
    param = getattr(exc, "param", None)
    opts = [opt for opt in getattr(param, "opts", ()) if opt.startswith("-")]
    if not opts or not exc.message:  # arguments, usage of an option, unknown commands
        return " ".join(exc.format_message().split()).replace(". Did you mean", "; did you mean")
    detail = " ".join(exc.message.split()).removeprefix("Value error, ")
    message = f"{max(opts, key=len)}: {detail[:1].lower()}{detail[1:]}"
    given = _given_value(argv, opts)
    if given is not None and repr(given) not in message:
        message += f" (got {_cut(repr(given), MAX_SHOWN_VALUE)})"
    return message.rstrip(".") + _closest_choice(param, given)


def _closest_choice(param: Any, given: str | None) -> str:
    """`; did you mean 'adamw'?` for a mistyped choice (`--optimizer adm`), as for option names."""
    from tfcli.cli.help import choices

    listed = choices(param)
    if given is None or not listed or given in listed:
        return ""
    close = difflib.get_close_matches(given[:MAX_SHOWN_VALUE].lower(), listed, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _given_value(argv: list[str], opts: list[str]) -> str | None:
    """The value typed for an option (`--batch x` or `--batch=x`; the last one wins, as in click)."""
    given = None
    for i, arg in enumerate(argv):
        for opt in opts:
            if arg == opt and i + 1 < len(argv):
                given = argv[i + 1]
            elif arg.startswith(opt + "="):
                given = arg[len(opt) + 1:]
    return given


def _command_path(exc: typer.TyperException, group: TyperGroup, argv: list[str]) -> str:
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        return str(ctx.command_path)
    name = next((arg for arg in argv if not arg.startswith("-")), None)
    return f"tfcli {name}" if name in group.commands else "tfcli"


# --- the run ------------------------------------------------------------------------------------


def run_guarded(invoke: Callable[[], Any], group: TyperGroup, argv: list[str]) -> int:
    """Run click (`invoke`, non-standalone); the exit code, with every failure said in one line."""
    saved = sys.stdout, sys.stderr
    handlers = _raise_on_stop_signals()
    try:
        out, _ = _watch_std_streams()
        code = _outcome(invoke, group, argv, out)
        return _settle_stdout(code, out)
    finally:
        sys.stdout, sys.stderr = saved
        _restore_handlers(handlers)


STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                     if hasattr(signal, name))


def _stop_signal(signum: int, frame: object) -> None:
    raise Interrupted(signum)


def _raise_on_stop_signals() -> dict[int, Any]:
    """SIGTERM and SIGHUP raise Interrupted while the run lasts; the handlers they had before.
    A signal left ignored by the parent (nohup) or given its own handler by the caller keeps it;
    outside the main thread (where Python allows no handler) nothing changes."""
    previous: dict[int, Any] = {}
    for signum in STOP_SIGNALS:
        try:
            if signal.getsignal(signum) is signal.SIG_DFL:
                previous[signum] = signal.signal(signum, _stop_signal)
        except (ValueError, OSError):  # not the main thread
            return previous
    return previous


def _restore_handlers(previous: dict[int, Any]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def _outcome(invoke: Callable[[], Any], group: TyperGroup, argv: list[str],
             out: WatchedStream) -> int:
    try:
        value = invoke()  # click returns the Exit code, or the command's None
        return value if isinstance(value, int) and not isinstance(value, bool) else 0
    except SystemExit as exc:  # click's own exit for a broken pipe; any sys.exit()
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except TfcliError as exc:
        return report_error(exc)
    except typer.TyperException as exc:
        return _usage_error(exc, group, argv)
    except _CarriedStop as carried:
        return _interrupted(carried.stop)
    except (KeyboardInterrupt, typer.Abort) as exc:
        return _interrupted(exc)
    except MemoryError:
        say(PREFIX + "out of memory: the input asks for more than this machine can give "
            "(a smaller model, --layers, --batch or --seq-len may fit)")
        return EXIT_BAD_INPUT
    except RecursionError:
        say(PREFIX + "the input is nested too deeply to read")
        return EXIT_BAD_INPUT
    except OSError as exc:
        if out.failure is not None:
            return _output_failed(exc, EXIT_INTERNAL)
        return _internal_error(exc)
    except Exception as exc:  # a bug: one line, not a traceback
        return _internal_error(exc)


def _interrupted(exc: BaseException) -> int:
    """128 + the signal that stopped the run (Ctrl-C 130, SIGTERM 143, SIGHUP 129), quietly or
    with the note of a result cut short. (click's Abort, from a prompt's Ctrl-C or EOF: 130.)"""
    stop = exc if isinstance(exc, KeyboardInterrupt) else exc.__cause__ or exc
    note = getattr(stop, "note", "")
    if note:
        say("tfcli: note: " + error_text(note))
    return EXIT_SIGNAL_BASE + interrupt_signal(stop)


def _usage_error(exc: typer.TyperException, group: TyperGroup, argv: list[str]) -> int:
    if type(exc).__name__ != "NoArgsIsHelpError":  # that one has printed the help already
        say(PREFIX + error_text(usage_message(exc, group, argv)))
    return int(getattr(exc, "exit_code", EXIT_BAD_INPUT))


def _internal_error(exc: BaseException) -> int:
    _debug_traceback(exc)
    detail = error_text(_cut(" ".join(str(exc).split()), MAX_DETAIL_CHARS))
    say(f"tfcli: internal error (a bug; TFCLI_DEBUG=1 shows the traceback): "
        f"{type(exc).__name__}: {detail}")
    return EXIT_INTERNAL


def _output_failed(exc: OSError, code: int) -> int:
    """stdout refused a write: a quiet 0 for a reader that left, else one line and 74 (unless
    the command has said it already)."""
    if exc.errno == errno.EPIPE:
        return EXIT_BROKEN_PIPE
    if code != EXIT_OUTPUT_FAILED:
        say(PREFIX + f"cannot write the output: {exc.strerror or exc}")
    return EXIT_OUTPUT_FAILED


def _settle_stdout(code: int, out: WatchedStream) -> int:
    """Flush stdout now, while a failure can still be reported (PYTHONUNBUFFERED or not)."""
    try:
        out.flush()
    except OSError as exc:
        code = _output_failed(exc, code)
    if out.failure is not None:
        if out.failure.errno == errno.EPIPE:
            code = EXIT_BROKEN_PIPE  # whatever the command was about to return
        _silence(out.stream, 1)
    return code
