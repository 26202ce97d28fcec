"""Human-readable units shared by every renderer."""

from __future__ import annotations

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_COUNT_UNITS = ("", "K", "M", "B", "T")
_FLOP_UNITS = ("FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP")


def human_bytes(n: float) -> str:
    """1536 -> '1.50 KiB' (binary units, as memory is sized)."""
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(_BYTE_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.0f} B" if unit == 0 else f"{value:.2f} {_BYTE_UNITS[unit]}"


def human_count(n: float) -> str:
    """124439808 -> '124.4M'."""
    value, unit = float(n), 0
    while abs(value) >= 1000 and unit < len(_COUNT_UNITS) - 1:
        value, unit = value / 1000, unit + 1
    return f"{value:.0f}" if unit == 0 else f"{value:.1f}{_COUNT_UNITS[unit]}"


def human_flops(n: float) -> str:
    """2.5e9 -> '2.50 GFLOP' (decimal units)."""
    value, unit = float(n), 0
    while abs(value) >= 1000 and unit < len(_FLOP_UNITS) - 1:
        value, unit = value / 1000, unit + 1
    return f"{value:.0f} {_FLOP_UNITS[unit]}" if unit == 0 else f"{value:.2f} {_FLOP_UNITS[unit]}"


def percent(fraction: float) -> str:
    return f"{100 * fraction:.1f}%"


def shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"
