"""`Array` has one home, tfcli/core/arrays.py: no other module declares its own alias (ast)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "tfcli"


def alias_declarations(package: Path = PACKAGE) -> list[str]:
    """'file:line' of every module-level assignment to the name Array outside tfcli/core/arrays.py."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if path == package / "core" / "arrays.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign) else [])
            if any(isinstance(t, ast.Name) and t.id == "Array" for t in targets):
                found.append(f"{path.relative_to(package.parent)}:{node.lineno}")
    return found


def test_array_is_declared_once() -> None:
    assert alias_declarations() == []


def test_a_second_declaration_is_found(tmp_path: Path) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "arrays.py").write_text("import numpy as np\nArray = np.ndarray\n")
    (tmp_path / "m.py").write_text("import numpy as np\n\nArray = np.ndarray\n")
    assert alias_declarations(tmp_path) == [f"{tmp_path.name}/m.py:3"]
