"""Typed reads of config.json fields, each wrong value one BadInputError naming file and field.

A config.json is user input: any key may hold any JSON value. Reading every field through these
accessors, rather than indexing the dict and catching whatever Python raises later, gives one
message in a fixed style, e.g. "m/config.json: field 'hidden_size': expected an integer, got '64'".
"""

from __future__ import annotations

import math
import reprlib
from dataclasses import dataclass
from typing import Any, TypeGuard

from tfcli.core.errors import BadInputError

Config = dict[str, Any]
MAX_SHOWN = 60  # characters of a bad value quoted in a message
BOUNDS = {0: "must not be negative", 1: "must be positive"}  # integer() minimums, in words
# No size of a real model comes near int32's limit; a larger one (10**30 layers) would only
# reach code that loops or allocates over it.
MAX_SIZE = 2**31 - 1
MAX_INT_DIGITS = 20  # longer JSON integer literals are kept as HugeInt, not converted


class _Absent:
    """Marks a key that is not in the config at all (JSON null is a value: None)."""


ABSENT = _Absent()


class HugeInt:
    """A JSON integer literal of more than MAX_INT_DIGITS digits, kept by its length: int() of
    4,300+ digits raises inside json, and no field can hold such a value anyway."""

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"an integer of {self.digits:,} digits"


def int_literal(text: str) -> int | HugeInt:
    """json.loads' parse_int: an int, or a HugeInt that a field read then refuses by name."""
    digits = len(text.lstrip("-"))
    return int(text) if digits <= MAX_INT_DIGITS else HugeInt(digits)


def _bounded_repr() -> reprlib.Repr:
    # reprlib does bounded work on any value (a list of a million items, 900 levels deep),
    # and repr() escapes control characters, so ESC or BEL in a value never reaches a terminal
    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxtuple, r.maxdict, r.maxset = 2, 6, 6, 6, 6
    r.maxstring = r.maxother = r.maxlong = MAX_SHOWN
    return r


_REPR = _bounded_repr()


def shown(value: object) -> str:
    """A bad value as quoted in a message, cut short so a huge list cannot flood the terminal."""
    text = _REPR.repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def _is_integer(value: object) -> TypeGuard[int]:
    # bool is an int subclass in Python, but JSON true is not a size
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class ConfigFields:
    """Typed access to one JSON object of a config file; `prefix` names a nested object."""

    values: Config
    file: str  # the file the values came from, for messages
    prefix: str = ""  # e.g. "rope_scaling." for the fields of that object

    def error(self, key: str, message: str) -> BadInputError:
        return BadInputError(f"{self.file}: field '{self.prefix}{key}': {message}")

    def has(self, key: str) -> bool:
        return key in self.values

    def _get(self, key: str, default: object = ABSENT) -> Any:
        value = self.values.get(key, default)
        if value is ABSENT:
            raise self.error(key, "is missing")
        return value

    def integer(self, key: str, *, minimum: int = 1) -> int:
        """An integer in [`minimum`, MAX_SIZE] (sizes and counts: 1 unless zero means 'none')."""
        return self._checked_integer(key, self._get(key), minimum)

    def optional_integer(self, key: str, *, minimum: int = 1) -> int | None:
        """Like integer(), but null or absent is None (transformers' 'derive it' marker)."""
        value = self._get(key, None)
        return None if value is None else self._checked_integer(key, value, minimum)

    def _checked_integer(self, key: str, value: object, minimum: int) -> int:
        if isinstance(value, HugeInt) or (_is_integer(value) and value > MAX_SIZE):
            raise self.error(key, f"is too large ({shown(value)}; at most {MAX_SIZE:,})")
        if not _is_integer(value):
            raise self.error(key, f"expected an integer, got {shown(value)}")
        if value < minimum:
            wanted = BOUNDS.get(minimum, f"must be at least {minimum}")
            raise self.error(key, f"{wanted}, got {shown(value)}")
        return value

    def number(self, key: str, *, default: object = ABSENT, positive: bool = True) -> float:
        """A finite float (an integer is accepted); positive unless told otherwise."""
        value = self._get(key, default)
        if isinstance(value, HugeInt):
            raise self.error(key, f"expected a finite number, got {shown(value)}")
        if not (_is_integer(value) or isinstance(value, float)):
            raise self.error(key, f"expected a number, got {shown(value)}")
        try:
            result = float(value)
        except OverflowError:  # an integer literal too large for a float
            result = math.inf
        # Python's json accepts NaN and Infinity, and either would poison every forward pass
        if not math.isfinite(result):
            raise self.error(key, f"expected a finite number, got {shown(value)}")
        if positive and result <= 0:
            raise self.error(key, f"must be positive, got {shown(value)}")
        return result

    def text(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise self.error(key, f"expected a string, got {shown(value)}")
        return value

    def optional_text(self, key: str) -> str | None:
        return None if self._get(key, None) is None else self.text(key)

    def flag(self, key: str, *, default: object = ABSENT) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {shown(value)}")
        return value

    def names(self, key: str) -> list[str]:
        """A list of strings (e.g. `architectures`); null or absent is the empty list."""
        value = self._get(key, None)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(key, f"expected a list of strings, got {shown(value)}")
        return value

    def section(self, key: str) -> ConfigFields:
        """The fields of a nested object; null or absent reads as an empty object."""
        value = self._get(key, None)
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise self.error(key, f"expected an object or null, got {shown(value)}")
        return ConfigFields(value, self.file, f"{self.prefix}{key}.")
