"""The trace of one forward pass: the engine's own forward run on shapes, each op recorded with
its input and output shapes, the weights it reads (and owns), its FLOPs and activation bytes.

The engine runs on shape-only arrays (tfcli.engine.shaped) and shape-only weights built from the
blueprint (tfcli.engine.init.shaped_weights): nothing is allocated, a llama-2-70b trace is a few
thousand small records, and there is no second description of the forward pass to keep in step
with the engine. Each op's FLOPs follow the stated convention (tfcli.analysis.trace.flops);
`trace --execute` (check.py) still compares the record with a real forward pass.

Entry points for `tfcli trace`:
    report = build_trace(spec, batch=..., seq_len=..., src_len=..., tgt_len=..., dtype=...)
    report = report.at_depth(depth)   # to_dict() / csv_rows() then fold to that depth
    tfcli.render.trace.render_trace(report)

The first op to read a weight owns its parameters, so the rows sum to total_parameters(spec);
each row names the Weights paths of the arrays it owns (`weights`: "decoder.blocks.3.attn.wq";
`*` for every expert, "decoder.blocks.1-79.attn.wq" for a repeated span), the same paths as the
params components and the checkpoint tables. The T5 relative-bias table of each stack is owned
by the `scores` op of that stack's first block; a table shared by source and target (token,
position) is owned by the first `embed` rows (the encoder's).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from itertools import takewhile
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any

import numpy as np

from tfcli.analysis.trace.flops import Op, op_flops
from tfcli.analysis.trace.rows import TraceRow, check_depth, fold_rows, repeated
from tfcli.analysis.trace.text import (  # noqa: F401  (the stated constants, re-exported)
    ACTIVATION_FLOPS, ADD_FLOPS, MAX_LISTED_BLOCKS, NORM_FLOPS, SOFTMAX_FLOPS, convention_text,
    uniform_tail,
)
from tfcli.core.dtypes import ACTIVATION_DTYPES, DTYPE_BYTES, check_dtype
from tfcli.core.errors import BadInputError
from tfcli.core.shapes import shape_text
from tfcli.engine.init import shaped_weights
from tfcli.engine.inputs import Recorder
from tfcli.engine.model import ModelInput, forward
from tfcli.engine.shaped import Shaped
from tfcli.spec.model import Spec


DEFAULT_SEQ_LEN = 128  # default length: min(spec.max_seq_len, 128), small enough to --execute
MAX_SIZE = 2**40  # --batch / lengths: past this, FLOP totals would outgrow a float's range


@dataclass(frozen=True)
class TraceReport:
    """The analytic trace of one forward pass; `depth` only selects what to_dict/csv_rows show."""

    spec_name: str
    family: str
    batch: int
    seq_len: int  # sequence length (encoder-decoder: the default of src_len and tgt_len)
    src_len: int | None  # encoder-decoder only
    tgt_len: int | None  # encoder-decoder only
    dtype: str  # activation dtype for act_bytes
    rows: tuple[TraceRow, ...]  # every op, in forward order
    convention: str  # how FLOPs and bytes are counted, for display
    tokens: int  # tokens processed: batch x seq_len, or batch x (src_len + tgt_len)
    depth: int = 3

    @property
    def total_params(self) -> int:
        return sum(r.params for r in self.rows)

    @property
    def total_flops(self) -> int:
        return sum(r.flops for r in self.rows)

    @property
    def total_act_bytes(self) -> int:
        return sum(r.act_bytes for r in self.rows)

    @property
    def flops_per_token(self) -> float:
        """Forward FLOPs per processed token (total / tokens)."""
        return self.total_flops / self.tokens

    def fold(self, depth: int) -> list[TraceRow]:
        """Rows merged per block (1), per sublayer (2) or not at all (3); totals unchanged."""
        return fold_rows(self.rows, depth)

    def at_depth(self, depth: int) -> TraceReport:
        """The same report with to_dict() and csv_rows() folded to `depth`."""
        check_depth(depth)
        return replace(self, depth=depth)

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec_name, "family": self.family, "batch": self.batch,
            "seq_len": self.seq_len, "src_len": self.src_len, "tgt_len": self.tgt_len,
            "dtype": self.dtype, "depth": self.depth,
            "rows": [r.to_dict() for r in self.fold(self.depth)],
            "total_params": self.total_params, "total_flops": self.total_flops,
            "total_act_bytes": self.total_act_bytes, "tokens": self.tokens,
            "flops_per_token": self.flops_per_token, "convention": self.convention,
        }

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        """Header and one line per (folded) row; shapes as 1x128x768, inputs joined by ';'."""
        header = ["path", "op", "inputs", "output", "params", "flops", "act_bytes"]
        rows: list[list[object]] = [
            [r.path, r.op, ";".join(map(shape_text, r.inputs)), shape_text(r.output),
             r.params, r.flops, r.act_bytes]
            for r in self.fold(self.depth)
        ]
        return header, rows


# --- the op record -----------------------------------------------------------------------------


def _arrays(reads: Iterable[object]) -> Iterator[Shaped]:
    """The weight arrays among `reads`: arrays, and the arrays of weight containers (a norm, the
    shared experts, each expert), in field order; None is nothing read."""
    for item in reads:
        if isinstance(item, Shaped):
            yield item
        elif is_dataclass(item):
            yield from _arrays(getattr(item, f.name) for f in fields(item))
        elif isinstance(item, (list, tuple)):
            yield from _arrays(item)


def block_signature(node: object) -> tuple[object, ...]:
    """What a block's rows depend on besides its spec view: its arrays' names (below the block)
    and shapes, in field order. Containers' own attributes, walked without dataclasses.fields
    (a 70B trace takes 80 of these)."""
    out: list[object] = []
    for name, value in vars(node).items():
        if isinstance(value, Shaped):
            out += (name, value.shape)
        elif isinstance(value, list):
            out += (name, *(block_signature(v) for v in value))
        elif value is not None:
            out += (name, block_signature(value))
    return tuple(out)


class _Recorder(Recorder):
    """Rows from the engine's op reports, in forward order. The first op to read a weight owns
    it (a tied head reads the token table the embedding owns; a stack's shared T5 table is owned
    by its first block's scores, shared_layers' one block by block 0)."""

    def __init__(self, spec: Spec, dtype: str) -> None:
        self.spec, self.element_bytes = spec, DTYPE_BYTES[dtype]
        self.rows: list[TraceRow] = []
        self._owned: set[str] = set()
        self._kinds: dict[tuple[object, ...], tuple[str, int]] = {}  # -> a block, its first row
        self._blocks: set[int] = set()  # the block containers run or replayed so far
        self._templates: dict[tuple[object, ...], list[Any]] = {}  # kind -> its rows, relative

    def replay(self, path: str, view: object, block: object) -> bool:
        """A block of a kind already recorded (same spec view, same arrays' names and shapes,
        its arrays as new or as already read as that one's) gets that block's rows, renamed;
        the first of each kind runs. A block whose rows own an array outside it (a stack's
        block 0 owns the shared T5 table) stands for no other: the next of its kind runs and
        stands for the rest. llama-2-70b then runs 1 of its 80 blocks."""
        stack, index = path.split(".")
        again = id(block) in self._blocks  # shared_layers: the same arrays, already owned
        self._blocks.add(id(block))
        kind = (stack, id(view), again, block_signature(block))
        seen = self._kinds.get(kind)
        template = None if seen is None else self._template(kind, *seen)
        if template is None:
            self._kinds[kind] = (path, len(self.rows))
            return False
        inside = f"{stack}.blocks.{index}."
        for r, suffix, local in template:
            weights = tuple(inside + w for w in local) if local else ()
            self._owned.update(weights)
            self.rows.append(TraceRow(path + suffix, r.op, r.inputs, r.output, r.params,
                                      r.flops, r.act_bytes, r.repeat, weights))
        return True

    def _template(self, kind: tuple[object, ...], block: str,
                  start: int) -> list[tuple[TraceRow, str, tuple[str, ...]]] | None:
        """Block `block`'s rows from row `start`, each with its path and its owned weights'
        paths below the block; None when one of them owns an array outside the block (it then
        stands for no other)."""
        if kind in self._templates:
            return self._templates[kind]
        inside = block.replace(".", ".blocks.", 1) + "."
        rows = list(takewhile(lambda r: r.path.startswith(block + "."), self.rows[start:]))
        if any(not w.startswith(inside) for r in rows for w in r.weights):
            return None
        template = [(r, r.path[len(block):], tuple(w[len(inside):] for w in r.weights))
                    for r in rows]
        self._templates[kind] = template
        return template

    def record(self, path: str, op: str, output: tuple[int, ...], inputs: tuple[object, ...],
               reads: tuple[object, ...]) -> None:
        arrays = tuple(a for a in _arrays(reads) if a.path is not None)
        shapes = tuple(tuple(getattr(i, "shape", i)) for i in inputs)  # type: ignore[arg-type]
        params, paths = 0, []
        for a in arrays:
            if a.path not in self._owned:
                self._owned.add(a.path)  # type: ignore[arg-type]
                params, paths = params + a.params, [*paths, a.path]
        flops = op_flops(Op(op, shapes, output, arrays), self.spec)
        act_bytes = math.ceil(math.prod(output) * self.element_bytes)
        self.rows.append(TraceRow(path, op, shapes, output, params, flops, act_bytes,
                                  weights=tuple(paths)))  # type: ignore[arg-type]


def listed_blocks(spec: Spec, stack: str) -> int:
    """Blocks of `stack` the trace runs: all, or past MAX_LISTED_BLOCKS the first m and one
    standing for the identical blocks m..L-1 (uniform_tail), m + 1."""
    layers = spec.encoder_layers if stack == "encoder" else spec.decoder_layers
    if layers <= MAX_LISTED_BLOCKS:
        return layers
    m = uniform_tail(spec, layers)
    if m is None:  # no block m <= MAX_LISTED_BLOCKS after which all are of one kind
        raise BadInputError(f"{spec.name}: trace lists every block of a stack that mixes dense "
                            f"and MoE blocks past block {MAX_LISTED_BLOCKS}, at most "
                            f"{MAX_LISTED_BLOCKS}; it has {layers:,} (use --layers)")
    return m + 1


def _folded(spec: Spec, rows: list[TraceRow], run: dict[str, int]) -> list[TraceRow]:
    """Rows with a stack's last run block standing for its identical blocks m..L-1."""
    for stack, blocks in run.items():
        layers = spec.encoder_layers if stack == "encoder" else spec.decoder_layers
        if blocks == layers:
            continue
        first, span = f"{stack}.{blocks - 1}", f"{stack}.{blocks - 1}-{layers - 1}"
        repeat = layers - blocks + 1
        rows = [repeated(r, first, span, repeat)
                if r.path == first or r.path.startswith(first + ".") else r for r in rows]
    return rows


# --- entry point --------------------------------------------------------------------------------


def _resolve_lengths(spec: Spec, seq_len: int | None, src_len: int | None,
                     tgt_len: int | None) -> tuple[int, int | None, int | None]:
    seq = min(spec.max_seq_len, DEFAULT_SEQ_LEN) if seq_len is None else seq_len
    if spec.family != "encoder-decoder":
        if src_len is not None or tgt_len is not None:
            raise BadInputError(f"--src-len/--tgt-len apply to encoder-decoder specs; "
                                f"{spec.name} is a {spec.family}: use --seq-len")
        return seq, None, None
    return seq, seq if src_len is None else src_len, seq if tgt_len is None else tgt_len


def _check_inputs(spec: Spec, batch: int, lengths: dict[str, int | None], dtype: str) -> None:
    check_dtype("--dtype", dtype, ACTIVATION_DTYPES)
    for option, value in {"--batch": batch, **lengths}.items():
        if value is not None and value < 1:
            raise BadInputError(f"{option} must be at least 1, got {value}")
        if value is not None and value > MAX_SIZE:
            raise BadInputError(f"{option} must be at most 2^40 ({MAX_SIZE:,}), got "
                                f"{str(value)[:30]}{'...' if len(str(value)) > 30 else ''}")
        if option != "--batch" and value is not None and spec.positions == "learned" \
                and value > spec.max_seq_len:
            raise BadInputError(f"{option} {value} exceeds max_seq_len {spec.max_seq_len} of "
                                f"{spec.name} (learned positions have no row past it)")


def shaped_input(spec: Spec, batch: int, seq: int, src: int | None,
                  tgt: int | None) -> ModelInput:
    """Shape-only token ids: the source and target of an encoder-decoder, else one sequence."""
    if src is None or tgt is None:
        return ModelInput(Shaped((batch, seq), np.int64))
    return ModelInput(Shaped((batch, src), np.int64), decoder_tokens=Shaped((batch, tgt), np.int64))


def stacks_of(spec: Spec) -> tuple[str, ...]:
    if spec.family == "encoder-decoder":
        return ("encoder", "decoder")
    return ("encoder",) if spec.family == "encoder" else ("decoder",)


def build_trace(spec: Spec, *, batch: int = 1, seq_len: int | None = None,
                src_len: int | None = None, tgt_len: int | None = None,
                dtype: str = "float32") -> TraceReport:
    """The analytic trace of one forward pass of `batch` sequences.

    seq_len defaults to min(spec.max_seq_len, 128); for encoder-decoder, src_len (encoder) and
    tgt_len (decoder) default to seq_len. BadInputError for a length past max_seq_len with
    learned positions, a non-positive size, or an unknown dtype.
    """
    seq, src, tgt = _resolve_lengths(spec, seq_len, src_len, tgt_len)
    given = {"--seq-len": seq, "--src-len": src, "--tgt-len": tgt}
    _check_inputs(spec, batch, given, dtype)
    run = {stack: listed_blocks(spec, stack) for stack in stacks_of(spec)}
    recorder = _Recorder(spec, dtype)
    forward(spec, shaped_weights(spec, run), shaped_input(spec, batch, seq, src, tgt), recorder)
    tokens = batch * (seq if src is None or tgt is None else src + tgt)
    return TraceReport(
        spec_name=spec.name, family=spec.family, batch=batch, seq_len=seq, src_len=src,
        tgt_len=tgt, dtype=dtype, rows=tuple(_folded(spec, recorder.rows, run)),
        convention=convention_text(spec, dtype), tokens=tokens,
    )
