"""Reading specs: YAML text -> Spec, with every problem tied to a file, line and field.

The bundled specs (tfcli/specs/) and spec files; what kind of SPEC argument names them is
tfcli.sources' question, asked once.
"""

from __future__ import annotations

import difflib
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
from tfcli.core.files import file_kind
from tfcli.spec.model import FIELD_NAMES, Spec
from tfcli.spec.yaml_reader import SpecLoader, YamlRefused, load_yaml, yaml11_hint

_Loader = SpecLoader  # the loader of spec files, for code that reads a spec's raw mapping

BUNDLED_DIR = "specs"  # tfcli/specs/, also reachable as the top-level specs/ link
MAX_SPEC_BYTES = 256 * 1024  # bundled specs are 1-2 kB; reading is bounded, /dev/zero included
MAX_SUGGESTED = 100  # unknown keys that get a did-you-mean; past that it is not a spec anyway
MAX_SUGGEST_CHARS = 64  # longer words are not compared (difflib's cost grows with length)


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
        raise BadInputError(f"no bundled spec {shown(name, 60)}{did_you_mean(name, names)} "
                            f"(`tfcli specs` lists them)")
    return bundled_spec_path(name).read_text(encoding="utf-8")


def is_bundled_name(arg: str) -> bool:
    return "/" not in arg and not arg.endswith((".yaml", ".yml")) and arg in bundled_spec_names()


def load_spec_file(path: Path) -> Spec:
    """A YAML spec file -> Spec (bounded read, problems tied to lines and fields)."""
    return parse_spec_text(_read_text(path), source=str(path))


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
    kind = file_kind(info.st_mode)
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
        return Problem(field, f"unknown field{did_you_mean(loc[-1] if loc else '', names)}", line)
    if err["type"] == "missing":
        return Problem(field, "is required", None)
    value = err.get("input")
    hint = ""
    if err["type"] == "literal_error" and isinstance(value, str) and loc:
        hint = did_you_mean(value, _literal_choices(loc))  # swiglue -> swiglu
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


def did_you_mean(word: str, choices: tuple[str, ...] | list[str]) -> str:
    close = _closest(word, choices)
    return f"; did you mean '{close}'?" if close else ""


def _closest(word: str, choices: tuple[str, ...] | list[str]) -> str | None:
    if len(word) > MAX_SUGGEST_CHARS:  # no field or bundled name is this long
        return None
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return close[0] if close else None

