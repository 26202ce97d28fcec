"""How `tfcli generate` runs the engine: the one place the --no-cache / --check-cache /
--compare flags become a mode. Its own module because both the generation (analysis/generation)
and its memory estimate (analysis/memory, imported by it) read it."""

from __future__ import annotations

from enum import StrEnum

from tfcli.core.errors import BadInputError


class GenerationMode(StrEnum):
    """cache: the KV cache (default); no_cache: recompute the whole prefix every step; check and
    compare run both, check compares their tokens and logits, compare reports the speed-up."""

    cache = "cache"
    no_cache = "no-cache"
    check = "check"
    compare = "compare"

    @classmethod
    def from_flags(cls, *, no_cache: bool, check_cache: bool, compare: bool) -> GenerationMode:
        """The mode the command-line flags ask for; at most one of them may be given."""
        if no_cache + check_cache + compare > 1:
            raise BadInputError("choose at most one of --no-cache, --check-cache, --compare")
        if no_cache:
            return cls.no_cache
        return cls.check if check_cache else cls.compare if compare else cls.cache

    @property
    def runs_cached(self) -> bool:
        return self is not GenerationMode.no_cache

    @property
    def runs_uncached(self) -> bool:
        return self is not GenerationMode.cache

    @property
    def runs_both(self) -> bool:
        return self.runs_cached and self.runs_uncached
