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


def human_rate(r: float, digits: int = 1) -> str:
    """Three significant digits below 1,000 (or one decimal), whole numbers with commas above."""
    if r >= 1000:
        return f"{r:,.0f}"
    return f"{r:.{digits}g}" if digits > 1 else f"{r:,.1f}"


def human_seconds(s: float) -> str:
    """0.00042 -> '420 µs', 1.5 -> '1.5 s', 7200 -> '2 h'."""
    for unit, scale in (("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale * (10 if unit == "min" else 1):
            return f"{human_rate(s / scale, 3)} {unit}"
    return f"{human_rate(s / 1e-9, 3)} ns"


def human(value: float, unit: str) -> str:
    """A figure in its unit's form (the units result objects name: "bytes" or "B", "FLOP",
    "s", "token/s", "yes/no", "" for a plain count): bytes binary, FLOPs decimal, time scaled."""
    if unit in ("bytes", "B"):
        return human_bytes(value)
    if unit == "FLOP":
        return human_flops(value)
    if unit == "s":
        return human_seconds(value)
    if unit == "token/s":
        return human_rate(value)
    if unit == "yes/no":
        return "yes" if value else "no"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.4g}"
