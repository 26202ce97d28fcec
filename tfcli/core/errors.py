"""The tfcli error family. Every error a user can cause is a TfcliError with an exit code.

The CLI maps these to one message on stderr and the exit code; anything else is a bug and
shows a traceback only under TFCLI_DEBUG=1.
"""

from __future__ import annotations

import difflib
import signal
from dataclasses import dataclass

EXIT_CHECK_FAILED = 1  # the tool ran, but a check it was asked to make failed
EXIT_BAD_INPUT = 2  # the user's input (spec, option, file) is wrong
EXIT_OUTPUT_FAILED = 74  # the result could not be written (sysexits.h EX_IOERR: disk full)
EXIT_INTERNAL = 70  # a bug in tfcli (sysexits.h EX_SOFTWARE): an exception no check expected
EXIT_INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as a shell reports it
# The reader left (`| head -3`): it took what it wanted and what it read is right, so success,
# as `head` users expect (git, ls and grep exit 0 there too); 141 (128 + SIGPIPE) failed every
# `set -o pipefail` script and CI step that previews a table with head.
EXIT_BROKEN_PIPE = 0


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
        # Source and field come from the user (a path argument, an unknown key): cut and escaped.
        source = clip(source, MAX_SHOWN_SOURCE)
        where = f"{source}:{self.line}" if self.line else source
        field = f" field '{clip(self.field)}':" if self.field else ""
        return f"{where}:{field} {self.message}"


MAX_SHOWN_PROBLEMS = 10  # a file of 50,000 unknown keys is one mistake, not a 3 MB message
MAX_SHOWN_SOURCE = 200  # characters of a file name heading each line


class SpecError(TfcliError):
    """A spec file or spec value is invalid. Carries every problem found; the message shows the
    first MAX_SHOWN_PROBLEMS, each on its own line, then how many more there are. `omitted`
    counts further problems the caller found but did not build."""

    def __init__(self, source: str, problems: list[Problem], omitted: int = 0) -> None:
        self.source = source
        self.problems = problems
        lines = [p.render(source) for p in problems[:MAX_SHOWN_PROBLEMS]]
        more = len(problems) - len(lines) + omitted
        if more:
            plural = "s" if more > 1 else ""
            lines.append(f"{clip(source, MAX_SHOWN_SOURCE)}: … and {more:,} more problem{plural}")
        super().__init__("\n".join(lines))


class SpecConsistencyError(TfcliError):
    """Raised inside the Spec model when fields contradict each other.

    Deliberately not a ValueError: pydantic lets it through untouched, so the field name survives
    and load_spec() can attach the YAML line. Code that builds a Spec directly gets it as is.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"field '{field}': {message}")
        self.field = field
        self.detail = message


# Echoing user values. A message quotes what the user wrote, but what they wrote may be a YAML
# alias bomb (a list that shares itself 9**9 times: its repr is gigabytes), a 5,000-digit
# integer (whose repr raises ValueError), 400,000 keys, or ESC/BEL bytes that drive the terminal.
# So nothing user-supplied is repr()'d whole: these build a bounded, escaped form directly.
SHOWN_LIMIT = 60  # characters of a quoted value
_SHOWN_ITEMS = 4  # items of a list or mapping quoted before "…"
_BIG_INT_BITS = 200  # ~60 digits: longer integers are described, not written out
_LOG10_2 = 0.30103


def shown(value: object, limit: int = SHOWN_LIMIT) -> str:
    """`value` as a message quotes it: a repr with control characters escaped, cut near `limit`
    characters. Long strings end `…' (N characters)`, containers show a few items then their
    size, huge integers their digit count; never costs more than O(limit) to build."""
    if isinstance(value, str):
        return _shown_text(value, limit)
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        if value.bit_length() > _BIG_INT_BITS:
            return f"an integer of about {int(value.bit_length() * _LOG10_2) + 1:,} digits"
        return repr(value)
    if isinstance(value, (bytes, bytearray)):
        head = repr(bytes(value[:limit]))  # b'...', every non-ASCII byte escaped
        return head if len(value) <= limit else f"{head[:-1]}…' ({len(value):,} bytes)"
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return _shown_container(value, limit)
    return f"a value of type {type(value).__name__}"  # an arbitrary object's repr has no bound


def check_names_listed_once(option: str, names: tuple[str, ...],
                            allowed: tuple[str, ...]) -> None:
    """BadInputError for a comma list of names (--lora-targets, --fused) with an empty entry
    or a name given twice: each is meant once, as a sweep refuses a repeated --batch value
    (silently dropping the repeat would hide a typo such as q,q for q,k)."""
    if not names or not all(names):
        raise BadInputError(f"{option} has an empty name: give a comma list of "
                            f"{','.join(allowed)}")
    seen: set[str] = set()
    for name in names:  # one pass: a list of 100,000 entries costs no more than reading it
        if name in seen:
            raise BadInputError(f"{option} names {shown(name)} more than once: give each once")
        seen.add(name)


def not_one_of(option: str, value: object, allowed: tuple[str, ...]) -> str:
    """The message for a value an option does not take, e.g. "--dtype must be one of float32,
    float64 (got 'float61'); did you mean 'float16'?"; the value quoted by shown()."""
    hint = ""
    if isinstance(value, str):  # a typo's nearest choice; a prefix is enough to find it
        close = difflib.get_close_matches(value[:SHOWN_LIMIT].lower(), allowed, n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"{option} must be one of {', '.join(allowed)} (got {shown(value)}){hint}"


def clip(text: str, limit: int = 2 * SHOWN_LIMIT) -> str:
    """`text` (a name, a path) as written, without quotes, when it is printable and short;
    otherwise escaped like a repr and cut, with its length."""
    if len(text) <= limit and text.isprintable():
        return text
    body = repr(text[:limit])[1:-1]
    if len(text) <= limit and len(body) <= limit:
        return body
    return f"{body[:limit]}… ({len(text):,} characters)"


def _shown_text(text: str, limit: int) -> str:
    head = repr(text[:limit])  # repr escapes every non-printable character (\x1b, \u202e)
    quote, body = head[0], head[1:-1]
    if len(text) <= limit and len(body) <= limit:
        return head
    return f"{quote}{body[:limit]}…{quote} ({len(text):,} characters)"


def _shown_container(value: list | tuple | set | frozenset | dict, limit: int) -> str:
    opening, closing = {list: "[]", tuple: "()", dict: "{}"}.get(type(value), "{}")
    items: list[str] = []
    source = iter(value.items()) if isinstance(value, dict) else iter(value)
    for _, item in zip(range(_SHOWN_ITEMS), source):  # never walks the whole container
        if isinstance(value, dict):
            items.append(f"{_shown_leaf(item[0])}: {_shown_leaf(item[1])}")
        else:
            items.append(_shown_leaf(item))
    text = f"{opening}{', '.join(items)}{closing}"
    if len(value) <= _SHOWN_ITEMS and len(text) <= limit:
        return text
    noun = "key" if isinstance(value, dict) else "item"
    kind = {list: "list", tuple: "tuple", dict: "mapping"}.get(type(value), "set")
    plural = "" if len(value) == 1 else "s"
    cut = text[: max(limit - 1, 1)].removesuffix(closing)
    return f"{cut}…{closing} (a {kind} of {len(value):,} {noun}{plural})"


def _shown_leaf(value: object) -> str:
    """An item inside a quoted container: nested containers are not opened."""
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return {list: "[…]", tuple: "(…)"}.get(type(value), "{…}")
    return shown(value, SHOWN_LIMIT // 3)


EXIT_SIGNAL_BASE = 128  # a run stopped by signal n exits 128 + n, as a shell reports it


class Interrupted(KeyboardInterrupt):
    """A stop signal (SIGTERM from `timeout`, CI cancellation or `docker stop`; SIGHUP from a
    closed terminal) raised as an exception like Ctrl-C's KeyboardInterrupt, so every finally
    block runs (a temporary file is removed) and the run exits 128 + signum. `note` is one line
    to say (a result cut short says what it holds), or "" for none."""

    def __init__(self, signum: int, note: str = "") -> None:
        super().__init__(signum)
        self.signum = signum
        self.note = note

    @property
    def exit_code(self) -> int:
        return EXIT_SIGNAL_BASE + self.signum


def interrupt_signal(stop: BaseException) -> int:
    """The signal a KeyboardInterrupt stands for: its own, or SIGINT for Ctrl-C's."""
    return int(getattr(stop, "signum", signal.SIGINT))
