"""Trace rows and their folding: one op per row, folded by depth (block / sublayer / op), and a
repeated run of identical blocks ("decoder.1-79") expanded back into one row set per block.
Split from tfcli.analysis.trace.build, which builds the rows."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from tfcli.core.errors import BadInputError

Shape = tuple[int, ...]

DEPTHS = (1, 2, 3)  # 1: per block, 2: per sublayer, 3: per op
_BLOCK_INDEX = re.compile(r"\d+(-\d+)?")  # "3", or "1-79" for a repeated run of blocks


@dataclass(frozen=True)
class TraceRow:
    """One op (or, folded, a group of consecutive ops) of the forward pass."""

    path: str  # e.g. "decoder.3.attn"
    op: str  # e.g. "q_proj"; a folded row says "12 ops"
    inputs: tuple[Shape, ...]
    output: Shape
    params: int  # parameters the op owns
    flops: int
    act_bytes: int  # output elements x dtype bytes
    # Identical blocks this row stands for ("decoder.1-79.attn": 79); params, flops and
    # act_bytes are summed over them, shapes are each one's.
    repeat: int = 1
    # Weights paths of the arrays whose parameters `params` counts, e.g.
    # ("decoder.blocks.3.attn.wq", "decoder.blocks.3.attn.bq"); () when it owns none
    weights: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path, "op": self.op, "inputs": [list(s) for s in self.inputs],
            "output": list(self.output), "params": self.params,
            "weight_paths": list(self.weights), "flops": self.flops,
            "act_bytes": self.act_bytes, "repeat": self.repeat,
        }


class Owned(NamedTuple):
    """Parameters an op owns and the Weights paths of their arrays."""

    params: int = 0
    paths: tuple[str, ...] = ()


NOTHING = Owned()


# --- folding -----------------------------------------------------------------------------------


def check_depth(depth: int) -> None:
    if depth not in DEPTHS:
        raise BadInputError(f"--depth must be 1, 2 or 3 (block, sublayer, op), got {depth}")


def fold_key(path: str, depth: int) -> str:
    """'decoder.3.attn' -> 'decoder.3' at depth 1; other paths ('embed', 'head') stay whole."""
    parts = path.split(".")
    if depth == 1 and len(parts) > 2 and _BLOCK_INDEX.fullmatch(parts[1]):
        return ".".join(parts[:2])
    return path


def fold_rows(rows: tuple[TraceRow, ...] | list[TraceRow], depth: int) -> list[TraceRow]:
    """Merge each run of consecutive rows that share a fold key into one row."""
    check_depth(depth)
    if depth == 3:
        return list(rows)
    groups: list[tuple[str, list[TraceRow]]] = []
    for row in rows:
        key = fold_key(row.path, depth)
        if groups and groups[-1][0] == key:
            groups[-1][1].append(row)
        else:
            groups.append((key, [row]))
    return [_merge(key, group) for key, group in groups]


def _merge(path: str, rows: list[TraceRow]) -> TraceRow:
    if len(rows) == 1:
        return replace(rows[0], path=path)
    repeats = {r.repeat for r in rows}
    return TraceRow(
        path, f"{len(rows)} ops", rows[0].inputs, rows[-1].output,
        sum(r.params for r in rows), sum(r.flops for r in rows), sum(r.act_bytes for r in rows),
        repeats.pop() if len(repeats) == 1 else 1,
        tuple(dict.fromkeys(w for r in rows for w in r.weights)),
    )


def renamed_block(weights: tuple[str, ...], stack: str, old: str, new: str) -> tuple[str, ...]:
    """Weights paths of block `old` of `stack` named for block (or span) `new`."""
    if not weights:
        return weights
    before, after = f"{stack}.blocks.{old}.", f"{stack}.blocks.{new}."
    return tuple(after + w.removeprefix(before) if w.startswith(before) else w for w in weights)


def repeated(row: TraceRow, first: str, span: str, repeat: int) -> TraceRow:
    """Block `first`'s row standing for `repeat` identical blocks named `span`."""
    stack, old = first.split(".")
    weights = renamed_block(row.weights, stack, old, span.split(".")[1])
    return TraceRow(span + row.path.removeprefix(first), row.op, row.inputs, row.output,
                    row.params * repeat, row.flops * repeat, row.act_bytes * repeat, repeat,
                    weights)


def expand_rows(rows: tuple[TraceRow, ...] | list[TraceRow]) -> list[TraceRow]:
    """Every block's rows, in forward order (a repeated group becomes its blocks, one after
    another): what a real forward pass reports, for `trace --execute`. O(layers), unlike the
    report itself."""
    out: list[TraceRow] = []
    group: list[TraceRow] = []  # consecutive rows of one repeated span, e.g. decoder.1-299
    for row in [*rows, None]:
        if group and (row is None or _span(row) != _span(group[0])):
            out += _unrolled(group)
            group = []
        if row is not None and row.repeat > 1:
            group.append(row)
        elif row is not None:
            out.append(row)
    return out


def _span(row: TraceRow) -> str:
    return ".".join(row.path.split(".")[:2])


def _unrolled(group: list[TraceRow]) -> list[TraceRow]:
    stack, span = _span(group[0]).split(".")
    first, repeat = int(span.split("-")[0]), group[0].repeat
    return [replace(r, path=f"{stack}.{first + i}{r.path.removeprefix(f'{stack}.{span}')}",
                    params=r.params // repeat, flops=r.flops // repeat,
                    act_bytes=r.act_bytes // repeat, repeat=1,
                    weights=renamed_block(r.weights, stack, span, str(first + i)))
            for i in range(repeat) for r in group]
