"""The engine's call structure, checked by parsing its source: every function (methods and
nested helpers included) takes at most MAX_PARAMETERS parameters. A group of values that
travels together is one object (StackInput, ScoreMask, GenerationRequest, ModelInput), not one
more keyword threaded through every level."""

from __future__ import annotations

import ast
from pathlib import Path

import tfcli.engine

MAX_PARAMETERS = 6
ENGINE = Path(tfcli.engine.__file__).parent


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> int:
    args = node.args
    names = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    count = len(names) + (args.vararg is not None) + (args.kwarg is not None)
    if method and names and names[0].arg in ("self", "cls"):
        count -= 1
    return count


def parameter_counts(source: str) -> dict[str, int]:
    """Qualified function name -> number of parameters (self / cls not counted)."""
    counts: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                counts[name] = _parameters(child, in_class)
                visit(child, f"{name}.", False)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", True)
            else:
                visit(child, prefix, in_class)

    visit(ast.parse(source), "", False)
    return counts


def test_the_counter_sees_methods_closures_and_every_kind_of_parameter():
    source = ("def f(a, /, b, *c, d, **e):\n    def g(x, y=1): pass\n"
              "class K:\n    def m(self, a): pass\n    @classmethod\n    def n(cls): pass\n")
    assert parameter_counts(source) == {"f": 5, "f.g": 2, "K.m": 1, "K.n": 0}


def test_every_engine_function_takes_at_most_six_parameters():
    offenders = []
    for path in sorted(ENGINE.glob("*.py")):
        for name, count in parameter_counts(path.read_text()).items():
            if count > MAX_PARAMETERS:
                offenders.append(f"{path.name}:{name} takes {count}")
    assert not offenders, (f"engine functions with more than {MAX_PARAMETERS} parameters "
                           "(group them into one object): " + "; ".join(offenders))
