"""`--help` rendered by tfcli itself, in plain text, from the click parameters of each command.

Typer's own help changes with its version (0.29 prints `{spec}`, `--help <bool>`, `<list[str]>`
and reads docstrings as rich markup, so `tfcli[plot]` lost its brackets). This module reads only
what every typer / click version has - a parameter's names, help, default, hidden, flag, choices,
range - and lays it out as click's classic help does: the same text under any version, no
markup, no colour, wrapped to the terminal (80 columns when piped, COLUMNS when set).

    Usage: tfcli params [OPTIONS] SPEC
      <docstring, wrapped; `Example:` lines kept whole for copy and paste>
    Arguments:  SPEC  <help>
    Options:    --seq-len INTEGER  <help> [default: ...] [x>=1]
"""

from __future__ import annotations

import inspect
import os
import shutil
import textwrap
from collections.abc import Iterable, Sequence
from enum import Enum
from typing import Any

MIN_WIDTH, MAX_WIDTH = 40, 100  # past 100 columns, help lines get hard to read
NAME_COLUMN = 28  # option names longer than this put their help on the next line
_TYPE_NAMES = {int: "INTEGER", float: "FLOAT", str: "TEXT"}


def help_width() -> int:
    """COLUMNS when it is a number, else the terminal's width (80 when piped), held to
    [MIN_WIDTH, MAX_WIDTH]."""
    text = os.environ.get("COLUMNS", "")
    columns = int(text[:6]) if text.isascii() and text.isdigit() else shutil.get_terminal_size().columns
    return min(max(columns, MIN_WIDTH), MAX_WIDTH)


# --- one parameter ------------------------------------------------------------------------------


def choices(param: Any) -> tuple[str, ...]:
    """The values an option takes, when it is a choice (typer >= 0.29: its type descriptor;
    older typer and click: a click.Choice type)."""
    descriptor = getattr(param, "type_descriptor", None)
    found = getattr(descriptor, "choices", None) if getattr(descriptor, "is_choice", False) else None
    found = found or getattr(getattr(param, "type", None), "choices", None) or ()
    return tuple(str(c.value if isinstance(c, Enum) else c) for c in found)


def _value_name(param: Any) -> str:
    """`[table|json|csv]`, `DIR` (an explicit metavar), `INTEGER`, `FLOAT`, `TEXT`."""
    listed = choices(param)
    if listed:
        return f"[{'|'.join(listed)}]"
    if getattr(param, "metavar", None):
        return str(param.metavar)
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    name = getattr(getattr(param, "type", None), "name", "") or ""
    return _TYPE_NAMES.get(annotation, name.upper() or "TEXT")


def option_names(param: Any) -> str:
    """`-f, --format [table|json|csv]`; a flag pair as `--cache / --no-cache`."""
    names = sorted(param.opts, key=lambda opt: (opt.startswith("--"), opt))
    text = ", ".join(names)
    if param.secondary_opts:
        text += " / " + ", ".join(param.secondary_opts)
    return text if getattr(param, "is_flag", False) else f"{text} {_value_name(param)}"


def argument_name(param: Any) -> str:
    name = str(param.metavar or param.name).upper()
    return name + ("..." if param.nargs != 1 else "")


def _extras(param: Any) -> list[str]:
    """`[default: 16]`, `[x>=1]`, `[required]`: what the help adds after an option's text."""
    extras = []
    default = param.default
    if isinstance(default, Enum):
        default = default.value
    shown = getattr(param, "show_default", True) is not False
    if shown and not getattr(param, "is_flag", False) and default not in (None, "", (), []):
        extras.append(f"[default: {default}]")
    bounds = _range(getattr(param, "min", None), getattr(param, "max", None))
    if bounds:
        extras.append(bounds)
    if param.required and param.param_type_name == "option":
        extras.append("[required]")
    return extras


def _range(low: object, high: object) -> str | None:
    if low is not None and high is not None:
        return f"[{low}<=x<={high}]"
    if low is not None:
        return f"[x>={low}]"
    return None if high is None else f"[x<={high}]"


def param_help(param: Any) -> str:
    return " ".join([" ".join((param.help or "").split()), *_extras(param)]).strip()


# --- layout -------------------------------------------------------------------------------------


def _definitions(rows: Iterable[tuple[str, str]], width: int) -> list[str]:
    """Two columns: names, then their help wrapped beside them (or under them when long)."""
    rows = list(rows)
    column = min(max((len(name) for name, _ in rows), default=0), NAME_COLUMN) + 4
    lines = []
    for name, text in rows:
        wrapped = textwrap.wrap(text, max(width - column, 20), break_on_hyphens=False) or [""]
        if len(name) + 4 > column:
            lines.append(f"  {name}")
        else:
            lines.append(f"  {name.ljust(column - 2)}{wrapped.pop(0)}".rstrip())
        lines.extend((" " * column + line).rstrip() for line in wrapped)
    return lines


def _paragraphs(text: str, width: int) -> list[str]:
    """A docstring wrapped paragraph by paragraph; a line that starts with `Example` or
    `tfcli ` is kept whole (a command to copy), as is any indented line."""
    lines: list[str] = []
    for paragraph in inspect.cleandoc(text).split("\n\n"):
        raw = paragraph.splitlines()
        whole = [line for line in raw if line.startswith(("Example", "tfcli ", " "))]
        prose = " ".join(line for line in raw if line not in whole)
        lines.append("")
        lines.extend("  " + line for line in textwrap.wrap(prose, width - 2, break_on_hyphens=False))
        lines.extend(f"  {line}" for line in whole)
    return lines


def _section(title: str, body: Sequence[str]) -> list[str]:
    return ["", f"{title}:", *body] if body else []


def command_help(command: Any, ctx: Any) -> str:
    """The help of one command (or of the group, whose commands are listed after its options)."""
    width = help_width()
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
    arguments = [p for p in params if p.param_type_name == "argument"]
    options = [p for p in params if p.param_type_name == "option"]
    usage = " ".join([ctx.command_path, "[OPTIONS]", *(_usage_piece(p) for p in arguments)])
    if hasattr(command, "list_commands"):
        usage += " COMMAND [ARGS]..."
    lines = [f"Usage: {usage}", *_paragraphs(command.help or "", width)]
    lines += _section("Arguments", _definitions(((argument_name(p), param_help(p))
                                                  for p in arguments), width))
    lines += _section("Options", _definitions(((option_names(p), param_help(p))
                                                for p in options), width))
    if hasattr(command, "list_commands"):
        lines += _section("Commands", _definitions(_command_rows(command, ctx), width))
    return "\n".join(lines) + "\n"


def _usage_piece(param: Any) -> str:
    name = argument_name(param)
    return name if param.required else f"[{name}]"


def _command_rows(group: Any, ctx: Any) -> list[tuple[str, str]]:
    rows = []
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        if sub is not None and not getattr(sub, "hidden", False):
            rows.append((name, short_help(sub.help or "")))
    return rows


def short_help(text: str) -> str:
    """A docstring's first sentence, on one line."""
    first = " ".join(inspect.cleandoc(text).split("\n\n")[0].split())
    return first.split(". ")[0].rstrip(".") + "." if first else ""
