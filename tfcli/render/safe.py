"""User-supplied text made safe to show on a terminal.

Spec names, file paths, token texts, notes and error details come from files and arguments we do
not control. Two things can go wrong when rich prints them: a `[` sequence parses as markup (a
name "[/]" raises MarkupError; "[link=…]" or "[blink]" restyles the screen), and control bytes
(ESC, BEL, C1 codes, bidi overrides) reach the terminal and drive it. So every user string becomes
a `rich.text.Text` (never parsed as markup or emoji codes) with such characters shown as visible
escapes (`\\x1b`, `\\u202e`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.segment import Segment
from rich.style import StyleType
from rich.text import Text

# Unicode categories that are invisible or move the cursor: Cc (C0, DEL, C1), Cf (format
# characters: bidi overrides U+202E, zero-width joiners, BOM), Zl / Zp (line and paragraph
# separators) and Cs (lone surrogates: undecodable bytes of an argument, which a UTF-8 stdout
# cannot even encode).
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
PROSE = "\n\t"  # harmless in running text (a prompt, generated text); escaped in names


def _escape_char(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str, keep: str = "") -> str:
    """`text` with every control, format and separator character replaced by its escape:
    "a\\x1b[31m" stays readable as a, \\x1b, [31m and cannot recolour the terminal. Characters
    in `keep` (say "\\n" for running text) stay as they are."""
    if text.isprintable():  # fast path; False for every category above (and some harmless ones)
        return text
    return "".join(
        _escape_char(c) if c not in keep and unicodedata.category(c) in _HIDDEN_CATEGORIES else c
        for c in text
    )


def plain(text: object, style: StyleType = "", keep: str = "") -> Text:
    """A rich Text of `text` as typed: no markup, no emoji codes, control bytes escaped (but
    those in `keep`: PROSE keeps the line breaks and tabs of generated text)."""
    return Text(visible(str(text), keep), style=style)


def escape_user(text: object) -> str:
    """For the rare place that must build a markup string: `text` escaped for rich markup and
    with control bytes made visible. Prefer `plain`, which never parses markup at all."""
    return escape(visible(str(text)))


def for_matplotlib(text: str) -> str:
    """`text` for a matplotlib title or label: a `$` would start mathtext (and an unbalanced
    `$\\frac{` raises at savefig), so it is escaped; control bytes shown as escapes."""
    return visible(text).replace("$", r"\$")


class SafeConsole(Console):
    """A Console that takes str renderables literally (no markup, no emoji codes) and, as a last
    line of defence behind `plain`, never writes a control byte that arrived as text: rich's own
    cursor and style codes travel as control segments or styles, so only text is escaped."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, emoji=False, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(visible(text, keep="\n"), **kwargs)

    def render(self, renderable: Any, options: Any = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            text = segment.text
            if segment.control or text == "\n" or text.isprintable():
                yield segment
            else:
                yield Segment(visible(text, keep="\n"), segment.style)
