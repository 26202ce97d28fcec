"""Result files (`run --save-npz`, `depth-sweep --plot`) written safely.

Only a regular file or a new path is written, and always through a temporary file in the same
folder that is then renamed over the target, so a failure leaves no half-written file behind.
A rename replaces whatever sits at the target, so the target is looked at first with lstat (which
does not follow links): a symlink, FIFO, device, socket or folder is refused, not replaced -
`--save-npz /dev/null` run as root would otherwise delete the device node, and a symlink would be
swapped for a plain file instead of being written through.

Every refusal is a BadInputError naming the option and the path (cut short), checked before the
work starts (exit 2). A write that fails midway (disk full, a file-size limit, an I/O error) is an
OutputError (exit 74), and the target is left as it was.

Complete or not there: the file is written through `CompleteWriter`, whose write() writes every
byte or raises - Python's BufferedWriter returns a short count when a large write is cut short
(a disk that fills up midway), and zipfile (np.savez) and matplotlib ignore that count, so the
tail of the file was dropped without an error; it is then flushed, fsync'ed and closed before the
rename. Signals (Ctrl-C, and the SIGTERM / SIGHUP the guard turns into exceptions) cannot leave a
`.tfcli-*.tmp` behind: the temporary name is registered for removal before the file is created,
and signals are held back while it is created and registered, around the rename, and during the
removal, so an interruption lands either before the file exists or where the cleanup sees it.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import select
import signal
import stat
import zipfile  # noqa: F401 (np.savez imports it inside the write: imported before the work)
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from tfcli.core.errors import BadInputError, OutputError, shown

_FILE_KINDS = (  # (test, words) for what a path may be instead of a regular file
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int, kinds: tuple[tuple[Callable[[int], bool], str], ...] = _FILE_KINDS) -> str:
    """What a stat mode that is not a regular file names, in words ("a FIFO (named pipe)")."""
    return next((words for test, words in kinds if test(mode)), "not a regular file")


def not_regular(path: Path, dangling: bool = True, expected: str = "a JSON file") -> str | None:
    """What `path` is instead of a regular file (a loop, a FIFO, a folder and, with
    `dangling`, a symlink to nothing), as a clause after its folder's name ("its config.json
    is a directory, not a JSON file"); None when it is a regular file or absent."""
    try:
        info = os.stat(path)
    except FileNotFoundError:  # none, or a symlink to nothing
        if dangling and path.is_symlink():
            return f"its {path.name} is a symlink to {shown(os.readlink(path))}, which does not exist"
        return None
    except OSError as exc:  # a symlink loop, an unsearchable folder
        return f"its {path.name} cannot be read: {exc.strerror or exc}"
    if stat.S_ISREG(info.st_mode):
        return None
    kind = file_kind(info.st_mode, ((stat.S_ISDIR, "a directory"), *_FILE_KINDS))
    return f"its {path.name} is {kind}, not {expected}"

MAX_SHOWN_PATH = 80  # characters of a path quoted in a message (a 4,000-character name is legal)

_KINDS = (  # (test, words) for everything at a target that is not a regular file
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def shown_path(path: str | os.PathLike[str]) -> str:
    """A path as quoted in a message: repr (control bytes and undecodable bytes escaped), with
    the middle of a long one cut out so both the folder and the file name stay readable."""
    text = os.fspath(path)
    if len(text) > MAX_SHOWN_PATH:
        half = MAX_SHOWN_PATH // 2
        text = f"{text[:half]}…{text[-half:]}"
    return repr(text)


def check_output_file(path: str, option: str, suffix: str | None = None) -> Path:
    """The target of `option`, refused before any work unless it is a new path or a regular
    file in a writable folder (and ends in `suffix`, when one is required)."""
    if not path.strip():
        raise BadInputError(f"{option} needs a file name")
    if path == "-":  # the shell idiom for stdout; writing a file named '-' would surprise
        raise BadInputError(f"{option} writes a file, not standard output: give a file name "
                            "(./- if you mean a file called '-')")
    if suffix is not None and not path.lower().endswith(suffix):
        raise BadInputError(f"{option} writes {suffix[1:].upper()} only: give a file name "
                            f"ending in {suffix} (got {shown_path(path)})")
    target = Path(path)
    try:
        info: os.stat_result | None = os.lstat(target)
    except FileNotFoundError:
        info = None  # a new file (or a missing folder, found just below)
    except (OSError, ValueError) as exc:  # a name too long, a file as a folder, a NUL byte
        raise _cannot(option, path, getattr(exc, "strerror", None) or str(exc)) from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise _cannot(option, path, f"it is {_kind(info.st_mode)}; give the name of a "
                      "regular file or a new one")
    folder = target.parent
    if not folder.is_dir():
        raise _cannot(option, path, f"the folder {shown_path(folder)} does not exist")
    if not os.access(folder, os.W_OK):  # also False on a read-only file system
        raise _cannot(option, path, f"the folder {shown_path(folder)} is not writable")
    if info is not None and not os.access(target, os.W_OK):
        raise _cannot(option, path, "the file is read-only")
    return target


def write_atomically(path: str | os.PathLike[str], option: str,
                     write: Callable[[BinaryIO], None]) -> None:
    """Call write(handle) on a temporary file next to `path`, then rename it over `path`. On any
    failure (an OSError, or anything `write` raises, an interruption included) the temporary
    file is removed and `path` is left as it was."""
    text = os.fspath(path)
    target = check_output_file(text, option)
    pending: list[str] = []  # the temporary file's name, from before it exists until renamed
    try:
        with signals_held():
            fd = _create_temporary(target.parent, pending)
        with io.BufferedWriter(CompleteWriter(fd, closefd=True)) as handle:
            write(handle)
            handle.flush()
            os.fsync(fd)  # a disk that reports a full device only now (NFS, quotas) says so here
        os.chmod(pending[0], 0o666 & ~_umask())  # 0600 when made; a normal file's mode now
        check_output_file(text, option)  # the target may have changed during the work
        with signals_held():
            os.replace(pending[0], target)
            pending.clear()
    except OSError as exc:
        raise OutputError(f"{option}: cannot write {shown_path(text)}: "
                          f"{exc.strerror or exc}") from None
    finally:
        with signals_held():
            for name in pending:
                with contextlib.suppress(OSError):
                    os.unlink(name)


TEMPORARY_ATTEMPTS = 100  # random names tried before giving up (tempfile.mkstemp's TMP_MAX-like)


def _create_temporary(folder: Path, pending: list[str]) -> int:
    """A new `.tfcli-*.tmp` in `folder` opened for writing (mode 0600, as mkstemp makes it), its
    name appended to `pending` before it is created: whatever interrupts afterwards, the
    cleanup knows the name."""
    for _ in range(TEMPORARY_ATTEMPTS):
        name = os.fspath(folder / f".tfcli-{secrets.token_hex(6)}.tmp")
        pending.append(name)
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                           0o600)
        except FileExistsError:
            pending.remove(name)  # someone else's file: never removed by our cleanup
    raise OSError(errno.EEXIST, f"no free temporary name in {TEMPORARY_ATTEMPTS} tries")


# The signals that stop a run: Ctrl-C, and what the guard turns into exceptions (tfcli/cli/guard.py).
STOP_SIGNALS = frozenset(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                         if hasattr(signal, name))


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold the stop signals back for the block; one that arrives meanwhile is delivered (and
    its exception raised) when the block ends. A no-op where the platform has no signal masks."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class CompleteWriter(io.RawIOBase):
    """A file descriptor as a raw stream whose write() writes every byte or raises.

    os.write may write fewer bytes than asked (a disk that fills up midway, a file-size limit,
    a signal); Python's BufferedWriter then returns the short count, and TextIOWrapper, zipfile
    and matplotlib ignore it, so the rest was lost without an error. Here the rest is written
    at once, and the device's refusal (ENOSPC, EFBIG, EIO) is raised as an OSError."""

    def __init__(self, fd: int, closefd: bool = False) -> None:
        super().__init__()
        self._fd = fd
        self._closefd = closefd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            try:
                written = os.write(self._fd, view[done:])
            except BlockingIOError:  # a non-blocking pipe that is full: wait until it drains
                select.select([], [self._fd], [])
                continue
            if written == 0:
                raise OSError(errno.EIO, "the device took no bytes")
            done += written
        return done

    def close(self) -> None:
        if not self.closed and self._closefd:
            os.close(self._fd)
        super().close()


def _kind(mode: int) -> str:
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def _cannot(option: str, path: str, why: str) -> BadInputError:
    return BadInputError(f"{option}: cannot write {shown_path(path)}: {why}")


def _umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it; put it straight back
    os.umask(mask)
    return mask


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of a regular file, or one BadInputError. O_NONBLOCK keeps open()
    from waiting on a FIFO; fstat checks the file actually opened, so a FIFO, device or
    directory is refused before anything is read (/dev/zero never ends)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise BadInputError(f"{path}: cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BadInputError(f"{path}: not a regular file")
    return fd
