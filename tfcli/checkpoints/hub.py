"""Hugging Face Hub ids (`org/name`, `org/name@revision`) as SPEC arguments, through the optional
`huggingface_hub` package: cache first, `HF_HUB_OFFLINE=1` and `HF_TOKEN` respected.

`params`, `trace`, `validate` and `import-config` fetch config.json alone; `run` and `generate`
the safetensors, tokenizer and generation files too (huggingface_hub's progress bars on a
terminal stderr only). Either way the result is a local snapshot folder of the Hub cache, which
every other part of tfcli reads as a model directory.

A download first lists the revision (api/models, files_metadata): its commit sha, checked to be
40 hex digits before any path is made of it, and each file's size, checked against the bound
tfcli reads that file with before the first byte is fetched. Each file is then fetched by sha.
The whole operation runs under one wall-clock budget (hub_budget.py: CONFIG_BUDGET_S, plus the
listed size at FLOOR_RATE for a checkpoint; TFCLI_HUB_TIMEOUT overrides it), Ctrl-C stops it,
and a stopped or refused download leaves no partial file in the cache. Every call into
huggingface_hub goes through tfcli.core.deps.calling; the failures known here are one line each
that says what to do (`_failure`), anything else one line naming HF_ENDPOINT.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from tfcli.checkpoints.hub_budget import (
    COMMIT_SHA,
    CONFIG_BUDGET_S,
    FLOOR_RATE,
    Operation,
    budget_override,
    install_hooks,
    run,
    shown_text,
    unsafe_commit,
)
from tfcli.core.deps import calling, require
from tfcli.core.errors import BadInputError, TfcliError

HUB_EXTRA = "pip install 'tfcli[hub]'"
# owner/name as the Hub allows them, then an optional @revision (branch, tag or commit)
_HUB_ID = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95})"
                     r"(?:@(?P<revision>[\w][\w./-]{0,199}))?")
T = TypeVar("T")


@dataclass(frozen=True)
class HubRef:
    repo: str  # "openai-community/gpt2"
    revision: str | None  # None: the default branch

    def __str__(self) -> str:
        return self.repo + (f"@{self.revision}" if self.revision else "")


def parse_hub_id(arg: str) -> HubRef | None:
    """The Hub reference `arg` spells, or None when it is not shaped like one."""
    match = _HUB_ID.fullmatch(arg)
    if match is None or ".." in match.group("repo"):
        return None
    revision = match.group("revision")
    if revision and ".." in revision.split("/"):  # refs/<revision> is a cache path
        return None
    return HubRef(match.group("repo"), match.group("revision"))


def _hub() -> Any:
    return require("huggingface_hub", "a Hugging Face Hub id")


def _constants() -> Any:
    """huggingface_hub's settings, read from the environment at its import: HF_ENDPOINT is
    checked first (huggingface_hub itself fails on a malformed one with a bare ValueError)."""
    endpoint = _endpoint()
    _hub()
    with calling("huggingface_hub", f"HF_ENDPOINT={shown_text(endpoint)}", "reading its settings"):
        from huggingface_hub import constants
    return constants


def _endpoint() -> str:
    """HF_ENDPOINT as huggingface_hub reads it, refused when it is not an http(s) URL."""
    endpoint = os.environ.get("HF_ENDPOINT", "").rstrip("/") or "https://huggingface.co"
    try:
        parts = urlsplit(endpoint)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and \
            endpoint.isprintable() and " " not in endpoint
    except ValueError:
        valid = False
    if not valid:
        raise BadInputError(f"HF_ENDPOINT={shown_text(endpoint)}: not an http(s) URL such as "
                            "https://huggingface.co")
    return endpoint


def cached_snapshots(ref: HubRef) -> list[str]:
    """Revisions of `ref.repo` already in the local cache (snapshot folder names)."""
    folder = Path(_constants().HF_HUB_CACHE) / f"models--{ref.repo.replace('/', '--')}" / "snapshots"
    try:
        return sorted(p.name for p in folder.iterdir() if p.is_dir())
    except OSError:
        return []


def _failure(ref: HubRef, exc: Exception, what: str,
             operation: Operation | None = None) -> TfcliError | None:
    """One line for each way the Hub is known to fail, with the fix; None for the others."""
    import httpx2
    from huggingface_hub import errors

    constants = _constants()

    if isinstance(exc, TfcliError):
        return exc
    if isinstance(exc, errors.GatedRepoError):
        return BadInputError(f"{ref}: the repository is gated: accept its licence at "
                             f"https://huggingface.co/{ref.repo} and set HF_TOKEN to a token of "
                             "that account")
    if isinstance(exc, errors.RepositoryNotFoundError):
        return BadInputError(f"{ref}: no such repository on the Hub (a private one needs "
                             "HF_TOKEN); a local folder of that name would be read instead")
    if isinstance(exc, errors.RevisionNotFoundError):
        return BadInputError(f"{ref}: no revision {ref.revision!r} in {ref.repo} (a branch, tag "
                             "or commit)")
    if isinstance(exc, errors.EntryNotFoundError) and \
            not isinstance(exc, errors.LocalEntryNotFoundError):
        return BadInputError(f"{ref}: the repository has no {what}")
    status = _http_status(exc) or (operation.last_status if operation else None)
    if status is not None:
        return _refused(ref, status)
    if isinstance(exc, httpx2.TooManyRedirects):
        return BadInputError(f"{ref}: the Hub at {constants.ENDPOINT} redirects without end "
                             f"({type(exc).__name__}); check HF_ENDPOINT")
    if isinstance(exc, httpx2.RemoteProtocolError):  # it answered, then broke off: reachable
        detail = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else "no detail"
        return BadInputError(f"{ref}: the Hub at {constants.ENDPOINT} broke off its answer "
                             f"while fetching {what} ({detail}); try again")
    if isinstance(exc, (errors.LocalEntryNotFoundError, httpx2.TransportError)):
        cached = ", ".join(cached_snapshots(ref)[:4]) or "none"
        return BadInputError(f"{ref}: cannot reach the Hub at {constants.ENDPOINT}; cached "
                             f"snapshots: {cached}; check the connection, or set "
                             "HF_HUB_OFFLINE=1 to use only the cache")
    if isinstance(exc, OSError) and exc.filename:
        return BadInputError(f"{exc.filename}: cannot write the Hub cache "
                             f"({exc.strerror or exc}); set HF_HOME to a writable folder")
    return None


def _http_status(exc: BaseException) -> int | None:
    """The HTTP status of the HfHubHTTPError `exc` is or was caused by (huggingface_hub wraps
    a 503 on HEAD in a LocalEntryNotFoundError, which reads as 'no connection')."""
    from huggingface_hub import errors

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, errors.HfHubHTTPError) and seen.response is not None:
            return int(seen.response.status_code)
        seen = seen.__cause__ or seen.__context__
    return None


def _refused(ref: HubRef, status: int) -> BadInputError:
    if status in (401, 403):
        return BadInputError(f"{ref}: the Hub refused access (HTTP {status}): set HF_TOKEN to "
                             "a token that may read it (and accept its licence if it is gated)")
    if status == 429:
        return BadInputError(f"{ref}: the Hub answered HTTP 429 (too many requests); try "
                             "again later, or set HF_TOKEN (signed-in limits are higher)")
    later = "; the Hub is failing: try again later" if status >= 500 else ""
    return BadInputError(f"{ref}: the Hub answered HTTP {status}{later}")


def _has_weights(folder: Path) -> bool:
    return (folder / "model.safetensors").is_file() or \
        (folder / "model.safetensors.index.json").is_file()


def _cache_root(ref: HubRef) -> Path:
    return Path(_constants().HF_HUB_CACHE) / f"models--{ref.repo.replace('/', '--')}"


def _cached(ref: HubRef, weights: bool) -> Path | None:
    """The cached snapshot holding what is needed, None when it is not (all) cached. A broken
    entry - an empty or garbled ref, a config.json that is a dangling link, a loop, a FIFO or a
    folder - is refused by name: re-downloading would not repair it, and it is not 'a
    repository without config.json'."""
    root = _cache_root(ref)
    revision = ref.revision or "main"
    if COMMIT_SHA.fullmatch(revision):
        sha = revision
    else:
        ref_file = root / "refs" / revision
        try:
            sha = ref_file.read_text(encoding="utf-8", errors="replace").strip()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise _broken(ref, root, f"{ref_file} cannot be read: {exc.strerror or exc}") from None
        if not COMMIT_SHA.fullmatch(sha):
            what = "is empty" if not sha else f"holds {shown_text(sha)}, not a commit sha"
            raise _broken(ref, root, f"{ref_file} {what}")
    snapshot = root / "snapshots" / sha
    config = snapshot / "config.json"
    if not snapshot.is_dir() or not (config.exists() or config.is_symlink()):
        return None
    if not config.is_file():
        from tfcli.core.files import not_regular

        raise _broken(ref, root, f"{snapshot} {not_regular(config)}")
    return snapshot if not weights or _has_weights(snapshot) else None


def _broken(ref: HubRef, root: Path, problem: str) -> BadInputError:
    return BadInputError(f"{ref}: a broken entry in the Hub cache: {problem}; delete {root} to "
                         "download it again")


def _bounds(weights: bool) -> dict[str, int | None]:
    """The most bytes tfcli reads of each file it fetches (None: the listed size bounds it)."""
    from tfcli.checkpoints.configs import MAX_CONFIG_BYTES
    from tfcli.checkpoints.eos import MAX_GENERATION_CONFIG_BYTES
    from tfcli.checkpoints.safetensors_header import MAX_INDEX_BYTES
    from tfcli.checkpoints.tokenizer import MAX_TOKENIZER_BYTES

    bounds: dict[str, int | None] = {"config.json": MAX_CONFIG_BYTES,
                                     "generation_config.json": MAX_GENERATION_CONFIG_BYTES}
    if weights:
        bounds |= {"model.safetensors.index.json": MAX_INDEX_BYTES,
                   "tokenizer.json": MAX_TOKENIZER_BYTES}
    return bounds


def _wanted(name: str, bounds: dict[str, int | None], weights: bool) -> bool:
    return name in bounds or (weights and "/" not in name and name.endswith(".safetensors"))


def _listing(hub: Any, ref: HubRef, operation: Operation) -> tuple[str, dict[str, int | None]]:
    """The revision's commit sha (checked: 40 hex digits) and the size of each file."""
    info = hub.HfApi().model_info(ref.repo, revision=ref.revision, files_metadata=True)
    if not isinstance(info.sha, str) or not COMMIT_SHA.fullmatch(info.sha):
        raise unsafe_commit(str(ref), info.sha, "its file listing (api/models)")
    sizes = {s.rfilename: (s.lfs.size if s.lfs is not None else s.size)
             for s in info.siblings or []}
    return info.sha, sizes


def _fetch(hub: Any, ref: HubRef, weights: bool, operation: Operation) -> Path:
    """Download what is missing: list the revision, check sizes, then fetch file by file."""
    sha, sizes = _listing(hub, ref, operation)
    if "config.json" not in sizes:
        raise BadInputError(f"{ref}: the repository has no config.json (not a transformers "
                            "model repository)")
    bounds = _bounds(weights)
    chosen = sorted(name for name in sizes if _wanted(name, bounds, weights))
    if weights and not any(name.endswith(".safetensors") for name in chosen):
        raise BadInputError(f"{ref}: the repository has no safetensors checkpoint "
                            "(model.safetensors or shards listed by its index)")
    for name in chosen:  # every size checked before the first byte is downloaded
        bound, size = bounds.get(name), sizes[name]
        operation.fetching(name, bound if bound is not None else size)
        if bound is not None and size is not None and size > bound:
            raise operation.too_large(size)
    if weights:
        total = sum(sizes[n] or 0 for n in chosen)
        _check_free_space(ref, total)
        operation.extend(total / FLOOR_RATE)
    for name in chosen:
        bound = bounds.get(name)
        operation.fetching(name, bound if bound is not None else sizes[name])
        hub.hf_hub_download(ref.repo, name, revision=sha)
    _remember(ref, sha)
    return _cache_root(ref) / "snapshots" / sha


def _check_free_space(ref: HubRef, listed: int) -> None:
    """A checkpoint larger than the cache's free disk space is refused before its first byte:
    it would fill the disk after hours of download (a listing may claim any size)."""
    import shutil

    folder = _cache_root(ref)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return  # unknown: the download's own writes will say it
    if listed > free:
        raise BadInputError(f"{ref}: the checkpoint is {listed:,} bytes on the Hub, more than "
                            f"the {free:,} bytes free under {folder}; not downloaded")


def _remember(ref: HubRef, sha: str) -> None:
    """refs/<branch or tag> -> sha, as huggingface_hub keeps it (it downloaded by sha)."""
    revision = ref.revision or "main"
    if revision == sha:
        return
    ref_file = _cache_root(ref) / "refs" / revision
    try:
        ref_file.parent.mkdir(parents=True, exist_ok=True)
        ref_file.write_text(sha, encoding="utf-8")
    except OSError:
        pass  # a read-only cache: the next run asks the Hub again


def _hub_operation(ref: HubRef, what: str, work: Callable[[Any, Operation], T]) -> T:
    """`work(huggingface_hub, operation)` under one budget, quiet, its failures one line each."""
    hub = _hub()
    endpoint = _endpoint()
    import huggingface_hub.file_download  # noqa: F401 - its lazy import resets the logger
    import huggingface_hub.hf_api  # noqa: F401
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, \
        enable_progress_bars

    install_hooks(hub)
    operation = Operation(str(ref), budget_override() or CONFIG_BUDGET_S)
    bars_were_off = are_progress_bars_disabled()
    if not _stderr_is_terminal():
        disable_progress_bars()  # huggingface_hub's tqdm bars only on a terminal
    try:
        with calling("huggingface_hub", f"HF_ENDPOINT={endpoint}", f"fetching {what} of {ref}"):
            try:
                return run(operation, lambda op: work(hub, op), _cache_root(ref))
            except Exception as exc:
                known = _failure(ref, exc, what, operation)
                if known is None:
                    raise
                raise known from None
    finally:
        if not bars_were_off:
            enable_progress_bars()


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _download(ref: HubRef, what: str, weights: bool) -> Path:
    """The snapshot folder holding what is needed (cache first: no request when cached)."""
    constants = _constants()
    cached = _cached(ref, weights)
    if cached is not None:
        return cached
    if constants.HF_HUB_OFFLINE:
        listed = ", ".join(cached_snapshots(ref)[:4]) or "none"
        raise BadInputError(f"{ref}: {what} is not in the local cache and HF_HUB_OFFLINE=1 "
                            f"forbids downloading it; cached snapshots: {listed}; unset "
                            "HF_HUB_OFFLINE to download")
    return _hub_operation(ref, what, lambda hub, op: _fetch(hub, ref, weights, op))


def fetch_config(ref: HubRef) -> Path:
    """A local snapshot folder holding the repository's config.json (and generation config)."""
    return _download(ref, "config.json", weights=False)


def fetch_checkpoint(ref: HubRef) -> Path:
    """A local snapshot folder holding config, safetensors weights and tokenizer."""
    return _download(ref, "its safetensors checkpoint", weights=True)


def remote_tensors(ref: HubRef) -> list[tuple[str, str, tuple[int, ...], int]] | None:
    """(name, dtype, shape, bytes) of every tensor of the repository's safetensors files, from
    their headers alone (huggingface_hub's get_safetensors_metadata: range requests, no
    tensor data); None offline (HF_HUB_OFFLINE=1: nothing may be asked)."""
    if _constants().HF_HUB_OFFLINE:
        return None

    from tfcli.checkpoints.safetensors_header import MAX_HEADER_BYTES

    def headers(hub: Any, operation: Operation) -> Any:
        operation.fetching("the safetensors headers", MAX_HEADER_BYTES)
        return hub.get_safetensors_metadata(ref.repo, revision=ref.revision)

    metadata = _hub_operation(ref, "safetensors headers", headers)
    return [(name, info.dtype, tuple(info.shape), info.data_offsets[1] - info.data_offsets[0])
            for file in metadata.files_metadata.values()
            for name, info in sorted(file.tensors.items())]
