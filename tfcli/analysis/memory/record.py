"""The engine's live set from its own forward pass on shapes: which arrays are alive between
ops, as the engine's references decide, the same record `tfcli trace` renders.

The forward runs on shape-only arrays (tfcli.engine.shaped) under `watching`: every array it
allocates (an owner; views keep their owner alive, as ndarray.base does) is followed with a
weakref, so the bytes alive at each op report are exactly those the same code keeps alive on
real arrays. Between two reports the largest live set is the phase's.

Three kernels split their work by size on real arrays and run whole on shapes: attention's
query blocks, the FFN's rounds of rows split by hidden units, and the row-split norms. For
those phases the record gives what is alive around the kernel and its output; the kernel's
working set inside comes from its own sizing (layouts/engine.py: the same constants as
tfcli/engine), since blocks, threads and Cody's erf are not visible to a run on shapes.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tfcli.analysis.trace.build import listed_blocks, shaped_input, block_signature, stacks_of
from tfcli.engine.init import shaped_weights
from tfcli.engine.inputs import Recorder
from tfcli.engine.model import forward
from tfcli.engine.shaped import Shaped, watching
from tfcli.spec.model import Spec

RECORD_BYTES = 4  # the record runs in float32: phases are its bytes / 4, in elements


@dataclass(frozen=True)
class Interval:
    """The live bytes from one op report to the next: the least (what a kernel starts from,
    once the arrays dropped since the last report are freed), the largest, at its end; `path`
    and `op` name the report that closes it."""

    path: str
    op: str
    output: tuple[int, ...]
    low: int
    peak: int
    end: int


class LiveRecorder(Recorder):
    """Follows every array the forward allocates and cuts the run into intervals at the op
    reports. A block like one already run twice (the second had the first's output held
    beside it) is replayed: its intervals would be the same."""

    def __init__(self) -> None:
        self.current = self.peak = self.low = 0
        self.intervals: list[Interval] = []
        self._kinds: dict[tuple[object, ...], int] = {}

    def allocated(self, array: Shaped) -> None:
        size = array.nbytes
        self.current += size
        self.peak = max(self.peak, self.current)
        weakref.finalize(array, self._freed, size)

    def _freed(self, size: int) -> None:
        self.current -= size
        self.low = min(self.low, self.current)

    def record(self, path: str, op: str, output: tuple[int, ...], inputs: tuple[object, ...],
               reads: tuple[object, ...]) -> None:
        self.intervals.append(Interval(path, op, output, self.low, self.peak, self.current))
        self.low = self.peak = self.current

    def replay(self, path: str, view: object, block: object) -> bool:
        stack, index = path.split(".")
        kind = (stack, id(view), block_signature(block))
        runs = self._kinds.get(kind, 0)
        if runs >= 1 and int(index) >= 2:  # blocks 0 and 1 differ: block 0's input is the embedding
            return True
        self._kinds[kind] = runs + 1
        return False


def record_live(spec: Spec, batch: int, seq_len: int) -> list[Interval]:
    """The intervals of one forward pass of `batch` sequences of `seq_len` (an encoder-decoder:
    source and target both of seq_len), weights left out (built before the watch)."""
    run = {stack: listed_blocks(spec, stack) for stack in stacks_of(spec)}
    weights = shaped_weights(spec, run)
    two = spec.family == "encoder-decoder"
    tokens = shaped_input(spec, batch, seq_len, seq_len if two else None,
                           seq_len if two else None)
    recorder = LiveRecorder()
    with watching(recorder.allocated):
        out = forward(spec, weights, tokens, recorder)
    del out
    return recorder.intervals


# A kernel's elements beyond what was alive before it (its output and its working set), or
# None for an interval that is no kernel's: the record's own largest live set then stands.
Kernel = Callable[[Interval], float | None]


def phases(intervals: list[Interval], kernel: Kernel) -> list[tuple[str, float]]:
    """(phase, live elements) per interval: the record's largest live set, or for a kernel
    what was alive at its start beside its output and working set."""
    out = []
    for iv in intervals:
        extra = kernel(iv)
        live = iv.peak / RECORD_BYTES if extra is None else iv.low / RECORD_BYTES + extra
        out.append((phase_name(iv), live))
    return out


_NAMES = {"scores": "attention scores", "ffn_up": "FFN", "experts": "experts",
          "c2p": "position scores (c2p)", "p2c": "position scores (p2c)"}


def phase_name(iv: Interval) -> str:
    """What a reader calls the interval, and where: "attention scores in decoder.1.attn"."""
    what = _NAMES.get(iv.op, iv.op.replace("_", " "))
    return f"{what} in {iv.path}"


def elements(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=object))
