"""Reading specs: YAML text -> Spec, with every problem tied to a file, line and field.

A spec argument is a path to a YAML file, the name of a bundled spec (`gpt2`), or a Hugging Face
model directory holding config.json (handled by tfcli.checkpoints).
"""

from __future__ import annotations

import difflib
import errno
import os
import stat
import typing
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from tfcli.core.errors import (
    MAX_SHOWN_PROBLEMS,
    BadInputError,
    Problem,
    SpecConsistencyError,
    SpecError,
    clip,
    shown,
)
from tfcli.spec.model import FIELD_NAMES, Spec
from tfcli.spec.yaml_reader import SpecLoader, YamlRefused, load_yaml, yaml11_hint

_Loader = SpecLoader  # the loader of spec files, for code that reads a spec's raw mapping

BUNDLED_DIR = "specs"  # tfcli/specs/, also reachable as the top-level specs/ link
MODEL_CONFIG = "config.json"  # what makes a folder a Hugging Face model directory
MAX_SPEC_BYTES = 256 * 1024  # bundled specs are 1-2 kB; reading is bounded, /dev/zero included
MAX_SUGGESTED = 100  # unknown keys that get a did-you-mean; past that it is not a spec anyway
MAX_SUGGEST_CHARS = 64  # longer words are not compared (difflib's cost grows with length)
_FILE_KINDS = (  # (test, words) for what a spec path may be instead of a regular file
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def bundled_spec_names() -> list[str]:
    """Names of the specs shipped inside the package, sorted."""
    folder = resources.files("tfcli").joinpath(BUNDLED_DIR)
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def bundled_spec_path(name: str) -> Path:
    return Path(str(resources.files("tfcli").joinpath(BUNDLED_DIR).joinpath(f"{name}.yaml")))


def bundled_spec_text(name: str) -> str:
    """A bundled spec's YAML exactly as shipped, comments and sources included (`tfcli specs
    NAME`: the file to start a new spec from, where no git checkout has specs/)."""
    if not is_bundled_name(name):
        names = bundled_spec_names()
        raise BadInputError(f"no bundled spec {shown(name, 60)}{_did_you_mean(name, names)} "
                            f"(`tfcli specs` lists them)")
    return bundled_spec_path(name).read_text(encoding="utf-8")


def is_bundled_name(arg: str) -> bool:
    return "/" not in arg and not arg.endswith((".yaml", ".yml")) and arg in bundled_spec_names()


def _exists(arg: str) -> bool:
    try:
        if Path(arg).exists():
            return True
        _check_links(Path(arg))
        return False
    except OSError as exc:  # ENAMETOOLONG, EACCES on a parent: exists() only hides ENOENT & co
        raise SpecError(arg, [Problem("", f"cannot be read: {exc.strerror or exc}")]) from None


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


def hub_ref(arg: str) -> Any:
    """The Hub reference (tfcli.checkpoints.hub.HubRef) `arg` names, or None: an argument is a
    Hub id only when it is neither a bundled name nor a local path (see resolve_spec_path)."""
    if not arg or is_bundled_name(arg) or _exists(arg):
        return None
    from tfcli.checkpoints.hub import parse_hub_id  # no huggingface_hub import here

    return parse_hub_id(arg)


def resolve_spec_path(arg: str) -> Path:
    """Where a SPEC argument's spec comes from, in this order: a bundled name (`gpt2`: a local
    folder of that name does not shadow it; `./gpt2` names the folder), a local file or model
    directory, then a Hugging Face Hub id (`org/name[@revision]`: its config.json, fetched to
    the Hub cache, whose snapshot folder is returned). A clear error otherwise."""
    if not arg:  # Path('') is the current folder: `tfcli run ""` would load whatever is here
        raise SpecError("''", [Problem("", "an empty spec name: give a spec file, a bundled "
                                           "spec name or a model directory")])
    if is_bundled_name(arg):
        return bundled_spec_path(arg)
    if _exists(arg):
        return Path(arg)
    ref = hub_ref(arg)
    if ref is not None:
        from tfcli.checkpoints.hub import fetch_config

        return fetch_config(ref)
    names = bundled_spec_names()
    hint = _did_you_mean(arg, names)
    raise SpecError(arg, [Problem("", f"no such file, bundled spec or Hub id (org/name){hint} "
                                      f"(bundled: {', '.join(names)})")])


def is_model_dir(path: str | os.PathLike[str]) -> bool:
    """A Hugging Face model directory: a folder holding config.json (the spec argument of a
    checkpoint, whose weights `run` and `generate` then load from the same folder)."""
    path = Path(path)
    try:
        return path.is_dir() and (path / MODEL_CONFIG).is_file()
    except OSError:  # a name too long, an unsearchable parent: not one (load_spec says why)
        return False


def _is_gguf(path: Path) -> bool:
    """A GGUF checkpoint (llama.cpp's format), known by its magic, not its name."""
    from tfcli.checkpoints.gguf.file import is_gguf

    return is_gguf(path)


def load_spec(arg: str) -> Spec:
    """Load a spec from a path, a bundled name, or a Hugging Face model directory."""
    path = resolve_spec_path(arg)
    if path.name == MODEL_CONFIG and path.is_file():  # a model directory's config, named
        path = path.parent
    if is_model_dir(path):
        from tfcli.checkpoints import spec_from_config_dir  # only when a directory is given

        return spec_from_config_dir(path)
    if path.is_dir():
        raise SpecError(arg, [Problem("", _without_config(path))])
    if _is_gguf(path):
        from tfcli.checkpoints.gguf.spec import spec_from_gguf_file  # GGUF files only

        return spec_from_gguf_file(str(path))
    return parse_spec_text(_read_text(path), source=str(path))


def _without_config(path: Path) -> str:
    """Why a folder is not a model directory: no config.json, or one that is not a file (a
    symlink to nothing reads as none here: tests/cli/test_hostile_sweep2.py)."""
    problem = config_problem(path, dangling=False)
    return problem or "is a directory without config.json, not a spec file"


def config_problem(folder: Path, dangling: bool = True) -> str | None:
    """What `folder`'s config.json is instead of a regular file (a loop, a FIFO, a folder and,
    with `dangling`, a symlink to nothing), as a clause after the folder's name; None when it
    is a regular file or absent. The Hub cache's snapshots are described with it too."""
    config = folder / MODEL_CONFIG
    try:
        info = os.stat(config)
    except FileNotFoundError:  # none, or a symlink to nothing
        if dangling and config.is_symlink():
            return f"its {MODEL_CONFIG} is a symlink to {shown(os.readlink(config))}, which " \
                   "does not exist"
        return None
    except OSError as exc:  # a symlink loop, an unsearchable folder
        return f"its {MODEL_CONFIG} cannot be read: {exc.strerror or exc}"
    if stat.S_ISREG(info.st_mode):
        return None
    kinds = ((stat.S_ISDIR, "a directory"), *_FILE_KINDS)
    kind = next((words for test, words in kinds if test(info.st_mode)), "not a regular file")
    return f"its {MODEL_CONFIG} is {kind}, not a JSON file"


def _read_text(path: Path) -> str:
    data = _read_bounded(path)
    if b"\x00" in data:
        raise SpecError(str(path), [Problem("", "is a binary file, not a YAML spec")])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(str(path), [Problem("", f"is not UTF-8 text (byte {exc.start})")]) from exc


def _read_bounded(path: Path) -> bytes:
    """At most MAX_SPEC_BYTES of a regular file. Anything else is refused before it is opened:
    reading /dev/zero never ends, opening a FIFO waits for a writer, a device may act on open.
    O_NONBLOCK and a second look at the opened file cover a swap between the two looks."""
    try:
        _check_regular(path, os.stat(path))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as handle:
            _check_regular(path, os.fstat(handle.fileno()))
            data = handle.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        problem = Problem("", f"cannot be read: {exc.strerror or exc}")
        raise SpecError(str(path), [problem]) from None
    if len(data) > MAX_SPEC_BYTES:  # the file grew, or it is a /proc file that reports size 0
        raise SpecError(str(path), [_too_big(f"is larger than {MAX_SPEC_BYTES:,} bytes")])
    return data


def _check_regular(path: Path, info: os.stat_result) -> None:
    if stat.S_ISREG(info.st_mode):
        if info.st_size > MAX_SPEC_BYTES:
            raise SpecError(str(path), [_too_big(f"is {info.st_size:,} bytes")])
        return
    kind = next((words for test, words in _FILE_KINDS if test(info.st_mode)), "not a regular file")
    problem = Problem("", f"is {kind}, not a spec file; save the spec to a file")
    raise SpecError(str(path), [problem])


def _too_big(size: str) -> Problem:
    return Problem("", f"{size}; a spec file may be at most {MAX_SPEC_BYTES:,} bytes "
                   f"({MAX_SPEC_BYTES // 1024} KiB) - is this a spec?")


def parse_spec_text(text: str, source: str = "<spec>") -> Spec:
    """YAML text -> validated Spec, or a SpecError naming lines and fields."""
    if len(text) > MAX_SPEC_BYTES:
        raise SpecError(source, [_too_big(f"is {len(text):,} characters")])
    data, lines = _parse_yaml(text, source)
    try:
        return Spec.model_validate(data)
    except ValidationError as exc:
        problems, omitted = _problems(exc, lines)
        raise SpecError(source, problems, omitted) from None
    except SpecConsistencyError as exc:
        line = lines.get(exc.field.split(".")[0])  # a nested field: its top-level key's line
        raise SpecError(source, [Problem(exc.field, exc.detail, line)]) from None


def _parse_yaml(text: str, source: str) -> tuple[dict[str, Any], dict[str, int]]:
    """The top-level mapping and the 1-based line of each of its keys."""
    try:
        node, data = load_yaml(text)
    except YamlRefused as exc:
        raise SpecError(source, exc.problems) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else _reader_line(exc, text)
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        # PyYAML quotes the offending anchor or character: a 100 kB alias name stays 100 kB.
        raise SpecError(source, [Problem("", f"YAML syntax error: {clip(reason)}", line)]) from None
    except ValueError as exc:  # PyYAML int()s a %YAML directive's version: 5,000 digits raise
        raise SpecError(source, [Problem("", f"YAML syntax error: {clip(str(exc))}", 1)]) from None
    if data is None:
        raise SpecError(source, [Problem("", "is empty; expected a mapping of spec fields")])
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        kind = type(data).__name__
        raise SpecError(source, [Problem("", f"must be a mapping of spec fields, got a {kind}", 1)])
    lines = {str(k.value): k.start_mark.line + 1 for k, _ in node.value}
    bad_keys = [k for k in data if not isinstance(k, str)]
    if bad_keys:
        key = bad_keys[0]
        raise SpecError(source, [Problem(str(key), "field names must be strings", lines.get(str(key)))])
    return data, lines


def _reader_line(exc: yaml.YAMLError, text: str) -> int | None:
    """The line of a character PyYAML's reader refused (ESC, BEL): it gives only an offset."""
    position = getattr(exc, "position", None)
    return text.count("\n", 0, position) + 1 if isinstance(position, int) else None


def _problems(exc: ValidationError, lines: dict[str, int]) -> tuple[list[Problem], int]:
    """The first MAX_SHOWN_PROBLEMS pydantic errors as Problems, in file order, and how many
    more there are. A 'missing' field that a misspelt key was meant to be (n_head -> n_heads) is
    one mistake, so only the did-you-mean is reported. Only the first MAX_SUGGESTED unknown keys
    are compared with the field names, so 2,000 of them cost no more than 100."""
    errors = exc.errors(include_url=False)
    unknown = [str(err["loc"][0]) for err in errors
               if err["type"] == "extra_forbidden" and err["loc"]]
    misspelt = {_closest(name, FIELD_NAMES) for name in unknown[:MAX_SUGGESTED]} - {None}
    kept = [err for err in errors
            if not (err["type"] == "missing" and err["loc"] and err["loc"][0] in misspelt)]
    kept.sort(key=lambda err: lines.get(str(err["loc"][0]) if err["loc"] else "", 10**9))
    problems = [_problem_from_pydantic(err, lines) for err in kept[:MAX_SHOWN_PROBLEMS]]
    return problems, len(kept) - len(problems)


def _problem_from_pydantic(err: Any, lines: dict[str, int]) -> Problem:
    loc = tuple(str(part) for part in err.get("loc", ()))
    field = ".".join(loc)  # a nested model's field: rope_scaling.factor
    line = lines.get(loc[0]) if loc else None
    if err["type"] == "extra_forbidden":
        names = tuple(_model_at(loc[:-1]).model_fields) if loc else FIELD_NAMES
        return Problem(field, f"unknown field{_did_you_mean(loc[-1] if loc else '', names)}", line)
    if err["type"] == "missing":
        return Problem(field, "is required", None)
    value = err.get("input")
    hint = ""
    if err["type"] == "literal_error" and isinstance(value, str) and loc:
        hint = _did_you_mean(value, _literal_choices(loc))  # swiglue -> swiglu
    elif err["type"] in _TYPE_ERRORS and isinstance(value, str):
        hint = yaml11_hint(value)  # `bias: yes`, `n_layers: 1_000`: numbers in YAML 1.1 only
    return Problem(field, f"{_message(err)} (got {shown(value)}){hint}", line)


_TYPE_ERRORS = frozenset({"int_type", "bool_type", "float_type"})


def _model_at(loc: tuple[str, ...]) -> type[BaseModel]:
    """The model class of the mapping at `loc`: Spec at the top, a nested model below a field
    whose type is one (rope_scaling -> RopeScaling)."""
    model: type[BaseModel] = Spec
    for part in loc:
        info = model.model_fields.get(part)
        nested = [a for a in typing.get_args(info.annotation) if isinstance(a, type)
                  and issubclass(a, BaseModel)] if info is not None else []
        if not nested:
            return model
        model = nested[0]
    return model


def _literal_choices(loc: tuple[str, ...]) -> list[str]:
    """The allowed strings of a Literal[...] (or Literal[...] | None) spec field."""
    info = _model_at(loc[:-1]).model_fields.get(loc[-1])
    if info is None:
        return []
    pending, choices = [info.annotation], []
    while pending:
        annotation = pending.pop()
        args = typing.get_args(annotation)
        if typing.get_origin(annotation) is typing.Literal:
            choices += [a for a in args if isinstance(a, str)]
        else:
            pending += args  # a union: look inside each member
    return choices


def _message(err: Any) -> str:
    message = str(err["msg"])
    if err["type"] == "literal_error":
        return message.replace("Input should be", "must be one of")
    return message.replace("Input should be", "must be").replace("String should have", "must have")


def _did_you_mean(word: str, choices: tuple[str, ...] | list[str]) -> str:
    close = _closest(word, choices)
    return f"; did you mean '{close}'?" if close else ""


def _closest(word: str, choices: tuple[str, ...] | list[str]) -> str | None:
    if len(word) > MAX_SUGGEST_CHARS:  # no field or bundled name is this long
        return None
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return close[0] if close else None
