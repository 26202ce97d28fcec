"""One layout rule for a checkpoint's tensor data, applied where each header is parsed: a GGUF
file (gguf_file.py), a safetensors file and so each shard of a sharded checkpoint
(safetensors_header.py).

A header gives each tensor a byte range [start, start + n_bytes) of the data section. Checked
against the file's end alone, two tensors may share bytes: the second is then computed with
the first's weights and every count still says "equal". So the ranges, sorted, must be

- aligned: each start a multiple of the format's alignment (GGUF's `general.alignment`,
  default 32; safetensors has none, so 1);
- disjoint and in order: a range starts at or after the end of the one before it;
- inside the data section;
- and, where the format says so (safetensors: the Rust library refuses holes and a tail,
  `Metadata::validate`), covering it exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tfcli.core.errors import shown


@dataclass(frozen=True)
class Span:
    """A tensor's bytes, counted from the start of the data section."""

    name: str
    start: int
    n_bytes: int

    @property
    def end(self) -> int:
        return self.start + self.n_bytes

    def __str__(self) -> str:
        return f"tensor {shown(self.name)} (data bytes {self.start:,}-{self.end:,})"


def layout_problem(spans: Iterable[Span], data_size: int, alignment: int = 1,
                   covered: bool = False) -> str | None:
    """What breaks the rule (module docstring) first, naming the tensor - and for an overlap
    both tensors - or None when the layout holds. O(n log n) in the tensor count."""
    at, before = 0, None
    for span in sorted(spans, key=lambda s: (s.start, s.end, s.name)):
        if span.start % alignment:
            return f"{span} does not start at a multiple of the alignment {alignment}"
        if span.start < at:
            return (f"tensor {shown(span.name)} starts at data byte {span.start:,}, inside "
                    f"another tensor's bytes: {before} and {span} overlap")
        if covered and span.start > at:
            return (f"tensor {shown(span.name)} starts at data byte {span.start:,}, after "
                    f"{span.start - at:,} bytes no tensor owns")
        if span.end > data_size:
            return f"{span} ends past the end of the tensor data ({data_size:,} bytes)"
        at, before = span.end, span
    if covered and at != data_size:
        return f"{data_size - at:,} bytes after the last tensor belong to no tensor"
    return None
