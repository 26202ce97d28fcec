"""One place that decides table vs JSON vs CSV vs markdown (the sqlite-utils / huggingface_hub
pattern).

Every result object offers `to_dict()` (JSON) and `csv_rows()` (header, rows); the table form is
a rich renderable built by the command's renderer. JSON and CSV go to stdout with no markup.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any, Protocol

from rich.console import Console, RenderableType

from tfcli.core.errors import OutputError
from tfcli.render.safe import SafeConsole, visible  # str taken literally, control bytes escaped


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"  # GitHub-flavoured tables of the CSV rows, for docs (render/markdown.py)


class Result(Protocol):
    def to_dict(self) -> dict[str, Any]: ...

    def csv_rows(self) -> tuple[list[str], list[list[object]]]: ...


PIPED_WIDTH = 120  # columns when stdout is not a terminal (rich would assume 80)


MIN_WIDTH, MAX_WIDTH = 40, 10_000  # COLUMNS=0 printed nothing at all; 1e400 is no width


def _columns() -> int | None:
    """COLUMNS when it is a number, held to [MIN_WIDTH, MAX_WIDTH]; None when it is unset or
    not a number (then the terminal's width, or PIPED_WIDTH when piped)."""
    text = os.environ.get("COLUMNS", "")
    if not (text.isascii() and text.isdigit()):  # not '-5', 'abc' or '٨٠'
        return None
    return min(max(int(text[:6]), MIN_WIDTH), MAX_WIDTH)


def stdout_console() -> Console:
    # Piped tables (into a file, less, a README) get room for their numbers; COLUMNS still wins.
    width = _columns() or (None if sys.stdout.isatty() else PIPED_WIDTH)
    return SafeConsole(highlight=False, width=width)


def stderr_console() -> Console:
    return SafeConsole(stderr=True, highlight=False, width=_columns())


def emit(result: Result, fmt: OutputFormat, table: Callable[[], RenderableType]) -> None:
    """Write `result` to stdout in `fmt`; `table` builds the rich form only when it is wanted.

    A stdout that cannot take it (disk full) is one message, not a traceback; a closed pipe
    (`tfcli ... | head -1`) is left to the CLI's guard, which exits quietly. A result cut
    short by a signal (its `interruption` is set: generate's tokens so far) is written whole,
    then the stop is raised, so the run still exits 128 + n (130 for Ctrl-C)."""
    _guarded(lambda: _write(result, fmt, table))
    stop = getattr(result, "interruption", None)
    if stop is not None:
        raise stop


def emit_text(text: str) -> None:
    """Write ready-made text (a JSON schema, a YAML spec) to stdout, guarded as emit is."""
    _guarded(lambda: sys.stdout.write(text))


def _guarded(write: Callable[[], object]) -> None:
    try:
        write()
        sys.stdout.flush()  # a full disk shows here, not at exit as an "ignored" exception
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputError(f"cannot write the output: {exc.strerror or exc}") from None


def _write(result: Result, fmt: OutputFormat, table: Callable[[], RenderableType]) -> None:
    if fmt is OutputFormat.json:
        sys.stdout.write(to_json(result.to_dict()) + "\n")
    elif fmt is OutputFormat.csv:
        header, rows = result.csv_rows()
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(header)
        writer.writerows([_csv_cell(cell) for cell in row] for row in rows)
    elif fmt is OutputFormat.markdown:
        from tfcli.render.markdown import result_markdown

        sys.stdout.write(result_markdown(result))
    else:
        sys.stdout.write(_tidy(_captured(table())))


def _captured(renderable: RenderableType) -> str:
    console = stdout_console()
    with console.capture() as captured:
        console.print(renderable)
    return captured.get()


_TRAILING_SPACES = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$", re.M)  # before any closing styles


def _tidy(text: str) -> str:
    """A table as text people copy and diff: no blank lines above it, no spaces at line ends
    (rich pads every line to the console's width)."""
    return _TRAILING_SPACES.sub(r"\1", text).lstrip("\n")


def _csv_cell(cell: object) -> object:
    """A CSV cell with control bytes shown as escapes: csv quotes commas and quotes but passes
    ESC, BEL and \\r through, and a spec's name or body_only label is user text."""
    return visible(cell) if isinstance(cell, str) else cell


def to_json(value: object, indent: int | None = 2) -> str:
    """Strict JSON text: non-finite floats become null, as NaN / Infinity are not JSON and break
    jq, browsers and json.loads in other languages. allow_nan=False makes any float that slips
    past json_safe fail loudly here instead of writing an invalid document."""
    return json.dumps(json_safe(value), indent=indent, allow_nan=False)


def json_safe(value: object) -> object:
    """`value` with numpy scalars and arrays made plain, and every non-finite float made None,
    however deeply it sits in dicts, lists and tuples."""
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    if isinstance(value, float):  # numpy.float64 is a float subclass
        return float(value) if math.isfinite(value) else None
    if hasattr(value, "tolist"):
        # numpy scalars (float32, int64, bool_) and arrays: tolist() gives plain Python values.
        return json_safe(value.tolist())
    return value


def with_progress(work: Callable[[Any], Any], show: bool, label: str,
                  total: int | None = None) -> Any:
    """Run work(progress) with a rich progress bar on stderr (or none when not shown, or when
    stderr is no terminal: there a bar is only a stray blank line in the log)."""
    console = stderr_console()
    if not (show and console.is_terminal):
        return work(None)
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                  TextColumn("{task.fields[count]}", markup=False), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task(label, total=total, count=_count(0, total))
        return work(lambda done, total: bar.update(task, completed=done, total=total,
                                                   count=_count(done, total)))


SLOW_AFTER_S = 1.0  # work shorter than this shows nothing; longer, a spinner on stderr


@contextmanager
def slow_status(label: str, after: float = SLOW_AFTER_S) -> Iterator[None]:
    """A spinner with `label` on stderr (a terminal only) once the block has run `after`
    seconds, gone when it ends: so a 5-second weight initialisation is not silence."""
    console = stderr_console()
    if not console.is_terminal:
        yield
        return
    from rich.text import Text

    status = console.status(Text(label))  # Text: a spec name is never read as markup
    lock, ended = threading.Lock(), [False]

    def start() -> None:
        with lock:
            if not ended[0]:
                status.start()

    timer = threading.Timer(after, start)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            ended[0] = True
            status.stop()


def _count(done: int, total: int | None) -> str:
    """`3/7`; just `3` while the total is not known yet (never `0/None`)."""
    return f"{done}/{total}" if total else f"{done}"
