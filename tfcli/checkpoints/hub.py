"""Hugging Face Hub ids (`org/name`, `org/name@revision`) as SPEC arguments, through the optional
`huggingface_hub` package: cache first, `HF_HUB_OFFLINE=1` and `HF_TOKEN` respected.

`params`, `trace`, `validate` and `import-config` fetch config.json alone; `run` and `generate`
the safetensors, tokenizer and generation files too (huggingface_hub's progress bars on
stderr). Either way the result is a local snapshot folder of the Hub cache, which every other
part of tfcli reads as a model directory. Each failure is one BadInputError that says what to
do: no network, a gated or missing repository, a missing revision or file.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfcli.errors import BadInputError

HUB_EXTRA = "pip install 'tfcli[hub]'"
# owner/name as the Hub allows them, then an optional @revision (branch, tag or commit)
_HUB_ID = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95})"
                     r"(?:@(?P<revision>[\w][\w./-]{0,199}))?")
CONFIG_FILES = ["config.json", "generation_config.json"]
CHECKPOINT_FILES = [*CONFIG_FILES, "*.safetensors", "model.safetensors.index.json",
                    "tokenizer.json"]


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
    return HubRef(match.group("repo"), match.group("revision"))


def _hub() -> Any:
    try:
        import huggingface_hub
    except ImportError:
        raise BadInputError(f"a Hugging Face Hub id needs the `huggingface_hub` package; install "
                            f"it with: {HUB_EXTRA}") from None
    return huggingface_hub


@contextmanager
def _quiet() -> Iterator[None]:
    """huggingface_hub logs each retry of an unreachable endpoint; the one message is ours."""
    logger = logging.getLogger("huggingface_hub")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def cached_snapshots(ref: HubRef) -> list[str]:
    """Revisions of `ref.repo` already in the local cache (snapshot folder names)."""
    from huggingface_hub import constants

    folder = Path(constants.HF_HUB_CACHE) / f"models--{ref.repo.replace('/', '--')}" / "snapshots"
    try:
        return sorted(p.name for p in folder.iterdir() if p.is_dir())
    except OSError:
        return []


def _failure(ref: HubRef, exc: Exception, what: str) -> BadInputError:
    """One line for each way the Hub can fail, with the fix."""
    from huggingface_hub import constants, errors

    name = type(exc).__name__
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
    if isinstance(exc, errors.LocalEntryNotFoundError):
        cached = ", ".join(cached_snapshots(ref)[:4]) or "none"
        if constants.HF_HUB_OFFLINE:
            return BadInputError(f"{ref}: {what} is not in the local cache and HF_HUB_OFFLINE=1 "
                                 f"forbids downloading it; cached snapshots: {cached}; unset "
                                 "HF_HUB_OFFLINE to download")
        return BadInputError(f"{ref}: cannot reach the Hub at {constants.ENDPOINT}; cached "
                             f"snapshots: {cached}; check the connection, or set "
                             "HF_HUB_OFFLINE=1 to use only the cache")
    if isinstance(exc, errors.EntryNotFoundError):
        return BadInputError(f"{ref}: the repository has no {what}")
    if isinstance(exc, errors.HfHubHTTPError):
        status = getattr(exc.response, "status_code", "?") if exc.response is not None else "?"
        if status in (401, 403):
            return BadInputError(f"{ref}: the Hub refused access (HTTP {status}): set HF_TOKEN to "
                                 "a token that may read it (and accept its licence if it is gated)")
        return BadInputError(f"{ref}: the Hub answered HTTP {status} ({name})")
    return BadInputError(f"{ref}: cannot fetch {what} ({name}: {str(exc).splitlines()[0][:200]})")


def _has_weights(folder: Path) -> bool:
    return (folder / "model.safetensors").is_file() or \
        (folder / "model.safetensors.index.json").is_file()


def _download(ref: HubRef, files: list[str], what: str, weights: bool) -> Path:
    """The snapshot folder holding `files` (cache first: no request when they are cached)."""
    hub = _hub()
    kwargs = {"revision": ref.revision, "allow_patterns": files}
    with _quiet():
        try:
            cached = Path(hub.snapshot_download(ref.repo, local_files_only=True, **kwargs))
            if (cached / "config.json").is_file() and (not weights or _has_weights(cached)):
                return cached
        except Exception:  # not (completely) cached: ask the Hub
            pass
        try:
            folder = Path(hub.snapshot_download(ref.repo, **kwargs))
        except Exception as exc:
            raise _failure(ref, exc, what) from None
    if not (folder / "config.json").is_file():
        raise BadInputError(f"{ref}: the repository has no config.json (not a transformers "
                            "model repository)")
    return folder


def fetch_config(ref: HubRef) -> Path:
    """A local snapshot folder holding the repository's config.json (and generation config)."""
    return _download(ref, CONFIG_FILES, "config.json", weights=False)


def fetch_checkpoint(ref: HubRef) -> Path:
    """A local snapshot folder holding config, safetensors weights and tokenizer."""
    return _download(ref, CHECKPOINT_FILES, "its safetensors checkpoint", weights=True)


def repo_of_snapshot(folder: Path) -> str | None:
    """`org/name` when `folder` is a snapshot of the Hub cache (models--org--name/snapshots/x)."""
    parts = folder.resolve().parts if folder.exists() else folder.parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        return parts[-3].removeprefix("models--").replace("--", "/", 1)
    return None



def remote_tensors(ref: HubRef) -> list[tuple[str, str, tuple[int, ...], int]] | None:
    """(name, dtype, shape, bytes) of every tensor of the repository's safetensors files, from
    their headers alone (huggingface_hub's get_safetensors_metadata: range requests, no
    tensor data); None offline (HF_HUB_OFFLINE=1: nothing may be asked)."""
    hub = _hub()
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return None
    with _quiet():
        try:
            metadata = hub.get_safetensors_metadata(ref.repo, revision=ref.revision)
        except Exception as exc:
            raise _failure(ref, exc, "safetensors headers") from None
    return [(name, info.dtype, tuple(info.shape), info.data_offsets[1] - info.data_offsets[0])
            for file in metadata.files_metadata.values()
            for name, info in sorted(file.tensors.items())]
