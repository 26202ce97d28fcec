"""A tensor shape as text: the one formatter behind every table and CSV column of shapes.

Tables (for people) write 1×128×768, CSV (for scripts) the ASCII 1x128x768; a component of
several arrays joins their shapes with ' + '. Imports nothing, so analysis results (CSV rows)
and renderers (tables) both use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

TABLE_TIMES = "×"
CSV_TIMES = "x"


def shape_text(shape: Sequence[int] | None, times: str = CSV_TIMES, grouped: bool = False) -> str:
    """(1, 128, 768) -> '1x128x768' ('' for no shape); `grouped` writes 50,257 for 50257."""
    if shape is None:
        return ""
    return times.join(f"{n:,}" if grouped else str(n) for n in shape)


def shapes_text(shapes: Iterable[Sequence[int]], times: str = CSV_TIMES, grouped: bool = False) -> str:
    """((768, 768), (768,)) -> '768x768 + 768'."""
    return " + ".join(shape_text(s, times, grouped) for s in shapes)
