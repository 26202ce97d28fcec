"""What a stack call needs besides hidden states and weights, as one frozen object, and the
observer bound to a path that reports each op's output shape.

StackInput is built once, where positions are first known (forward, encode, a generation step),
and handed unchanged through forward_hidden -> block_forward -> attention. The cache offset is
its `start`: passed, never read back from the cache.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfcli.core.arrays import Array
from tfcli.engine.ops import Observer
from tfcli.engine.positions import default_positions


@dataclass(frozen=True)
class StackInput:
    """The side inputs of one stack call (encoder or decoder)."""

    causal: bool
    positions: Array  # (1|B, T) int, the queries' positions (RoPE, relative bias)
    key_positions: Array  # (1|B, S) int, the keys' (S = start + T with a cache, else T)
    start: int = 0  # cache slot of query 0 (0 when uncached)
    key_mask: Array | None = None  # (B, S) bool, True = real key; None: every key is real
    encoder_out: Array | None = None  # (B, S_src, d) encoder-decoder: cross-attention's keys
    encoder_mask: Array | None = None  # (B, S_src) bool, True = real source token
    position_bias: Array | None = None  # (1|B, H, T, S) T5: set per stack by forward_hidden
    # (2 span, d) DeBERTa's relative-position embeddings, normed: set per stack by forward_hidden
    relative_embeddings: Array | None = None

    @classmethod
    def over(cls, length: int, causal: bool, key_mask: Array | None = None,
             encoder_out: Array | None = None, encoder_mask: Array | None = None,
             like: object = None) -> StackInput:
        """A whole uncached sequence: queries and keys at positions 0..length-1 (shape-only
        when `like` is)."""
        positions = default_positions(1, length, like=like)  # (1, T)
        return cls(causal, positions, positions, 0, key_mask, encoder_out, encoder_mask)

    @property
    def stack(self) -> str:
        """The stack's name in observer paths: a causal stack is the decoder."""
        return "decoder" if self.causal else "encoder"


class Recorder:
    """What an op record needs beyond an Observer: each op's inputs and the weights it reads.

    `record(path, op, output, inputs, reads)` receives the output shape, the shapes (or arrays)
    of its inputs and the weight arrays (or weight containers) it reads, as the engine reports
    them at each op; run on shape-only arrays (tfcli.engine.shaped), those are the trace.
    """

    def record(self, path: str, op: str, output: tuple[int, ...], inputs: tuple[object, ...],
               reads: tuple[object, ...]) -> None:
        raise NotImplementedError

    def replay(self, path: str, view: object, block: object) -> bool:
        """Whether the recorder has already recorded a block like `block` run as `view` (a
        spec) and recorded this one, at `path`, as that one renamed: on shapes the block need
        not run again (its output has its input's shape). False: run it."""
        return False


class Probe:
    """An Observer bound to a path: probe(op, shape) reports observe(path, op, shape).

    The engine also names each op's inputs and the weights it reads (`inputs`, `reads`), which
    only a Recorder receives: for plain observers and NO_PROBE they cost a tuple.
    """

    __slots__ = ("observe", "path")

    def __init__(self, observe: Observer, path: str = "") -> None:
        self.observe, self.path = observe, path

    def __call__(self, op: str, shape: tuple[int, ...], inputs: tuple[object, ...] = (),
                 reads: tuple[object, ...] = ()) -> None:
        self.observe(self.path, op, shape)

    def at(self, part: str | int) -> Probe:
        """The probe one level down: path `{path}.{part}` (or `part` at the root)."""
        return type(self)(self.observe, f"{self.path}.{part}" if self.path else str(part))

    def replayed(self, view: object, block: object) -> bool:
        """Whether a Recorder replayed this block from one like it (Recorder.replay)."""
        return False


class _Recording(Probe):
    """A probe whose observer is a Recorder: every op with its inputs and reads."""

    __slots__ = ()

    def __call__(self, op: str, shape: tuple[int, ...], inputs: tuple[object, ...] = (),
                 reads: tuple[object, ...] = ()) -> None:
        self.observe.record(self.path, op, tuple(shape), inputs, reads)  # type: ignore[attr-defined]

    def replayed(self, view: object, block: object) -> bool:
        return self.observe.replay(self.path, view, block)  # type: ignore[attr-defined]


class _Silent(Probe):
    """The do-nothing probe: no path is ever formatted, no call reaches an observer."""

    def __call__(self, op: str, shape: tuple[int, ...], inputs: tuple[object, ...] = (),
                 reads: tuple[object, ...] = ()) -> None:
        pass

    def at(self, part: str | int) -> Probe:
        return self


def _ignore(path: str, op: str, shape: tuple[int, ...]) -> None:
    pass


NO_PROBE: Probe = _Silent(_ignore)


def probe_for(observe: Observer | Recorder | None) -> Probe:
    """The root probe of a forward pass: NO_PROBE when nobody observes."""
    if observe is None:
        return NO_PROBE
    if isinstance(observe, Recorder):
        return _Recording(observe)  # type: ignore[arg-type]
    return Probe(observe)
