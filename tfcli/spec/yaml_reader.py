"""YAML text -> plain Python data for a spec: YAML 1.2 core scalars, bounded work, strict numbers.

PyYAML reads YAML 1.1, whose implicit types surprise: `020` is octal 16, `1:0` is base-60 60,
`yes`/`on` are booleans, `1_000` is 1000, `2001-12-14` is a date. A spec is read by the YAML 1.2
core schema instead (`020` would be 20 there; being read differently by the two, it is refused),
and only its plain types may be tagged: no `!!timestamp`, `!!binary`, `!!set` or custom tags.

Hostile documents are refused before they cost anything: nesting beyond MAX_DEPTH (PyYAML's
composer recurses, so 1,000 levels was a RecursionError), more than MAX_NODES nodes (composed, or
after expanding aliases: nine aliases of nine aliases ... is a billion-node "billion laughs"),
recursive anchors, integers longer than MAX_INT_DIGITS digits (Python refuses to parse
4,300 digits and more) and duplicate keys (PyYAML silently keeps the last).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import yaml

from tfcli.core.errors import Problem, clip, shown

MAX_DEPTH = 16  # levels of nested lists/mappings; a spec is one flat mapping (a merge adds one)
MAX_NODES = 5_000  # YAML nodes, composed or after alias expansion; a real spec has about 100
MAX_INT_DIGITS = 30  # far beyond any size a spec states (int64 has 19 digits)

_TAG = "tag:yaml.org,2002:"
_NULL = re.compile(r"(?:~|null|Null|NULL|)\Z")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"([-+]?)([0-9]+)\Z|0o([0-7]+)\Z|0x([0-9a-fA-F]+)\Z")
_FLOAT = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z"
    r"|([-+]?)\.(?:inf|Inf|INF)\Z|(\.(?:nan|NaN|NAN))\Z"
)
_LEADING_ZERO = re.compile(r"[-+]?0[0-9]+\Z")
_PLAIN_TAGS = {f"{_TAG}{name}" for name in ("str", "int", "float", "bool", "null", "seq", "map")}
_NODE_KINDS: dict[str, type[yaml.Node]] = {
    **{f"{_TAG}{name}": yaml.ScalarNode
       for name in ("str", "int", "float", "bool", "null", "merge")},
    f"{_TAG}seq": yaml.SequenceNode,
    f"{_TAG}map": yaml.MappingNode,
}
_KIND_WORDS = {yaml.ScalarNode: "single value", yaml.SequenceNode: "list",
               yaml.MappingNode: "mapping"}


class YamlRefused(Exception):
    """The document was refused; carries the problems, each with its line and field."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems[0].message if problems else "refused")
        self.problems = problems


class SpecLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core implicit types that composes at most MAX_DEPTH levels and
    MAX_NODES nodes (it stops at the first node past either bound, so the rest is never read)."""

    yaml_implicit_resolvers: dict[Any, Any] = {}  # filled below: none of YAML 1.1's

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_DEPTH:
                raise YamlRefused([Problem("", f"nests lists or mappings more than {MAX_DEPTH} "
                                           "levels deep; a spec is a flat mapping", self._line())])
            if self._nodes > MAX_NODES:
                raise YamlRefused([_too_many_nodes("", self._line())])
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def _line(self) -> int:
        return int(self.peek_event().start_mark.line) + 1


SpecLoader.add_implicit_resolver(f"{_TAG}null", _NULL, ["~", "n", "N", ""])
SpecLoader.add_implicit_resolver(
    f"{_TAG}bool", re.compile(r"(?:true|True|TRUE|false|False|FALSE)\Z"), list("tTfF")
)
SpecLoader.add_implicit_resolver(f"{_TAG}int", _INT, list("-+0123456789"))
SpecLoader.add_implicit_resolver(f"{_TAG}float", _FLOAT, list("-+0123456789."))
SpecLoader.add_implicit_resolver(f"{_TAG}merge", re.compile(r"<<\Z"), ["<"])


def load_yaml(text: str) -> tuple[yaml.Node | None, Any]:
    """The composed root node and its constructed value (None, None for an empty document).
    Raises YamlRefused for a document outside the bounds and yaml.YAMLError for bad syntax."""
    loader = SpecLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        problems = check_tree(node)
        if problems:
            raise YamlRefused(problems)
        return node, loader.construct_document(node)
    finally:
        loader.dispose()


def check_tree(root: yaml.Node) -> list[Problem]:
    """Every problem in the composed graph, in file order: tags and scalars a spec may not
    hold, non-scalar and duplicate keys. Raises YamlRefused at once for a graph that is cyclic,
    or too big or too deep once aliases are expanded. Iterative, each node visited once, so an
    alias bomb costs its composed size."""
    expanded: dict[int, tuple[int, int]] = {}  # id(node) -> (nodes, depth) once expanded
    open_nodes: set[int] = set()  # on the current path: meeting one again is a cycle
    problems: list[Problem] = []
    stack: list[tuple[yaml.Node, str, bool]] = [(root, "", False)]
    while stack:
        node, path, finished = stack.pop()
        if finished:
            expanded[id(node)] = _expanded_size(node, path, expanded)
            open_nodes.discard(id(node))
            continue
        if id(node) in expanded:
            continue
        if id(node) in open_nodes:
            raise YamlRefused([Problem(path, "an alias refers to a node that contains it "
                                       "(a recursive anchor)", _line(node))])
        open_nodes.add(id(node))
        problems += _node_problems(node, path)
        stack.append((node, path, True))
        stack += [(child, child_path, False) for child, child_path in _children(node, path)][::-1]
    return sorted(problems, key=lambda p: p.line or 0)


def _expanded_size(
    node: yaml.Node, path: str, expanded: dict[int, tuple[int, int]]
) -> tuple[int, int]:
    """(nodes, depth) of `node` with aliases expanded, from its children's (already known)."""
    children = [expanded[id(child)] for child, _ in _children(node, path)]
    size = 1 + sum(nodes for nodes, _ in children)
    depth = 1 + max((levels for _, levels in children), default=0)
    if size > MAX_NODES:
        raise YamlRefused([_too_many_nodes(path, _line(node), " once aliases are expanded")])
    if depth > MAX_DEPTH:
        raise YamlRefused([Problem(path, f"nests more than {MAX_DEPTH} levels deep once aliases "
                                   "are expanded; a spec is a flat mapping", _line(node))])
    return size, depth


def _children(node: yaml.Node, path: str) -> Iterator[tuple[yaml.Node, str]]:
    """(child, its dotted path) for each child of a list or mapping; names in paths are cut
    short, so a 100 kB key does not make every path under it 100 kB."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key, path
            name = clip(str(key.value)) if isinstance(key, yaml.ScalarNode) else "?"
            yield value, f"{path}.{name}" if path else name
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield item, f"{path}[{index}]"


def _node_problems(node: yaml.Node, path: str) -> list[Problem]:
    if node.tag not in _PLAIN_TAGS and node.tag != f"{_TAG}merge":
        tag = node.tag.replace(_TAG, "!!", 1)
        return [Problem(path, f"tag {shown(tag)} is not allowed in a spec; write a plain "
                        "number, string, true/false, list or mapping", _line(node))]
    if _NODE_KINDS.get(node.tag, type(node)) is not type(node):
        tag = node.tag.replace(_TAG, "!!", 1)
        return [Problem(path, f"tag {tag} does not fit a {_KIND_WORDS[type(node)]}", _line(node))]
    if isinstance(node, yaml.ScalarNode):
        message = scalar_problem(node)
        return [Problem(path, message, _line(node))] if message else []
    if isinstance(node, yaml.MappingNode):
        return _key_problems(node, path)
    return []


def _key_problems(node: yaml.MappingNode, path: str) -> list[Problem]:
    """Non-scalar keys, and keys repeated within this mapping (`<<` merged keys may be
    overridden: only keys written in the mapping itself count)."""
    problems: list[Problem] = []
    first_line: dict[tuple[str, object], int] = {}
    for key, _ in node.value:
        line = _line(key)
        if not isinstance(key, yaml.ScalarNode):
            problems.append(Problem(path, "a key must be a plain name, not a list or mapping",
                                    line))
            continue
        if key.tag == f"{_TAG}merge" or scalar_problem(key):
            continue  # a bad key scalar is reported as a node of its own
        value = scalar_value(key)
        identity = (type(value).__name__, value)  # `1` and `true` stay apart
        name = clip(str(key.value))
        field = f"{path}.{name}" if path else name
        if identity in first_line:
            problems.append(Problem(field, f"duplicate key (first on line {first_line[identity]})",
                                    line))
        else:
            first_line[identity] = line
    return problems


def scalar_problem(node: yaml.ScalarNode) -> str | None:
    """Why a scalar of this tag cannot be read strictly, or None."""
    text, kind = str(node.value), node.tag.removeprefix(_TAG)
    if kind == "int":
        return _int_problem(text)
    if kind == "float" and not _FLOAT.match(text):
        return f"{shown(text)} is not a number"
    if kind == "bool" and text not in _BOOL:
        return f"{shown(text)} is not a boolean; write true or false"
    if kind == "null" and not _NULL.match(text):
        return f"{shown(text)} is not null; write null or ~"
    return None


def _int_problem(text: str) -> str | None:
    match = _INT.match(text)
    if match is None:
        return f"{shown(text)} is not an integer"
    digits = len(match.group(2) or match.group(3) or match.group(4))
    if digits > MAX_INT_DIGITS:
        return f"an integer of {digits:,} digits is out of range (at most {MAX_INT_DIGITS})"
    if _LEADING_ZERO.match(text):
        plain = str(int(text, 10))
        octal_digits = text.lstrip("0") or "0"
        octal = f", or 0o{octal_digits} for octal" if set(text) <= set("01234567") else ""
        return (f"{text}: a leading zero is ambiguous (YAML 1.1 reads octal, YAML 1.2 decimal); "
                f"write {plain}{octal}")
    return None


def scalar_value(node: yaml.ScalarNode) -> object:
    """The value of a scalar that passed scalar_problem, by its tag."""
    text, kind = str(node.value), node.tag.removeprefix(_TAG)
    if kind == "int":
        return _int_value(text)
    if kind == "float":
        return _float_value(text)
    if kind == "bool":
        return _BOOL[text]
    return None if kind == "null" else text


def _int_value(text: str) -> int:
    if text.startswith("0o"):
        return int(text[2:], 8)
    return int(text[2:], 16) if text.startswith("0x") else int(text, 10)


def _float_value(text: str) -> float:
    match = _FLOAT.match(text)
    if match and match.group(2):
        return math.nan
    if match and match.group(1) is not None:
        return -math.inf if match.group(1) == "-" else math.inf
    return float(text)


def _construct_scalar(loader: SpecLoader, node: yaml.ScalarNode) -> object:
    # check_tree has vetted every scalar; refusing here too keeps construction strict on its own.
    if not isinstance(node, yaml.ScalarNode):  # never str() a list node: its repr is unbounded
        raise yaml.constructor.ConstructorError(None, None, "expected a single value",
                                                node.start_mark)
    message = scalar_problem(node)
    if message:
        raise yaml.constructor.ConstructorError(None, None, message, node.start_mark)
    return scalar_value(node)


for _kind in ("int", "float", "bool", "null"):
    SpecLoader.add_constructor(f"{_TAG}{_kind}", _construct_scalar)


def _too_many_nodes(path: str, line: int | None, where: str = "") -> Problem:
    return Problem(path, f"has more than {MAX_NODES:,} YAML nodes{where}; a spec has about 100 "
                   "(is this a spec file?)", line)


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


# What YAML 1.1 would have read, for a hint when a field gets one of these as a string.
_YAML11_BOOL = re.compile(r"(?:y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)\Z")
_YAML11_UNDERSCORE = re.compile(r"[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?\Z")
_YAML11_BASE60 = re.compile(r"[-+]?[0-9]+(?::[0-5]?[0-9])+(?:\.[0-9_]*)?\Z")


def yaml11_hint(value: str) -> str:
    """A hint for a string that YAML 1.1 would have read as a boolean or a number."""
    if _YAML11_BOOL.match(value):
        return "; write true or false (YAML 1.2 reads yes/no/on/off as strings)"
    if "_" in value and _YAML11_UNDERSCORE.match(value):
        return f"; write {value.replace('_', '')} (digits cannot be grouped with _)"
    if _YAML11_BASE60.match(value):
        return "; base-60 numbers (1:30) are not read; write the number itself"
    return ""
