"""Reading specs: YAML text -> Spec, with every problem tied to a file, line and field.

A spec argument is a path to a YAML file, the name of a bundled spec (`gpt2`), or a Hugging Face
model directory holding config.json (handled by tfcli.checkpoints).
"""

from __future__ import annotations

import difflib
import re
import typing
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from tfcli.errors import Problem, SpecConsistencyError, SpecError
from tfcli.spec import FIELD_NAMES, Spec

BUNDLED_DIR = "specs"  # tfcli/specs/, also reachable as the top-level specs/ link


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads `1e-5` as a float (YAML 1.1 insists on `1.0e-5`)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+$"),
    list("-+0123456789."),
)


def bundled_spec_names() -> list[str]:
    """Names of the specs shipped inside the package, sorted."""
    folder = resources.files("tfcli").joinpath(BUNDLED_DIR)
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def bundled_spec_path(name: str) -> Path:
    return Path(str(resources.files("tfcli").joinpath(BUNDLED_DIR).joinpath(f"{name}.yaml")))


def resolve_spec_path(arg: str) -> Path:
    """A path as given, or the bundled spec of that name; a clear error otherwise."""
    path = Path(arg)
    if path.exists():
        return path
    if "/" not in arg and not arg.endswith((".yaml", ".yml")) and arg in bundled_spec_names():
        return bundled_spec_path(arg)
    names = bundled_spec_names()
    hint = _did_you_mean(arg, names)
    raise SpecError(arg, [Problem("", f"no such file or bundled spec{hint} (bundled: {', '.join(names)})")])


def load_spec(arg: str) -> Spec:
    """Load a spec from a path, a bundled name, or a Hugging Face model directory."""
    path = resolve_spec_path(arg)
    if path.name == "config.json" and path.is_file():  # a model directory's config, named
        path = path.parent
    if path.is_dir():
        if (path / "config.json").is_file():
            from tfcli.checkpoints import spec_from_config_dir  # only when a directory is given

            return spec_from_config_dir(path)
        raise SpecError(arg, [Problem("", "is a directory without config.json, not a spec file")])
    return parse_spec_text(_read_text(path), source=str(path))


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(str(path), [Problem("", f"cannot be read: {exc.strerror or exc}")]) from exc
    if b"\x00" in data:
        raise SpecError(str(path), [Problem("", "is a binary file, not a YAML spec")])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(str(path), [Problem("", f"is not UTF-8 text (byte {exc.start})")]) from exc


def parse_spec_text(text: str, source: str = "<spec>") -> Spec:
    """YAML text -> validated Spec, or a SpecError naming lines and fields."""
    data, lines = _parse_yaml(text, source)
    try:
        return Spec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(source, _problems(exc, lines)) from None
    except SpecConsistencyError as exc:
        raise SpecError(source, [Problem(exc.field, exc.detail, lines.get(exc.field))]) from None


def _parse_yaml(text: str, source: str) -> tuple[dict[str, Any], dict[str, int]]:
    """The top-level mapping and the 1-based line of each of its keys."""
    try:
        node = yaml.compose(text, Loader=_Loader)
        duplicates = _duplicate_keys(node, "") if node is not None else []
        data = yaml.load(text, Loader=_Loader) if node is not None and not duplicates else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(source, [Problem("", f"YAML syntax error: {reason}", line)]) from None
    if duplicates:
        raise SpecError(source, duplicates)
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


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _duplicate_keys(node: yaml.Node, path: str, seen: set[int] | None = None) -> list[Problem]:
    """A Problem for every key repeated within one mapping, at any depth, in file order.

    PyYAML keeps the last of two equal keys without a word, so a forgotten earlier line would
    silently lose to a later one. Checked on the composed nodes, where each key still has its
    line and the dotted path is known. `<<` merge keys may legitimately be overridden, so only
    keys written in the mapping itself count.
    """
    seen = set() if seen is None else seen
    if id(node) in seen:  # an alias of a node already checked (anchors may even be recursive)
        return []
    seen.add(id(node))
    problems: list[Problem] = []
    if isinstance(node, yaml.MappingNode):
        first_line: dict[object, int] = {}
        for key_node, value_node in node.value:
            name = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            field = f"{path}.{name}" if path else name
            key = _key_identity(key_node)
            line = key_node.start_mark.line + 1
            if key is not None and key in first_line:
                message = f"duplicate key (first on line {first_line[key]})"
                problems.append(Problem(field, message, line))
            elif key is not None:
                first_line[key] = line
            problems += _duplicate_keys(value_node, field, seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            problems += _duplicate_keys(item, f"{path}[{index}]", seen)
    return problems


def _key_identity(key_node: yaml.Node) -> tuple[str, object] | None:
    """What makes two keys equal: their constructed values (`n_layers` == `"n_layers"`), keyed
    by kind so that `1` and `true` stay apart. None for keys that cannot collide: merge keys,
    and non-scalar keys (the loader rejects those itself)."""
    if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
        return None
    value = _Loader("").construct_object(key_node, deep=True)
    return (type(value).__name__, value)


def _problems(exc: ValidationError, lines: dict[str, int]) -> list[Problem]:
    """Pydantic errors as Problems, in file order. A 'missing' field that a misspelt key was
    meant to be (n_head -> n_heads) is one mistake, so only the did-you-mean is reported."""
    errors = exc.errors()
    misspelt = {
        close[0]
        for err in errors if err["type"] == "extra_forbidden" and err["loc"]
        for close in [difflib.get_close_matches(str(err["loc"][0]), FIELD_NAMES, n=1, cutoff=0.6)]
        if close
    }
    problems = [
        _problem_from_pydantic(err, lines)
        for err in errors
        if not (err["type"] == "missing" and err["loc"] and err["loc"][0] in misspelt)
    ]
    return sorted(problems, key=lambda p: p.line if p.line is not None else 10**9)


def _problem_from_pydantic(err: Any, lines: dict[str, int]) -> Problem:
    loc = err.get("loc", ())
    field = str(loc[0]) if loc else ""
    line = lines.get(field)
    if err["type"] == "extra_forbidden":
        return Problem(field, f"unknown field{_did_you_mean(field, FIELD_NAMES)}", line)
    if err["type"] == "missing":
        return Problem(field, "is required", None)
    value = err.get("input")
    shown = repr(value) if not isinstance(value, dict) else "a mapping"
    hint = ""
    if err["type"] == "literal_error" and isinstance(value, str):
        hint = _did_you_mean(value, _literal_choices(field))  # swiglue -> swiglu
    return Problem(field, f"{_message(err)} (got {shown}){hint}", line)


def _literal_choices(field: str) -> list[str]:
    """The allowed strings of a Literal[...] (or Literal[...] | None) spec field."""
    info = Spec.model_fields.get(field)
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
    return message.replace("Input should be", "must be")


def _did_you_mean(word: str, choices: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""
