"""Errors in the caller's words: the library's messages name options as the command line spells
them (`--seq-len`); called from Python, they name the parameter (`seq_len`) instead.

The analysis modules word their checks once, in flags, because the command line is where most
of them are met. A public API function is wrapped by `in_api_terms`: a BadInputError it raises
has every `--flag` that is one of the function's parameters rewritten to the parameter's name.
The command line runs its calls under `cli_terms()`, which leaves the flags as they are.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from tfcli.core.errors import BadInputError

F = TypeVar("F", bound=Callable[..., Any])

_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?![\w-])")
_CLI = ContextVar("tfcli_cli_terms", default=False)


@contextmanager
def cli_terms() -> Iterator[None]:
    """Within it, API calls keep the command line's flags in their messages."""
    token = _CLI.set(True)
    try:
        yield
    finally:
        _CLI.reset(token)


def parameter_of(flag: str) -> str:
    """'--seq-len' -> 'seq_len'."""
    return flag.removeprefix("--").replace("-", "_")


def translate(message: str, parameters: Mapping[str, object]) -> str:
    """`message` with each `--flag` naming one of `parameters` replaced by that name."""

    def name(match: re.Match[str]) -> str:
        parameter = parameter_of(match.group(0))
        return parameter if parameter in parameters else match.group(0)

    return _FLAG.sub(name, message)


def in_api_terms(func: F) -> F:
    """`func`'s BadInputErrors name its parameters, outside `cli_terms()`."""
    parameters = inspect.signature(func).parameters

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except BadInputError as exc:
            if _CLI.get():
                raise
            message = translate(exc.message, parameters)
            if message == exc.message:
                raise
            worded = copy.copy(exc)
            worded.message = message
            worded.args = (message,)
            raise worded from None

    return wrapper  # type: ignore[return-value]


def given_options(func: Callable[..., Any], values: Mapping[str, Any]) -> Callable[[str], bool]:
    """`given(flag)` for the option-mode table (tfcli.api.modes): called from Python, an
    option is given when its value differs from the parameter's default."""
    defaults = {name: p.default for name, p in inspect.signature(func).parameters.items()}

    def given(flag: str) -> bool:
        name = parameter_of(flag)
        return name in values and values[name] != defaults.get(name, inspect.Parameter.empty)

    return given
