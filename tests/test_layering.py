"""Imports point one way (docs/architecture picture in /work/shared/STYLE.md): a test, not a note.

Every tfcli/**/*.py is parsed with `ast` and every import statement is checked, wherever it
sits (module level, inside a function, under `if TYPE_CHECKING:`): an import inside a function
still runs upwards when that function is called.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tfcli"

# (files, as package-relative path prefixes) -> modules they must not import (a module or any
# of its submodules).
RULES: dict[str, tuple[str, ...]] = {
    "engine/": ("tfcli.analysis", "tfcli.checkpoints", "tfcli.render", "tfcli.cli.app",
                "tfcli.spec.load", "yaml", "rich", "typer"),
    "checkpoints/": ("tfcli.analysis", "tfcli.render", "tfcli.cli.app"),
    "render/": ("numpy",),
    # parameter counting is a pure function of the Spec, below everything that counts with it
    "params.py": ("tfcli.engine", "tfcli.analysis", "tfcli.checkpoints", "tfcli.render",
                  "tfcli.cli.app", "numpy"),
}


def _module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(node: ast.ImportFrom, path: Path, root: Path) -> str:
    """The absolute module of `from ... import`, relative imports included."""
    if not node.level:
        return node.module or ""
    package = _module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imported_modules(path: Path, root: Path = PACKAGE) -> list[tuple[int, str, tuple[str, ...]]]:
    """(line, import as written, modules it can load) for every import in `path`; for
    `from a import b` the modules are `a` and `a.b` (b may be a submodule)."""
    out: list[tuple[int, str, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, f"import {alias.name}", (alias.name,)) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(node, path, root)
            names = tuple(f"{module}.{alias.name}" for alias in node.names)
            shown = f"{'.' * node.level}{node.module or ''} import {', '.join(a.name for a in node.names)}"
            out.append((node.lineno, f"from {shown}", (module, *names)))
    return out


def _forbidden(modules: tuple[str, ...], banned: tuple[str, ...]) -> str | None:
    return next((b for m in modules for b in banned if m == b or m.startswith(b + ".")), None)


def violations(package: Path = PACKAGE) -> list[str]:
    """'file:line: IMPORT (RULE must not import B)' for every import statement breaking RULES."""
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        for prefix, banned in RULES.items():
            if not relative.startswith(prefix):
                continue
            for line, written, modules in imported_modules(path, package):
                hit = _forbidden(modules, banned)
                if hit:
                    found.append(f"tfcli/{relative}:{line}: {written} "
                                 f"(tfcli/{prefix} must not import {hit})")
    return found


def test_imports_point_one_way() -> None:
    found = violations()
    assert not found, "imports against the layering:\n" + "\n".join(found)


def test_every_rule_names_existing_files() -> None:
    """A rule whose files were renamed away would pass forever."""
    for prefix in RULES:
        assert any(p.relative_to(PACKAGE).as_posix().startswith(prefix)
                   for p in PACKAGE.rglob("*.py")), prefix


@pytest.mark.parametrize(("relative", "source", "line", "banned"), [
    ("engine/x.py", "def f():\n    from tfcli.analysis.allocation import gb\n", 2, "tfcli.analysis"),
    ("engine/x.py", "import os\nimport rich.console\n", 2, "rich"),
    ("engine/x.py", "from tfcli import cli\n", 1, "tfcli.cli.app"),
    ("engine/x.py", "from ..render import output\n", 1, "tfcli.render"),
    ("engine/sub/__init__.py", "from ...spec_io import load_spec\n", 1, "tfcli.spec.load"),
    ("checkpoints/x.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                         "    from tfcli.analysis import params_report\n", 3, "tfcli.analysis"),
    ("render/x.py", "import numpy as np\n", 1, "numpy"),
    ("params.py", "from tfcli.engine.weights import Weights\n", 1, "tfcli.engine"),
])
def test_each_kind_of_upward_import_is_caught(tmp_path: Path, relative: str, source: str,
                                              line: int, banned: str) -> None:
    """The checker itself: function-level, `from pkg import mod`, relative and TYPE_CHECKING
    imports are all seen, and the message gives file:line."""
    package = tmp_path / "tfcli"
    target = package / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source)
    found = violations(package)
    assert len(found) == 1, found
    assert found[0].startswith(f"tfcli/{relative}:{line}: ")
    assert found[0].endswith(f"must not import {banned})")


def test_allowed_imports_pass(tmp_path: Path) -> None:
    package = tmp_path / "tfcli"
    (package / "engine").mkdir(parents=True)
    (package / "engine" / "x.py").write_text(
        "import numpy as np\nfrom tfcli.spec.model import Spec\nfrom tfcli.engine import ops\n"
        "import yamlish\nfrom tfcli.spec.counts import components\n")
    (package / "render").mkdir()
    (package / "render" / "x.py").write_text("from rich.text import Text\nimport numpyro\n")
    assert violations(package) == []
