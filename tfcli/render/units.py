"""Human-readable units shared by every renderer."""

from __future__ import annotations

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_COUNT_UNITS = ("", "K", "M", "B", "T")
_FLOP_UNITS = ("FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP")


def _scaled(n: float, base: int, units: tuple[str, ...]) -> tuple[float, int]:
    """n divided by base until it is below base (or the units run out), and the unit index."""
    value, unit = float(n), 0
    while abs(value) >= base and unit < len(units) - 1:
        value, unit = value / base, unit + 1
    return value, unit


def human_bytes(n: float) -> str:
    """1536 -> '1.50 KiB' (binary units, as memory is sized)."""
    value, unit = _scaled(n, 1024, _BYTE_UNITS)
    return f"{value:.0f} B" if unit == 0 else f"{value:.2f} {_BYTE_UNITS[unit]}"


def human_count(n: float) -> str:
    """124439808 -> '124.4M'."""
    value, unit = _scaled(n, 1000, _COUNT_UNITS)
    return f"{value:.0f}" if unit == 0 else f"{value:.1f}{_COUNT_UNITS[unit]}"


def human_flops(n: float) -> str:
    """2.5e9 -> '2.50 GFLOP' (decimal units)."""
    value, unit = _scaled(n, 1000, _FLOP_UNITS)
    return f"{value:.0f} {_FLOP_UNITS[unit]}" if unit == 0 else f"{value:.2f} {_FLOP_UNITS[unit]}"


def percent(fraction: float) -> str:
    return f"{100 * fraction:.1f}%"
