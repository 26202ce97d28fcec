"""What a checkpoint file actually stores, from its header alone: parameters and bytes per
tensor role and storage type, and whether they are exactly the spec's arrays.

The verdict compares tensor by tensor, through the family's name table: every array the spec
has must be stored under its name with the shape the table's transform expects, and nothing
else may be stored. Pure Python over header records: no tensor data is read, NumPy is not
imported (`tfcli params model.gguf` stays fast).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from math import prod
from typing import Any

from tfcli.checkpoints import mxfp4
from tfcli.checkpoints.names import Table, expand, expected_shape, tensors_per_block
from tfcli.spec.blueprint import EVERY, components, concrete_paths
from tfcli.spec.model import Spec

MAX_LISTED = 8  # differences named one by one; the rest are counted
_BLOCK = re.compile(r"\.\d+\.")


@dataclass(frozen=True)
class StoredTensor:
    name: str
    dtype: str  # the storage type: "Q4_K", "F16", "BF16", ...
    shape: tuple[int, ...]
    n_bytes: int


def merged_mxfp4(tensors: list[StoredTensor]) -> list[StoredTensor]:
    """`tensors` with each MXFP4 `_blocks` / `_scales` pair as the one tensor it stores
    (dtype "MXFP4", the dequantised shape, both parts' bytes: 4.25 bits a weight), as the
    loader reads it."""
    by_name = {t.name: t for t in tensors}
    found = mxfp4.pairs({t.name: (t.dtype, t.shape) for t in tensors})
    parts = {part for pair in found.values() for part in pair}
    merged = [StoredTensor(base, "MXFP4", mxfp4.dequantized_shape(by_name[blocks].shape),
                           by_name[blocks].n_bytes + by_name[scales].n_bytes)
              for base, (blocks, scales) in found.items()]
    return sorted([t for t in tensors if t.name not in parts] + merged, key=lambda t: t.name)


@dataclass(frozen=True)
class StoredGroup:
    """Tensors of one role (block index folded: `blk.*.attn_q.weight`) and one storage type."""

    role: str
    dtype: str
    tensors: int
    parameters: int
    n_bytes: int

    @property
    def bits_per_weight(self) -> float:
        return 8 * self.n_bytes / self.parameters if self.parameters else 0.0


@dataclass(frozen=True)
class StoredWeights:
    source: str
    format: str  # "gguf" or "safetensors"
    groups: tuple[StoredGroup, ...]
    parameters: int
    n_bytes: int
    spec_parameters: int
    differences: tuple[str, ...]  # empty: the file holds exactly the spec's arrays
    # set for a quantised checkpoint (packed weights, scales, zero points): what was compared
    quantized: str = ""
    # what the file stores that the spec does not count, said (a wrapper's vision tower)
    not_counted: str = ""

    @property
    def verdict(self) -> str:
        if self.quantized:
            return (f"{self.quantized}-quantised: the linear layers are stored packed with their "
                    f"scales and zero points ({self.n_bytes:,} bytes in all), so the tensors are "
                    "not compared shape for shape with the spec's")
        if not self.differences:
            aside = f"; not counted: {self.not_counted}" if self.not_counted else ""
            return f"equal: every tensor is the spec's, shape for shape{aside}"
        shown = list(self.differences[:MAX_LISTED])
        more = len(self.differences) - len(shown)
        return "differs: " + "; ".join(shown) + (f"; and {more:,} more" if more > 0 else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "format": self.format, "parameters": self.parameters,
            "bytes": self.n_bytes, "spec_parameters": self.spec_parameters,
            "equal": not self.differences and not self.quantized,
            "differences": list(self.differences), "quantized": self.quantized or None,
            "not_counted": self.not_counted or None,
            "groups": [{"role": g.role, "dtype": g.dtype, "tensors": g.tensors,
                        "parameters": g.parameters, "bytes": g.n_bytes,
                        "bits_per_weight": g.bits_per_weight} for g in self.groups],
        }


def group_tensors(tensors: list[StoredTensor]) -> tuple[StoredGroup, ...]:
    """Tensors folded by role (block indices as `*`) and storage type, in file order."""
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for t in tensors:
        entry = totals[(_BLOCK.sub(f".{EVERY}.", t.name), t.dtype)]
        entry[0] += 1
        entry[1] += prod(t.shape)
        entry[2] += t.n_bytes
    return tuple(StoredGroup(role, dtype, n, p, b) for (role, dtype), (n, p, b) in totals.items())


def _spec_shapes(spec: Spec) -> dict[str, tuple[int, ...]]:
    """Every array of the spec by concrete Weights path (`decoder.blocks.3.attn.wq`)."""
    shapes: dict[str, tuple[int, ...]] = {}
    for c in components(spec):
        if c.tied:
            continue
        for path in concrete_paths(spec, c.path):
            shapes[path] = c.shape
    return shapes


def _base(table: Table, names: set[str]) -> str:
    """The base-model prefix the names use (`model.` in a LlamaForCausalLM), as the loader finds it."""
    return next((b for b in table.bases if f"{b}{table.anchor}" in names), table.bases[0])


def _canonical(table: Table, name: str) -> str:
    for old, new in table.renames:
        if name.endswith(old):
            return name[: -len(old)] + new
    return name


def _expected(table: Table, spec: Spec, base: str) -> dict[str, tuple[int, ...]]:
    """Stored name -> expected stored shape, for every tensor the spec's arrays come from."""
    shapes = _spec_shapes(spec)
    expected: dict[str, tuple[int, ...]] = {}
    for rule in table.rules:
        if not rule.when(spec):
            continue
        for name, ours in expand(rule, spec, base):
            if all(p in shapes for p in ours):
                expected[name] = expected_shape(rule, [shapes[p] for p in ours])
    return expected


def differences(table: Table, spec: Spec, tensors: list[StoredTensor]) -> tuple[str, ...]:
    """Each way the stored tensors differ from the spec's arrays, by tensor name."""
    if spec.total_layers * tensors_per_block(table, spec) > len(tensors):  # each block (and expert) stores tensors of its own: the names
        # are not listed, as a spec of a billion layers would list billions (the loader's rule)
        return (f"the spec has {spec.total_layers:,} blocks"
                f"{f' of {spec.n_experts:,} experts' if spec.n_experts else ''} but the "
                f"checkpoint stores only {len(tensors):,} tensors",)
    stored = {_canonical(table, t.name): t for t in tensors}
    expected = _expected(table, spec, _base(table, set(stored)))
    out = [f"missing {name} {list(shape)}" for name, shape in expected.items() if name not in stored]
    ignored = [re.compile(pattern) for pattern in table.ignored]
    for name, t in stored.items():
        if name not in expected:
            if not (spec.tie_embeddings and name in table.tied_copies
                    or any(p.search(name) for p in ignored)):
                out.append(f"unexpected {t.name} {list(t.shape)}")
        elif expected[name] != t.shape:
            out.append(f"{t.name} is {list(t.shape)}, the spec's is {list(expected[name])}")
    return tuple(out)


def stored_weights(source: str, fmt: str, table: Table, spec: Spec,
                   tensors: list[StoredTensor], spec_parameters: int,
                   quantized: str = "", unreadable: list[str] | None = None,
                   not_counted: str = "") -> StoredWeights:
    """The summary and verdict; a quantised checkpoint (`quantized`: its method) is summarised
    by real bytes only - its packed tensors have other names and shapes by design.
    `unreadable`: why each tensor tfcli cannot compute with (a ggml type its dequantiser
    lacks) cannot be - differences first, as a file tfcli cannot run is never "equal"."""
    found = tuple(unreadable or ()) + (() if quantized else differences(table, spec, tensors))
    return StoredWeights(
        source, fmt, group_tensors(tensors), sum(prod(t.shape) for t in tensors),
        sum(t.n_bytes for t in tensors), spec_parameters, found, quantized, not_counted)
