"""The package's drawing as a test: layers in one table, imports only downwards or sideways,
and no import circle.

Every tfcli/**/*.py is parsed with `ast` and every import statement is checked, wherever it
sits (module level, inside a function, under `if TYPE_CHECKING:`): an import inside a function
still runs against the order when that function is called. docs/architecture.md draws the
same table.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tfcli"


@dataclass(frozen=True)
class Layer:
    name: str
    modules: tuple[str, ...]  # the dotted prefixes it holds ("tfcli" alone: the root package)
    bans: tuple[str, ...] = ()  # libraries it must not import (a module or any submodule)


# Lowest first. A module may import its own layer and those above it in this list, never one
# below it: data flows SPEC argument -> Source -> Spec -> engine / analysis -> result -> render.
LAYERS: tuple[Layer, ...] = (
    Layer("core", ("tfcli.core",), ("rich", "typer", "yaml", "pydantic")),
    Layer("spec", ("tfcli.spec",), ("rich", "typer", "numpy")),  # counts never allocate
    Layer("engine", ("tfcli.engine",), ("rich", "typer", "yaml")),
    Layer("checkpoints", ("tfcli.checkpoints",), ("rich", "typer")),
    Layer("sources", ("tfcli.sources",), ("rich", "typer")),
    Layer("analysis", ("tfcli.analysis",), ("rich", "typer")),
    Layer("render", ("tfcli.render",), ("typer", "numpy")),  # renderers draw, never compute
    Layer("api", ("tfcli.api", "tfcli"), ("typer",)),  # may show progress and write charts
    Layer("cli", ("tfcli.cli", "tfcli.__main__")),
)

# Circles whose edges are all `if TYPE_CHECKING:` imports (no import runs), with the reason.
TYPE_ONLY_CIRCLES: dict[frozenset[str], str] = {
    frozenset({"tfcli.spec.model", "tfcli.spec.disentangled", "tfcli.spec.encoder",
               "tfcli.spec.head", "tfcli.spec.latent", "tfcli.spec.moe"}):
        "each field group's checks take the Spec they check; the Spec calls them",
}


@dataclass(frozen=True)
class Import:
    line: int
    written: str
    modules: tuple[str, ...]  # what it can load: `from a import b` is a and a.b
    type_only: bool


def module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(node: ast.ImportFrom, path: Path, package: Path) -> str:
    """The absolute module of `from ... import`, relative imports included."""
    if not node.level:
        return node.module or ""
    base = module_name(path, package).split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                inside.update(id(n) for n in ast.walk(child))
    return inside


def imports_of(path: Path, package: Path = PACKAGE) -> list[Import]:
    """Every import statement in `path`, lazy and type-only ones included."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    type_only = _type_checking_nodes(tree)
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(node.lineno, f"import {a.name}", (a.name,), id(node) in type_only)
                      for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(node, path, package)
            names = tuple(f"{module}.{a.name}" for a in node.names)
            shown = f"{'.' * node.level}{node.module or ''} import " \
                    f"{', '.join(a.name for a in node.names)}"
            found.append(Import(node.lineno, f"from {shown}", (module, *names),
                                id(node) in type_only))
    return found


def layer_of(module: str) -> int | None:
    """The index in LAYERS of a tfcli module (the longest prefix that holds it)."""
    best: tuple[int, int] | None = None
    for index, layer in enumerate(LAYERS):
        for prefix in layer.modules:
            exact_root = prefix == "tfcli"
            if module == prefix or (not exact_root and module.startswith(prefix + ".")):
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    return None if best is None else best[0]


def _banned(modules: tuple[str, ...], bans: tuple[str, ...]) -> str | None:
    return next((b for m in modules for b in bans if m == b or m.startswith(b + ".")), None)


def _modules(package: Path) -> dict[str, Path]:
    return {module_name(p, package): p for p in sorted(package.rglob("*.py"))}


def violations(package: Path = PACKAGE) -> list[str]:
    """'file:line: IMPORT (why)' for every import against the layer order or a layer's bans."""
    found = []
    for module, path in _modules(package).items():
        own = layer_of(module)
        relative = f"tfcli/{path.relative_to(package).as_posix()}"
        if own is None:
            found.append(f"{relative}:1: in no layer of LAYERS")
            continue
        for imp in imports_of(path, package):
            ban = _banned(imp.modules, LAYERS[own].bans)
            if ban:
                found.append(f"{relative}:{imp.line}: {imp.written} "
                             f"({LAYERS[own].name} must not import {ban})")
            target = _target(imp, set(_modules(package)))
            above = layer_of(target) if target else None
            if above is not None and above > own:
                found.append(f"{relative}:{imp.line}: {imp.written} ({LAYERS[own].name} "
                             f"must not import {LAYERS[above].name}: {target})")
    return found


def _target(imp: Import, modules: set[str]) -> str | None:
    """The tfcli module an import loads: `from a import b` is a.b when that is a module."""
    module, *names = imp.modules
    submodules = [n for n in names if n in modules]
    if submodules:
        return max(submodules, key=lambda n: layer_of(n) or 0)
    return module if module == "tfcli" or module.startswith("tfcli.") else None


def import_graph(package: Path = PACKAGE) -> dict[str, dict[str, bool]]:
    """module -> {module it imports: whether every such import is type-only}."""
    modules = _modules(package)
    graph: dict[str, dict[str, bool]] = {m: {} for m in modules}
    for module, path in modules.items():
        for imp in imports_of(path, package):
            _, *names = imp.modules
            targets = [n for n in names if n in modules] or \
                      [t for t in [_target(imp, set(modules))] if t in modules]
            for target in targets:
                if target != module:
                    graph[module][target] = graph[module].get(target, True) and imp.type_only
    return graph


def circles(graph: dict[str, dict[str, bool]], runtime_only: bool) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def edges(v: str) -> list[str]:
        return [w for w, type_only in graph[v].items() if not (runtime_only and type_only)]

    for root in graph:
        if root in index:
            continue
        work = [(root, iter(edges(root)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges(child))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.add(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def circle_problems(package: Path = PACKAGE,
                    allowed: dict[frozenset[str], str] = TYPE_ONLY_CIRCLES) -> list[str]:
    graph = import_graph(package)
    problems = [f"import circle at run time: {' <-> '.join(sorted(c))}"
                for c in circles(graph, runtime_only=True)]
    problems += [f"type-only import circle not in TYPE_ONLY_CIRCLES: {' <-> '.join(sorted(c))}"
                 for c in circles(graph, runtime_only=False)
                 if c not in allowed and not any(c == r for r in circles(graph, True))]
    return problems


def test_imports_follow_the_layer_order() -> None:
    found = violations()
    assert not found, "imports against the layering:\n" + "\n".join(found)


def test_no_import_circle() -> None:
    found = circle_problems()
    assert not found, "\n".join(found)


def test_every_stated_circle_still_exists() -> None:
    """A stated circle that was broken would excuse a new one of the same modules."""
    graph = import_graph()
    present = circles(graph, runtime_only=False)
    for circle in TYPE_ONLY_CIRCLES:
        assert circle in present, sorted(circle)


def test_every_layer_holds_modules() -> None:
    """A layer whose modules were renamed away would pass forever."""
    modules = _modules(PACKAGE)
    for index, layer in enumerate(LAYERS):
        assert any(layer_of(m) == index for m in modules), layer.name


def test_the_root_holds_at_most_five_modules() -> None:
    assert len(list(PACKAGE.glob("*.py"))) <= 5, sorted(p.name for p in PACKAGE.glob("*.py"))


# --- the checker itself --------------------------------------------------------------------


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    package = tmp_path / "tfcli"
    for relative, source in files.items():
        target = package / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source)
    for folder in {p.parent for p in package.rglob("*.py")} | {package}:
        (folder / "__init__.py").touch()
    return package


@pytest.mark.parametrize(("relative", "source", "line", "says"), [
    ("engine/x.py", "def f():\n    from tfcli.analysis.allocation import gb\n", 2,
     "engine must not import analysis: tfcli.analysis.allocation"),
    ("engine/x.py", "import os\nimport rich.console\n", 2, "engine must not import rich"),
    ("engine/x.py", "from tfcli import cli\n", 1, "engine must not import cli: tfcli.cli"),
    ("engine/x.py", "from ..render import output\n", 1,
     "engine must not import render: tfcli.render.output"),
    ("engine/sub/y.py", "from ...sources import resolve_source\n", 1,
     "engine must not import sources: tfcli.sources"),
    ("checkpoints/x.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                         "    from tfcli.analysis import params_report\n", 3,
     "checkpoints must not import analysis: tfcli.analysis.params_report"),
    ("render/x.py", "import numpy as np\n", 1, "render must not import numpy"),
    ("core/x.py", "from tfcli.spec.model import Spec\n", 1,
     "core must not import spec: tfcli.spec.model"),
    ("spec/x.py", "from tfcli import api\n", 1, "spec must not import api: tfcli.api"),
    ("render/x.py", "from tfcli.api.model import load\n", 1,
     "render must not import api: tfcli.api.model"),
])
def test_each_kind_of_upward_import_is_caught(tmp_path: Path, relative: str, source: str,
                                              line: int, says: str) -> None:
    """Function-level, `from pkg import mod`, relative and TYPE_CHECKING imports are all
    seen, and the message gives file:line."""
    files = {relative: source, "analysis/params_report.py": "", "analysis/allocation.py": "",
             "render/output.py": "", "sources.py": "", "api.py": "", "cli/__init__.py": "",
             "spec/model.py": "", "api/model.py": ""}
    found = violations(_package(tmp_path, files))
    assert len(found) == 1, found
    assert found[0].startswith(f"tfcli/{relative}:{line}: ")
    assert found[0].endswith(f"({says})")


def test_allowed_imports_pass(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "engine/x.py": "import numpy as np\nfrom tfcli.spec.model import Spec\n"
                       "from tfcli.engine import ops\nimport yamlish\n",
        "engine/ops.py": "", "spec/model.py": "from tfcli.core.errors import E\n",
        "core/errors.py": "", "render/x.py": "from rich.text import Text\nimport numpyro\n",
        "cli/app.py": "from tfcli import __version__\nfrom tfcli.api import load\n", "api.py": "",
    })
    assert violations(package) == []
    assert circle_problems(package) == []


def test_a_runtime_circle_is_caught_even_through_a_lazy_import(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "analysis/a.py": "from tfcli.analysis import b\n",
        "analysis/b.py": "def f():\n    from tfcli.analysis.c import g\n",
        "analysis/c.py": "from tfcli.analysis.a import h\n",
    })
    assert circle_problems(package) == [
        "import circle at run time: tfcli.analysis.a <-> tfcli.analysis.b <-> tfcli.analysis.c"]


def test_a_type_only_circle_must_be_stated(tmp_path: Path) -> None:
    package = _package(tmp_path, {
        "spec/model.py": "from tfcli.spec import moe\n",
        "spec/moe.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                       "    from tfcli.spec.model import Spec\n",
    })
    circle = frozenset({"tfcli.spec.model", "tfcli.spec.moe"})
    assert circle_problems(package, {}) == [
        "type-only import circle not in TYPE_ONLY_CIRCLES: tfcli.spec.model <-> tfcli.spec.moe"]
    assert circle_problems(package, {circle: "stated"}) == []
