"""The SPEC argument, resolved once: what it names and where.

    source = resolve_source("meta-llama/Llama-3.2-1B@main")
    source.kind            # SourceKind.hub
    spec = source.load_spec()

A SPEC argument is, in this order: a bundled spec's name (`gpt2`: a local folder of that name
does not shadow it; `./gpt2` names the folder), a local path (a YAML spec, a model directory
holding config.json, a config.json itself, a GGUF file known by its magic), or a Hugging Face
Hub id (`org/name[@revision]`). Everything downstream - counts, the stored-weights section,
the memory planner's fused layouts, the weights `run` and `generate` load - reads the Source
instead of looking at the path again.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from tfcli.core.errors import Problem, SpecError, clip, shown
from tfcli.core.files import not_regular

if TYPE_CHECKING:
    from tfcli.checkpoints.hub import HubRef
    from tfcli.spec.model import Spec


MODEL_CONFIG = "config.json"  # what makes a folder a Hugging Face model directory


class SourceKind(str, Enum):
    """What a SPEC argument names."""

    bundled = "bundled"  # a spec shipped in tfcli/specs/
    yaml = "yaml"  # a spec file
    model_dir = "model_dir"  # a folder holding config.json (and, maybe, its weights)
    config = "config"  # a config.json named by itself: the architecture, not the checkpoint
    gguf = "gguf"  # a GGUF file: metadata, tokenizer and weights in one
    hub = "hub"  # a Hugging Face Hub id, fetched to the Hub cache when read


@dataclass(frozen=True)
class Source:
    """A resolved SPEC argument. `path` is where it lies on disk (as given, for files and
    folders; the config's folder for `config`); None for a Hub id until it is fetched."""

    argument: str
    kind: SourceKind
    path: str | None
    hub: HubRef | None = None

    @property
    def has_weights(self) -> bool:
        """Whether `run` and `generate` load its weights instead of drawing random ones."""
        return self.kind in (SourceKind.model_dir, SourceKind.gguf, SourceKind.hub)

    @property
    def config_dir(self) -> str | None:
        """The folder of its config.json, for a model directory or a named config.json."""
        return self.path if self.kind in (SourceKind.model_dir, SourceKind.config) else None

    def load_spec(self) -> Spec:
        """The Spec it describes (a Hub id: its config.json, fetched alone)."""
        if self.kind is SourceKind.hub:
            return self.with_config().load_spec()
        assert self.path is not None
        if self.kind in (SourceKind.model_dir, SourceKind.config):
            from tfcli.checkpoints import spec_from_config_dir  # only when a folder is given

            return spec_from_config_dir(self.path)  # as given: '' is refused, not the cwd
        if self.kind is SourceKind.gguf:
            from tfcli.checkpoints.gguf.spec import spec_from_gguf_file  # GGUF files only

            return spec_from_gguf_file(self.path)
        from tfcli.spec.load import load_spec_file  # yaml and pydantic: only when a spec is read

        return load_spec_file(Path(self.path))

    def with_config(self) -> Source:
        """A Hub id's config.json in the Hub cache, as a `config` Source (others: itself)."""
        if self.kind is not SourceKind.hub:
            return self
        from tfcli.checkpoints.hub import fetch_config

        assert self.hub is not None
        return replace(self, kind=SourceKind.config, path=str(fetch_config(self.hub)))

    def with_checkpoint(self) -> Source:
        """A Hub id's whole checkpoint in the Hub cache, as a model directory (others: itself)."""
        if self.kind is not SourceKind.hub:
            return self
        from tfcli.checkpoints.hub import fetch_checkpoint

        assert self.hub is not None
        return replace(self, kind=SourceKind.model_dir, path=str(fetch_checkpoint(self.hub)))


def resolve_source(argument: str) -> Source:
    """What `argument` names, or a SpecError saying why it names nothing."""
    from tfcli.spec.load import bundled_spec_names, bundled_spec_path, did_you_mean, is_bundled_name

    if not argument:  # Path('') is the current folder: `tfcli run ""` would load whatever is here
        raise SpecError("''", [Problem("", "an empty spec name: give a spec file, a bundled "
                                           "spec name or a model directory")])
    if is_bundled_name(argument):
        return Source(argument, SourceKind.bundled, str(bundled_spec_path(argument)))
    if _exists(argument):
        return _local(argument)
    ref = _hub_ref(argument)
    if ref is not None:
        return Source(argument, SourceKind.hub, None, ref)
    names = bundled_spec_names()
    # the did-you-mean, and `tfcli specs` for the list: 50 names would be a paragraph
    raise SpecError(argument, [Problem("", f"no such file, bundled spec or Hub id (org/name)"
                                           f"{did_you_mean(argument, names)} (`tfcli specs` "
                                           f"lists the {len(names)} bundled specs)")])


def resolve_checkpoint(argument: str) -> Source:
    """What `tfcli import-config DIR` reads: a Hub id, a GGUF file, else a model directory
    (not checked here: reading its config.json says what is wrong with it). A bundled name is
    no checkpoint, so `gpt2` is the folder ./gpt2."""
    from tfcli.spec.load import is_bundled_name

    if argument and not is_bundled_name(argument) and not _exists(argument):
        ref = _hub_ref(argument)
        if ref is not None:
            return Source(argument, SourceKind.hub, None, ref)
    from tfcli.checkpoints.gguf.file import is_gguf

    if is_gguf(argument):
        return Source(argument, SourceKind.gguf, argument)
    return Source(argument, SourceKind.model_dir, argument)


def load_spec(argument: str) -> Spec:
    """The Spec a SPEC argument names: resolve_source(argument).load_spec()."""
    return resolve_source(argument).load_spec()


def is_model_dir(path: str | os.PathLike[str]) -> bool:
    """A Hugging Face model directory: a folder holding config.json."""
    folder = Path(path)
    try:
        return folder.is_dir() and (folder / MODEL_CONFIG).is_file()
    except OSError:  # a name too long, an unsearchable parent: not one (resolving says why)
        return False


def _local(argument: str) -> Source:
    path = Path(argument)
    if path.name == MODEL_CONFIG and path.is_file():  # a model directory's config, named
        return Source(argument, SourceKind.config, str(path.parent))
    if is_model_dir(path):
        return Source(argument, SourceKind.model_dir, argument)
    if path.is_dir():
        problem = not_regular(path / MODEL_CONFIG, dangling=False)
        raise SpecError(argument, [Problem("", problem or "is a directory without config.json, "
                                                          "not a spec file")])
    from tfcli.checkpoints.gguf.file import is_gguf  # known by its magic, not its name

    if is_gguf(path):
        return Source(argument, SourceKind.gguf, argument)
    return Source(argument, SourceKind.yaml, argument)


def _hub_ref(argument: str) -> HubRef | None:
    from tfcli.checkpoints.hub import parse_hub_id  # no huggingface_hub import here

    return parse_hub_id(argument)


def _exists(argument: str) -> bool:
    try:
        if Path(argument).exists():
            return True
        _check_links(Path(argument))
        return False
    except OSError as exc:  # ENAMETOOLONG, EACCES on a parent: exists() only hides ENOENT & co
        raise SpecError(argument, [Problem("", f"cannot be read: {exc.strerror or exc}")]) from None


def _check_links(path: Path) -> None:
    """SpecError when `path` is missing because a symlink on it is broken: a loop, or a link
    to nothing. exists() says False for both, which read as 'no such file' (or, for
    `loop/x`, as a Hub id to fetch) when the user named a local path."""
    for part in (*reversed(path.parents), path):
        try:
            if not part.is_symlink():
                continue
            os.stat(part)
        except OSError as exc:
            link = "is" if part == path else f"goes through {clip(str(part))}, which is"
            if exc.errno == errno.ELOOP:
                problem = f"{link} a symlink loop ({exc.strerror})"
            elif exc.errno == errno.ENOENT and part.is_symlink():
                problem = f"{link} a symlink to {shown(os.readlink(part))}, which does not exist"
            else:
                return  # a missing parent: plainly no such file
            raise SpecError(str(path), [Problem("", problem)]) from None
