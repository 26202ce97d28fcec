"""One wall-clock budget, one size bound and one cancel switch per Hub operation.

huggingface_hub has per-read timeouts only: it obeys a `Retry-After` of a day, waits for a body
that drips a byte a second, writes a file to the cache before tfcli can look at its size, and
builds cache paths from the commit sha the endpoint sends. So each operation (fetching a
config, a checkpoint, safetensors headers) runs in a daemon worker thread that the caller waits
for with a deadline (Ctrl-C and expiry return at once; a daemon thread cannot keep the process
alive), and two httpx event hooks on huggingface_hub's client enforce, in the worker, on every
request and every chunk of every body:

- the deadline (each request's timeouts cut to the time left; a chunk after it raises);
- the size bound of the file being fetched (HEAD's X-Linked-Size / Content-Length, then the
  bytes actually received);
- `Retry-After`: longer than MAX_RETRY_AFTER_S or the time left is refused at once, naming it;
- X-Repo-Commit: 40 lowercase hex digits, or refused before huggingface_hub makes a path of it.

The hooks act only on requests made by an operation's worker thread; other users of
huggingface_hub in the same process are untouched. Downloads through hf_xet (Rust) bypass the
hooks: for them the deadline and Ctrl-C still hold (the caller stops waiting, the partial files
are removed), the per-chunk bound does not.
"""

from __future__ import annotations

import functools
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from tfcli.core.errors import BadInputError

CONFIG_BUDGET_S = 30.0  # listing + config files; also the floor of a checkpoint's budget
FLOOR_RATE = 2**20  # bytes/s: a checkpoint's budget grows by its listed size at this rate
MAX_RETRY_AFTER_S = 10  # a longer Retry-After is refused at once rather than slept on
MAX_API_BYTES = 32 * 2**20  # an api/ answer (the file listing) larger than this is refused
TIMEOUT_ENV = "TFCLI_HUB_TIMEOUT"  # seconds: the whole budget of every Hub operation
GRACE_S = 1.0  # how long a cancelled worker is given to unwind (its partial file removed)
COMMIT_SHA = re.compile(r"[0-9a-f]{40}")
_RETRIED = (408, 429, 500, 502, 503, 504)
T = TypeVar("T")


class Expired(Exception):
    """Raised in the worker when the operation's deadline passed or it was cancelled."""


def budget_override() -> float | None:
    """TFCLI_HUB_TIMEOUT in seconds, or None when unset."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise BadInputError(f"{TIMEOUT_ENV}={text[:40]!r}: must be a number of seconds > 0")
    return value


class Operation:
    """One Hub operation's deadline, cancel switch, the file being fetched and its bound."""

    def __init__(self, subject: str, budget: float) -> None:
        self.subject = subject  # "org/name" or "org/name@rev", for messages
        self.budget = budget
        self.deadline = time.monotonic() + budget
        self.cancelled = threading.Event()
        self.file = "the file listing"
        self.bound: int | None = MAX_API_BYTES
        self.last_status: int | None = None  # the last HTTP status at or above 400

    def extend(self, seconds: float) -> None:
        """A checkpoint's budget: its listed size at FLOOR_RATE more (not when overridden)."""
        if budget_override() is None:
            self.budget += seconds
            self.deadline += seconds

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def check(self) -> None:
        if self.cancelled.is_set() or self.remaining() <= 0:
            raise Expired()

    def fetching(self, file: str, bound: int | None) -> None:
        self.file, self.bound = file, bound

    def too_large(self, size: int) -> BadInputError:
        limit = f"{self.bound / 2**20:g} MiB" if self.bound and self.bound >= 2**20 \
            else f"{self.bound:,} bytes"
        return BadInputError(f"{self.subject}: {self.file} is {size:,} bytes on the Hub, more than "
                             f"tfcli reads ({limit}); not downloaded")

    def expired(self) -> BadInputError:
        last = f"; the last answer was HTTP {self.last_status}" if self.last_status else ""
        return BadInputError(f"{self.subject}: no complete answer from the Hub within the "
                             f"{self.budget:g} s budget while fetching {self.file}{last}; set "
                             f"{TIMEOUT_ENV}=SECONDS for a longer one")


_active = threading.local()  # .operation: the Operation this (worker) thread runs


def _operation() -> Operation | None:
    return getattr(_active, "operation", None)


def on_request(request: Any) -> None:
    """httpx request hook: refuse after the deadline, cut the request's timeouts to it."""
    operation = _operation()
    if operation is None:
        return
    operation.check()
    left = max(operation.remaining(), 0.001)
    timeout = dict(request.extensions.get("timeout") or {})
    request.extensions["timeout"] = {key: min(timeout.get(key) or left, left)
                                     for key in ("connect", "read", "write", "pool")}


def on_response(response: Any) -> None:
    """httpx response hook: the commit sha, Retry-After and size checks, then a bounded body."""
    operation = _operation()
    if operation is None:
        return
    status = response.status_code
    if status >= 400:
        operation.last_status = status
    commit = response.headers.get("X-Repo-Commit")
    if commit is not None and not COMMIT_SHA.fullmatch(commit):
        raise unsafe_commit(operation.subject, commit, "the X-Repo-Commit header")
    retry_after = response.headers.get("Retry-After", "").strip()
    if status in _RETRIED and retry_after.isdigit():
        wait = int(retry_after)
        if wait > min(MAX_RETRY_AFTER_S, operation.remaining()):
            raise BadInputError(f"{operation.subject}: the Hub answered HTTP {status} and asks to "
                                f"retry in {wait:,} s, longer than tfcli waits "
                                f"({MAX_RETRY_AFTER_S} s); try again later")
    size = response.headers.get("X-Linked-Size") or response.headers.get("Content-Length")
    if operation.bound is not None and size and size.isdigit() and int(size) > operation.bound:
        raise operation.too_large(int(size))
    response.stream = _bounded_stream()(response.stream, operation)


@functools.cache
def _bounded_stream() -> type:
    """A response body that stops at the deadline, at cancel and past the operation's bound
    (an httpx2.SyncByteStream, which httpx checks for: made once huggingface_hub is there)."""
    import httpx2

    class BoundedStream(httpx2.SyncByteStream):
        def __init__(self, stream: Any, operation: Operation) -> None:
            self._stream, self._operation, self._bound = stream, operation, operation.bound

        def __iter__(self) -> Iterator[bytes]:
            seen = 0
            for chunk in self._stream:
                self._operation.check()
                seen += len(chunk)
                if self._bound is not None and seen > self._bound:
                    raise self._operation.too_large(seen)
                yield chunk

        def close(self) -> None:
            self._stream.close()

    return BoundedStream


def unsafe_commit(subject: str, commit: object, where: str) -> BadInputError:
    return BadInputError(f"{subject}: the Hub sent {shown_text(commit)} as the commit sha in "
                         f"{where}, not 40 hex digits; refused before it names a cache path")


def shown_text(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_installed = False


def install_hooks(hub: Any) -> None:
    """Put the two hooks on every client huggingface_hub makes (once per process)."""
    global _installed
    if _installed:
        return
    from huggingface_hub.utils import _http  # the factory in use is not exported

    previous = getattr(_http, "_GLOBAL_CLIENT_FACTORY", None) or _http.default_client_factory

    def guarded_client() -> Any:
        client = previous()
        hooks = client.event_hooks
        client.event_hooks = {"request": [*hooks.get("request", []), on_request],
                              "response": [*hooks.get("response", []), on_response]}
        return client

    hub.set_client_factory(guarded_client)
    _installed = True


def run(operation: Operation, work: Callable[[Operation], T], cache_root: Path) -> T:
    """`work(operation)` in a daemon thread, waited for until the operation's deadline (which
    `work` may extend). Expiry raises operation.expired(); Ctrl-C cancels and re-raises. Either
    way, and on any failure, the `*.incomplete` files that appeared under `cache_root` are
    removed."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        _active.operation = operation
        try:
            box["value"] = work(operation)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc
        finally:
            _active.operation = None
            done.set()

    before = _partials(cache_root)
    threading.Thread(target=target, name="tfcli-hub", daemon=True).start()
    try:
        while not done.wait(min(max(operation.remaining(), 0), 0.25)):
            if operation.remaining() <= 0:
                raise operation.expired()
        if isinstance(box.get("error"), Expired):
            raise operation.expired()
        if "error" in box:
            raise box["error"]
        return box["value"]
    except BaseException:
        operation.cancelled.set()
        done.wait(GRACE_S)
        remove_partials(cache_root, before)
        raise


def _partials(cache_root: Path) -> set[Path]:
    try:
        return set(cache_root.glob("blobs/*.incomplete"))
    except OSError:
        return set()


def remove_partials(cache_root: Path, before: set[Path]) -> None:
    """Delete the partial downloads that appeared during the operation."""
    for path in _partials(cache_root) - before:
        try:
            path.unlink()
        except OSError:
            pass
