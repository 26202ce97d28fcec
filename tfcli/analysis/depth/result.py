"""The depth sweep's result objects and the verdict paragraph computed from their numbers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfcli.analysis.depth.gradients import GradientReport

# A point is flagged when its numbers cross these (renderers colour by the flags, never by
# comparing numbers themselves).
COLLAPSE_BELOW = 0.1  # norm ratio
EXPLOSION_ABOVE = 10.0  # norm ratio
RANK_COLLAPSE_ABOVE = 0.99  # mean pairwise cosine between positions

CSV_HEADER = ["depth", "variant", "status", "norm_mean", "norm_min", "norm_max", "norm_ratio",
              "gain", "cosine", "flags"]


def flags_for(ratio: float, cosine: float | None) -> tuple[str, ...]:
    """'collapse' / 'explosion' (norm ratio) and 'rank_collapse' (cosine) where crossed."""
    flags = []
    if ratio < COLLAPSE_BELOW:
        flags.append("collapse")
    if ratio > EXPLOSION_ABOVE:
        flags.append("explosion")
    if cosine is not None and cosine > RANK_COLLAPSE_ABOVE:
        flags.append("rank_collapse")
    return tuple(flags)


@dataclass(frozen=True)
class DepthPoint:
    """One variant measured at one depth. Values are None unless status is 'ok'."""

    depth: int
    variant: str
    status: str  # ok | overflow | nan (from the layer it happened on, onwards)
    norm_mean: float | None  # per-position output norm ||x_t||, mean over batch and positions
    norm_min: float | None
    norm_max: float | None
    norm_ratio: float | None  # norm_mean / the input's mean per-position norm
    gain: float | None  # ||J v|| / ||v|| of the whole stack so far, mean over directions
    cosine: float | None  # mean cosine between distinct positions (1 = rank collapse)
    flags: tuple[str, ...]  # collapse | explosion | rank_collapse

    def to_dict(self) -> dict[str, Any]:
        return {
            "depth": self.depth, "variant": self.variant, "status": self.status,
            "norm_mean": _finite(self.norm_mean), "norm_min": _finite(self.norm_min),
            "norm_max": _finite(self.norm_max), "norm_ratio": _finite(self.norm_ratio),
            "gain": _finite(self.gain), "cosine": _finite(self.cosine), "flags": list(self.flags),
        }


@dataclass(frozen=True)
class VariantSummary:
    name: str
    status: str  # ok | overflow | nan: how the variant ended
    failed_at_layer: int | None  # the layer (1-based) that overflowed or went NaN


@dataclass(frozen=True)
class DepthSweepResult:
    """A depth sweep. `to_dict()` schema (keys stable; floats that are inf/NaN become null):

    spec: str | null            sublayer: str            causal: bool
    d_model, seq_len, batch, seed: int                   dtype: "float64" | "float32"
    share_weights: bool         weight_scale: float | null (linear)    init_std: float | null
    n_directions: int           fd_step: float (relative step h / ||x||)
    overrides: {field: value}   depths: [int]            input_norm: float
    thresholds: {collapse: float, explosion: float, rank_collapse: float}
    variants: [{name: str, status: "ok" | "overflow" | "nan", failed_at_layer: int | null}]
    points: [{depth: int, variant: str, status: str, norm_mean, norm_min, norm_max,
              norm_ratio, gain, cosine: float | null, flags: [str]}]   (depth-major)
    verdict: str
    gradients: null, or with --gradients {depth: int, loss: str, citation: str, verdict: str,
               series: [{variant: str, loss: float | null, layers: [{layer: int,
               input_grad: float | null, weight_grad: float | null}]}],
               last_layer_by_depth: [{depth: int, weight_grad: {variant: float | null}}]}
    """

    spec_name: str | None
    sublayer: str
    causal: bool
    d_model: int
    seq_len: int
    batch: int
    seed: int
    dtype: str
    share_weights: bool
    weight_scale: float | None
    init_std: float | None
    n_directions: int
    fd_step: float
    depths: tuple[int, ...]
    variants: tuple[VariantSummary, ...]
    input_norm: float
    points: tuple[DepthPoint, ...]
    verdict: str
    overrides: dict[str, Any] = field(default_factory=dict)
    gradients: GradientReport | None = None  # --gradients

    @property
    def variant_names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.variants)

    def point(self, depth: int, variant: str) -> DepthPoint:
        return next(p for p in self.points if p.depth == depth and p.variant == variant)

    def series(self, variant: str) -> list[DepthPoint]:
        return [p for p in self.points if p.variant == variant]

    def with_verdict(self, verdict: str) -> DepthSweepResult:
        return replace(self, verdict=verdict)

    @property
    def notes(self) -> tuple[str, ...]:
        """What `--format markdown` lists under the table: the verdict."""
        return (self.verdict,) if self.verdict else ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec_name, "sublayer": self.sublayer, "causal": self.causal,
            "d_model": self.d_model, "seq_len": self.seq_len, "batch": self.batch,
            "seed": self.seed, "dtype": self.dtype, "share_weights": self.share_weights,
            "weight_scale": self.weight_scale, "init_std": self.init_std,
            "n_directions": self.n_directions, "fd_step": self.fd_step,
            "overrides": dict(self.overrides), "depths": list(self.depths),
            "input_norm": _finite(self.input_norm),
            "thresholds": {"collapse": COLLAPSE_BELOW, "explosion": EXPLOSION_ABOVE,
                           "rank_collapse": RANK_COLLAPSE_ABOVE},
            "variants": [{"name": v.name, "status": v.status, "failed_at_layer": v.failed_at_layer}
                         for v in self.variants],
            "points": [p.to_dict() for p in self.points],
            "verdict": self.verdict,
            "gradients": None if self.gradients is None else self.gradients.to_dict(),
        }

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        """One row per depth x variant; empty cells where a value is missing."""
        rows = []
        for p in self.points:
            d = p.to_dict()
            d["flags"] = ";".join(p.flags)
            rows.append(["" if d[k] is None else d[k] for k in CSV_HEADER])
        return list(CSV_HEADER), rows


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


# --- the verdict -----------------------------------------------------------------------------


def compose_verdict(result: DepthSweepResult) -> str:
    """One paragraph from the numbers: how each variant's norm behaves with depth, where it
    breaks, whether positions collapse onto one direction, and the end-to-end gain."""
    clauses = [_variant_clause(result, v) for v in result.variants]
    sentences = ["; ".join(clauses) + "."]
    gains = _gain_sentence(result)
    if gains:
        sentences.append(gains)
    return " ".join(s[0].upper() + s[1:] for s in sentences)


def _variant_clause(result: DepthSweepResult, summary: VariantSummary) -> str:
    ok = [p for p in result.series(summary.name) if p.status == "ok"]
    failure = None
    if summary.failed_at_layer is not None:
        verb = "overflows" if summary.status == "overflow" else "turns NaN"
        failure = f"{verb} at layer {summary.failed_at_layer}"
    if not ok:
        return f"{summary.name} {failure}"
    text = _norm_clause(summary.name, ok) + (f", then {failure}" if failure else "")
    aligned = next((p for p in ok if "rank_collapse" in p.flags), None)
    if aligned is not None:
        text += f"; its positions align (mean cosine {aligned.cosine:.3f}) by depth {aligned.depth}"
    return text


def _norm_clause(name: str, ok: list[DepthPoint]) -> str:
    collapse = next((p for p in ok if "collapse" in p.flags), None)
    explosion = next((p for p in ok if "explosion" in p.flags), None)
    first = min((p for p in (collapse, explosion) if p), key=lambda p: p.depth, default=None)
    if first is not None:
        verb = "collapses" if first is collapse else "explodes"
        return f"{name} {verb} by depth {first.depth}: norm ratio {_num(first.norm_ratio)}"
    ratios = [p.norm_ratio for p in ok if p.norm_ratio is not None]
    lo, hi = f"{min(ratios):.2g}", f"{max(ratios):.2g}"
    span = f"at {lo}x" if lo == hi else f"within {lo}-{hi}x"
    return f"{name} stays {span} of the input norm up to depth {ok[-1].depth}"


def _gain_sentence(result: DepthSweepResult) -> str:
    deepest = result.depths[-1]
    items = []
    for v in result.variants:
        last = next((p for p in reversed(result.series(v.name)) if p.status == "ok"), None)
        if last is None or last.gain is None:
            continue
        where = "" if last.depth == deepest else f" (depth {last.depth})"
        items.append(f"{v.name} {_num(last.gain)}{where}")
    return f"input-output gain ||Jv||/||v|| at depth {deepest}: {', '.join(items)}." if items else ""


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"
