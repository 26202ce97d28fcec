"""The one translation layer between tfcli and its optional libraries (gguf, tokenizers,
huggingface_hub, matplotlib).

Those libraries fail in their own ways at use time: a ValueError from deep inside gguf's
dequantiser, a bare `Exception` from `tokenizers`, a `PanicException` from Rust (a
BaseException, which `except Exception` does not catch, with Rust's panic text written straight
to file descriptor 2), a urllib3 LocationParseError for a malformed HF_ENDPOINT, warnings,
log records and progress bars beside tfcli's one line. Every call into one of them goes through
`calling()`, which

- turns whatever the library raises (a panic included) into one `DependencyError` line that
  names the library, what was being done and the file or setting it was done to (exit 2: the
  input is what the library could not take; tfcli's own bugs stay exit 70 because they are
  raised outside this layer);
- keeps the library quiet while it runs: its `warnings` are dropped, its loggers raised to
  CRITICAL (huggingface_hub resets its own logger's level on its lazy import, so the level is
  set again at each call, not once), and with `capture_fd2=True` what native code writes to
  file descriptor 2 is captured and dropped (a Rust panic's text) - not used around work that
  shows its own progress bar on a terminal.

`require()` imports an optional library or says which extra installs it.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from types import ModuleType

from tfcli.core.errors import BadInputError, TfcliError, clip

# The extra that installs each optional library: `pip install 'tfcli[<extra>]'`.
EXTRAS = {"gguf": "gguf", "tokenizers": "hf", "huggingface_hub": "hub", "matplotlib": "plot"}
# Loggers of the libraries (and of what they call) whose records would join tfcli's stderr.
QUIET_LOGGERS = ("huggingface_hub", "gguf", "matplotlib", "urllib3", "filelock", "httpx",
                 "httpcore", "fsspec", "PIL")
MAX_DETAIL = 160  # characters of a library's own message quoted in ours


class DependencyError(BadInputError):
    """An optional library refused the input it was given (a file, a setting)."""


def require(module: str, purpose: str) -> ModuleType:
    """`import module`, or one line saying which extra installs it and what it is needed for."""
    top = module.split(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError:
        extra = EXTRAS.get(top, top)
        raise BadInputError(f"{purpose} needs the `{top}` package; install it with: "
                            f"pip install 'tfcli[{extra}]'") from None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - a broken install raises anything at import
        raise DependencyError(f"the `{top}` package is installed but fails to import "
                              f"({detail(exc)}); reinstall it with: pip install --force-reinstall "
                              f"{top}") from None


def detail(exc: BaseException) -> str:
    """A library's exception as a short clause: its type and the first line of its text."""
    text = " ".join(str(exc).split("\n", 1)[0].split())
    name = type(exc).__name__
    return f"{name}: {clip(text, MAX_DETAIL)}" if text else name


def is_panic(exc: BaseException) -> bool:
    """A Rust panic surfaced by pyo3 (`pyo3_runtime.PanicException`, a BaseException)."""
    return type(exc).__name__ == "PanicException"


@contextlib.contextmanager
def calling(library: str, subject: str, doing: str, capture_fd2: bool = False) -> Iterator[None]:
    """Run the block, a call into `library` about `subject` (a path, a setting such as
    HF_ENDPOINT) doing `doing` ("dequantising tensor blk.0.attn_q.weight"). Whatever it raises
    other than tfcli's own errors, Ctrl-C and exit becomes one DependencyError:
    "<subject>: <library> failed <doing>: <Type>: <first line>"."""
    try:
        with quiet(capture_fd2):
            yield
    except (TfcliError, KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError,
            RecursionError):
        raise
    except BaseException as exc:  # noqa: BLE001 - PanicException is a BaseException
        what = "panicked" if is_panic(exc) else "failed"
        raise DependencyError(f"{clip(subject, 200)}: {library} {what} {doing}: "
                              f"{detail(exc)}") from None


@contextlib.contextmanager
def quiet(capture_fd2: bool = False) -> Iterator[None]:
    """The stderr policy for dependencies while they run: no warnings, no log records below
    CRITICAL, and (capture_fd2) nothing native code writes to file descriptor 2."""
    saved = {name: logging.getLogger(name).level for name in QUIET_LOGGERS}
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with _captured_fd2() if capture_fd2 else contextlib.nullcontext():
                yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def _captured_fd2() -> Iterator[None]:
    """File descriptor 2 pointed at a temporary file for the block, then restored (the file is
    dropped): what Rust's panic hook or a C library prints never reaches the terminal."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no fd 2 (a CliRunner's stream): nothing to do
        yield
        return
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)
