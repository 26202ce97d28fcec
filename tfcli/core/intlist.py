"""Strict parsing of comma-separated integer options (--tokens, --depths).

Python's int() accepts far more than a user means by "1,2,3": full-width and other Unicode
digits ('１２'), digit-group underscores ('1_0' is 10), any Unicode whitespace, and 4,300-digit
numbers. Each of those would be a silent reinterpretation, so only ASCII digits are taken, with
bounded item and digit counts, and the offending item is echoed shortened and escaped.
"""

from __future__ import annotations

import re

from tfcli.core.errors import BadInputError

MAX_ITEMS = 1 << 20  # more ids than any model's context; argv itself is ~2 MB at most
MAX_DIGITS = 18  # every 18-digit number fits in int64, which is what NumPy token arrays hold
ECHO_CHARS = 60  # longest piece of user text echoed back in a message

_ITEM = re.compile(r"[ \t]*([0-9]+)[ \t]*")  # ASCII only: [0-9], not \d (which takes '１')


def echo(value: str, limit: int = ECHO_CHARS) -> str:
    """A user's string for an error message, quoted: unprintable characters (ESC, BEL, bidi
    overrides) escaped as repr() does, and at most `limit` characters of that, then an ellipsis."""
    shown = ""
    for char in value:
        piece = char if char.isprintable() else repr(char)[1:-1]
        if len(shown) + len(piece) > limit:
            return f"'{shown}…'"
        shown += piece
    return f"'{shown}'"


def parse_int_list(text: str, option: str) -> list[int]:
    """'1, 2,3' -> [1, 2, 3]; non-negative ASCII integers only, else BadInputError.

    Spaces and tabs around an item are allowed; inside one ('1 2') they are not, nor is an
    empty item ('1,,2'), a sign, '_' or a non-ASCII digit."""
    if not text.strip(" \t"):
        raise BadInputError(f"{option} is empty")
    if text.count(",") >= MAX_ITEMS:
        raise BadInputError(f"{option} has {text.count(',') + 1:,} items; at most {MAX_ITEMS:,}")
    items = text.split(",")
    return [_parse_item(item, i, len(items), option) for i, item in enumerate(items, start=1)]


def _parse_item(item: str, index: int, count: int, option: str) -> int:
    match = _ITEM.fullmatch(item)
    where = f"item {index} of {count}" if count > 1 else "the item"
    if match is None:
        raise BadInputError(f"{option} takes comma-separated integers (ASCII digits 0-9 only); "
                            f"{where} is {echo(item)}")
    digits = match.group(1)
    if len(digits) > MAX_DIGITS:
        raise BadInputError(f"{option}: {where} has {len(digits):,} digits; at most {MAX_DIGITS}")
    return int(digits)
