"""Result files (`run --save-npz`, `depth-sweep --plot`) written safely.

Only a regular file or a new path is written, and always through a temporary file in the same
folder that is then renamed over the target, so a failure leaves no half-written file behind.
A rename replaces whatever sits at the target, so the target is looked at first with lstat (which
does not follow links): a symlink, FIFO, device, socket or folder is refused, not replaced -
`--save-npz /dev/null` run as root would otherwise delete the device node, and a symlink would be
swapped for a plain file instead of being written through.

Every refusal is a BadInputError naming the option and the path (cut short), checked before the
work starts; a write that fails midway (disk full) is one too, as the user chose the target.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from tfcli.errors import BadInputError

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
    failure (an OSError, or anything `write` raises) the temporary file is removed."""
    text = os.fspath(path)
    target = check_output_file(text, option)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tfcli-", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600; give it a normal file's mode
        check_output_file(text, option)  # the target may have changed during the work
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise _cannot(option, text, exc.strerror or str(exc)) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


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
