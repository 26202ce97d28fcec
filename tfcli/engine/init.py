"""Random weights: the spec's blueprint drawn from one seeded generator, and init_weights.

Which arrays a spec has, their shapes, init rules and the order the seed's values go to them
are its blueprint's (tfcli.spec.blueprint); this module only draws. The checkpoint loader's
skeleton() is the same walk with placeholder arrays (overriding the three draw methods), so a
new weight is added to the blueprint once.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.layout import arrange_weights, laid_out_storage
from tfcli.engine.shaped import Shaped
from tfcli.engine.weights import BlockWeights, NormWeights, Weights, assemble, assemble_part
from tfcli.spec.blueprint import (EVERY, Placed, blueprint, block_part, has_block, norm_components,
                                  placed)
from tfcli.spec.model import Spec

CHUNK_VALUES = 1 << 16  # normals drawn per call into a scratch row block (256 KiB of float32)


class Initializer:
    """Builds weights from three draw methods: `normal(*shape)` (N(0, init_std^2) from one seeded
    generator, row-major order), `zeros`, `ones`. Subclasses change what an array is (placeholders,
    other draws); the blueprint stays the one description of the tree.

    laid_out: draw straight into layout.py's memory layout (fused Q/K/V and gate/up, transposed
    storage), each value the one a row-major draw of the field alone gives, so that
    arrange_weights has nothing left to copy. Off, every field is its own C-ordered array.
    """

    def __init__(self, spec: Spec, rng: np.random.Generator, dtype: np.dtype | type = np.float32,
                 laid_out: bool = False):
        self.spec = spec
        self.rng = rng
        self.dtype = np.dtype(dtype)
        self.laid_out = laid_out

    # --- draws ---------------------------------------------------------------------------------

    def fill_normal(self, out: Array) -> None:
        """Fill a C-contiguous `out` with the generator's next out.size N(0, init_std^2) values,
        scaled in place: float32 weights are drawn as float32 (no float64 detour), float64 ones
        as float64; other dtypes are float64 draws rounded."""
        if out.dtype in (np.float32, np.float64):
            self.rng.standard_normal(out=out, dtype=out.dtype)
            out *= out.dtype.type(self.spec.init_std)
        else:
            out[...] = self.rng.standard_normal(out.shape) * self.spec.init_std

    def normal(self, *shape: int) -> Array:
        out = np.empty(shape, dtype=self.dtype)
        self.fill_normal(out)
        return out

    def zeros(self, *shape: int) -> Array:
        return np.zeros(shape, dtype=self.dtype)

    def ones(self, *shape: int) -> Array:
        return np.ones(shape, dtype=self.dtype)

    def _fill_rows(self, out: Array) -> None:
        """`out` (R, C), any strides, filled as a row-major draw of (R, C) would fill it: chunks
        of rows drawn into one small scratch block, then copied into place."""
        if out.flags.c_contiguous:
            self.fill_normal(out)
            return
        rows = max(1, CHUNK_VALUES // max(1, out.shape[1]))
        scratch = np.empty((min(rows, out.shape[0]), out.shape[1]), dtype=self.dtype)
        for start in range(0, out.shape[0], rows):
            part = scratch[: min(rows, out.shape[0] - start)]  # (r, C), C-contiguous
            self.fill_normal(part)
            out[start:start + len(part)] = part

    # --- the blueprint, drawn ------------------------------------------------------------------

    def arrays(self, entries: list[Placed]) -> list[tuple[str, Array | None]]:
        """(path, array) for `entries`, drawn in their (draw) order; None for a module without
        parameters."""
        storage = self._storage(entries) if self.laid_out else {}
        draws: dict[str, Callable[..., Array]] = {
            "normal": self.normal, "zeros": self.zeros, "ones": self.ones}
        out: list[tuple[str, Array | None]] = []
        for entry in entries:
            c = entry.component
            if not c.array:
                out.append((entry.path, None))
            elif entry.path in storage:
                out.append((entry.path, self._fill(storage[entry.path], c.init)))
            else:
                out.append((entry.path, draws[c.init](*c.shape)))
        return out

    def _storage(self, entries: list[Placed]) -> dict[str, Array]:
        s = self.spec
        shapes = {e.path: e.component.shape for e in entries if e.component.array}
        return laid_out_storage(shapes, self.dtype, tied_table=not s.lm_head or s.tie_embeddings)

    def _fill(self, out: Array, init: str) -> Array:
        if init == "normal":
            self._fill_rows(out)
        else:
            out[...] = 0 if init == "zeros" else 1
        return out

    def weights(self) -> Weights:
        """The whole tree of `spec`, drawn in the blueprint's draw order."""
        s = self.spec
        layers = {"encoder": s.encoder_layers, "decoder": s.decoder_layers}
        return assemble(self.arrays(placed(s)), layers)

    def part(self, name: str, layer: int = 0, stack: str | None = None) -> object:
        """One node (or array) of block `layer`: `attn_norm`, `attn`, `ffn_norm`, `ffn`, ...;
        None when the block has none. Only its own arrays are drawn. `stack` defaults to the
        encoder when the spec has one (its blocks have no cross-attention)."""
        stack = stack or ("encoder" if self.spec.has_encoder else "decoder")
        node, entries = block_part(self.spec, stack, layer, name)
        if not entries:
            return None
        return assemble_part(self._relative(node, self.arrays(entries)), name)

    def block(self, layer: int = 0, stack: str | None = None) -> BlockWeights:
        """Block `layer` of `stack` (see `part`), drawn on its own, its parts in draw order."""
        stack = stack or ("encoder" if self.spec.has_encoder else "decoder")
        node, entries = block_part(self.spec, stack, layer, "")
        return assemble_part(self._relative(node, self.arrays(entries)), "block")  # type: ignore[return-value]

    def norm(self, width: int | None = None) -> NormWeights | None:
        """A norm of the spec's kind on its own (d_model wide, or `width`)."""
        entries = [Placed(c.path, c, ()) for c in norm_components(self.spec, width)]
        if not entries:
            return None
        return assemble_part(self._relative("norm", self.arrays(entries)), "norm")  # type: ignore[return-value]

    @staticmethod
    def _relative(node: str, items: list[tuple[str, Array | None]]) -> list[tuple[str, Array | None]]:
        """Paths relative to `node` ('' for the node itself)."""
        return [(path[len(node) + 1:] if path != node else "", a) for path, a in items]


def init_weights(spec: Spec, seed: int = 0, dtype: np.dtype | type = np.float32) -> Weights:
    """Random weights for `spec` from np.random.default_rng(seed), drawn straight into the
    decode layout (arrange_weights then finds nothing to move)."""
    init = Initializer(spec, np.random.default_rng(seed), dtype, laid_out=True)
    return arrange_weights(init.weights())


# --- shapes --------------------------------------------------------------------------------------

_EXPERTS = f".experts.{EVERY}."


def shaped_weights(spec: Spec, blocks: dict[str, int]) -> Weights:
    """The Weights tree of `spec` as shape-only arrays (tfcli.engine.shaped), each carrying its
    blueprint path, role and parameter count: what the trace runs the forward pass on.

    Only blocks 0..blocks[stack]-1 of each stack are built, so a 10^9-layer spec stays a few
    objects. A block's experts are one entry standing for all E of them (path `experts.*`, E
    times the parameters): on shapes, the routed experts are one op. Memoised: the forward on
    shapes only reads the tree, and a memory sweep or a repeated trace asks for the same one
    (building it is a fifth of a folded trace's time).
    """
    key = tuple(sorted(blocks.items()))
    try:
        return _shaped_weights(spec, key)
    except TypeError:  # a spec with a list field (DeBERTa's terms) is not hashable: build it
        return _build_shaped(spec, blocks)


@lru_cache(maxsize=16)
def _shaped_weights(spec: Spec, blocks: tuple[tuple[str, int], ...]) -> Weights:
    return _build_shaped(spec, dict(blocks))


def _build_shaped(spec: Spec, blocks: dict[str, int]) -> Weights:
    items: list[tuple[str, Array | None]] = []
    for c in blueprint(spec):
        if c.tied:  # a tied head reads the array it shares
            continue
        params = c.per_instance * (spec.n_experts if _EXPERTS in c.path else 1)
        for path in _built_paths(spec, c.path, blocks):
            shown = path.replace(".experts.0.", _EXPERTS)
            items.append((path, Shaped(c.shape, np.float32, shown, c.role, params)
                          if c.array else None))
    return assemble(items, blocks)


def _built_paths(spec: Spec, path: str, blocks: dict[str, int]) -> list[str]:
    """`path` for each built block that has it, its experts' `*` as the one expert 0."""
    path = path.replace(_EXPERTS, ".experts.0.")
    mark = f".blocks.{EVERY}."
    if mark not in path:
        return [path]
    stack = path.split(".", 1)[0]
    return [path.replace(mark, f".blocks.{i}.", 1) for i in range(blocks.get(stack, 0))
            if has_block(spec, path, i)]
