"""Next-token samplers: greedy, temperature, top-k, top-p (nucleus), from an explicit rng.

All of them work on a batch of logits (B, V) and return token ids (B,).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.ops import softmax_
from tfcli.core.errors import BadInputError, shown

# The smallest temperature above 0 (greedy). float32 logits carry rounding errors of ~1e-7 of
# their size; at T below 1e-6 those alone shift probabilities by factors of e^0.1 and more, so
# ties between near-equal logits are decided by rounding: such a T is greedy decoding with noise.
# (Overflow is not the reason: sample() shifts by the row max before dividing, so logits / T
# never overflows, even at 5e-324.)
MIN_TEMPERATURE = 1e-6


@dataclass(frozen=True)
class SamplingConfig:
    """temperature 0 means greedy; top_k / top_p None (or 0 / 1.0) mean no truncation."""

    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = 0

    def validate(self) -> None:
        if not (math.isfinite(self.temperature) and self.temperature >= 0):
            raise BadInputError(f"temperature must be a finite number >= 0, got {self.temperature}")
        if 0 < self.temperature < MIN_TEMPERATURE:
            raise BadInputError(f"temperature must be 0 (greedy) or at least {MIN_TEMPERATURE:g}, "
                                f"got {shown(self.temperature)}: below it float32 rounding in the "
                                "logits decides the draw; use 0 for greedy decoding")
        if self.top_k is not None and not isinstance(self.top_k, (int, np.integer)):
            raise BadInputError(f"top_k must be a whole number, got {self.top_k!r}")
        if self.top_k is not None and self.top_k < 0:
            raise BadInputError(f"top_k must be >= 1 (or 0 for no limit), got {self.top_k}")
        if self.top_p is not None and not 0.0 < self.top_p <= 1.0:
            raise BadInputError(f"top_p must lie in (0, 1], got {self.top_p}")


def top_k_filter(logits: Array, k: int) -> Array:
    """Set every logit below the k-th largest of its row to -inf (ties at the edge survive)."""
    if k <= 0 or k >= logits.shape[-1]:
        return logits
    kth = -np.partition(-logits, k - 1, axis=-1)[:, k - 1 : k]  # (B, 1) k-th largest
    return np.where(logits < kth, -np.inf, logits)


def top_p_filter(logits: Array, p: float) -> Array:
    """Keep the smallest set of most likely tokens whose probability reaches p (Holtzman et al.
    2019); the most likely token always survives. (B, V) -> (B, V) with -inf outside the set."""
    if p >= 1.0:
        return logits
    order = np.argsort(-logits, axis=-1, kind="stable")  # (B, V) most likely first
    probs = softmax_(np.take_along_axis(logits, order, axis=-1))  # (B, V) sorted
    mass_before = np.cumsum(probs, axis=-1) - probs  # (B, V) probability ranked above each token
    drop_sorted = mass_before >= p
    drop = np.empty_like(drop_sorted)
    np.put_along_axis(drop, order, drop_sorted, axis=-1)  # back to vocabulary order
    return np.where(drop, -np.inf, logits)


def _draw(probs: Array, rng: np.random.Generator) -> Array:
    """One draw per row by inverse CDF; zero-probability tokens have empty intervals."""
    cdf = np.cumsum(probs, axis=-1)  # (B, V)
    u = rng.random(probs.shape[0]) * cdf[:, -1]  # (B,)
    picked = (cdf <= u[:, None]).sum(axis=-1)  # first index whose cdf exceeds u
    last_possible = probs.shape[-1] - 1 - np.argmax(probs[:, ::-1] > 0, axis=-1)
    return np.minimum(picked, last_possible)  # guards u rounding up to the total


def sample(logits: Array, config: SamplingConfig, rng: np.random.Generator) -> Array:
    """Token ids (B,) from logits (B, V)."""
    if config.temperature == 0.0:
        return np.argmax(logits, axis=-1)
    wide = logits.astype(np.float64)  # (B, V), float64 for the CDF
    # Shift by the row max first: (l - max) / T <= 0 never reaches +inf, and the max maps to 0, so
    # every row keeps a probability of 1 before normalising (no 0 / 0) at any T > 0. A gap that
    # overflows to -inf is meant: that token's probability is exactly 0.
    with np.errstate(over="ignore"):
        scaled = (wide - wide.max(axis=-1, keepdims=True)) / config.temperature
    if config.top_k:
        # The k largest are chosen on the unshifted logits: the shift can merge values closer
        # than an ulp of the max (0 and 2e-78 both become -max), letting a (k+1)-th through.
        scaled = np.where(np.isneginf(top_k_filter(wide, config.top_k)), -np.inf, scaled)
    if config.top_p is not None:
        scaled = top_p_filter(scaled, config.top_p)
    return _draw(softmax_(scaled), rng)
