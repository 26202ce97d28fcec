"""Weight memory layout for decode steps: fused projections, transposed storage.

A decode step is bound by reading every weight once, through matrix-vector products whose
speed depends on how each matrix lies in memory (OpenBLAS, 2 threads, GPT-2 small shapes,
benchmarks/README.md). `arrange_weights` lays the arrays out for that, without changing any
shape or value:
- Projections that read the same input (Q, K and V; a gated FFN's gate and up) lie side by
  side in one array, each field a column view of it, so that one product replaces two or
  three (fewer, larger products stream faster).
- Projections no wider out than in (the FFN's down (d_ff, d), attention's output (d, d)) are
  stored transposed in memory (Fortran order): each output is then a dot product over a
  contiguous row of weights (3072 x 768: 16 -> 23 GB/s; 768 x 768: 13 -> 17 GB/s).
- A tied embedding (V, d) is stored Fortran-ordered, so the head reads its transpose, (d, V),
  as rows of V contiguous weights (50257 x 768: 18 -> 22 GB/s). Embedding lookups then gather
  strided rows: 0.9 ms for 128 tokens, under 0.5% of a forward pass.
Matrix-matrix products (prompts, whole forward passes) run within a few percent either way.
Code that does not know about the layout (or weights built by hand) still works: the fields
stay ordinary arrays of the documented shapes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfcli.core.arrays import Array
from tfcli.engine.weights import (AttentionWeights, FFNWeights, LatentAttentionWeights, MoEWeights,
                                  Weights)

# Which arrays lie how (init.py draws straight into this layout; arrange_weights imposes it).
FUSED_QKV = (("wq", "wk", "wv"), ("bq", "bk", "bv"))  # self-attention: one (d, q + 2 kv) array
FUSED_GATE_UP = (("w_gate", "w_up"), ("b_gate", "b_up"))  # gated FFN: one (d, 2 d_ff) array


TRANSPOSED = ("wo", "w_down")  # stored Fortran-ordered: projections no wider out than in


def _fused_groups(parent: str) -> tuple[tuple[str, ...], ...]:
    """The groups of fields that lie side by side in one array of node `parent`: self-attention's
    Q/K/V (not cross-attention's: its Q reads the decoder, K/V the encoder), a gated FFN's
    gate and up (a block's, an expert's, the shared experts')."""
    if parent.endswith(".attn"):
        return FUSED_QKV
    if parent.endswith((".ffn", ".shared")) or ".experts." in parent:
        return FUSED_GATE_UP
    return ()


def laid_out_storage(shapes: dict[str, tuple[int, ...]], dtype: np.dtype,
                     tied_table: bool) -> dict[str, Array]:
    """Unfilled arrays, already in the decode layout, for the paths of `shapes` whose layout is
    not a C-ordered array of their own: column views of one array per fused group (every
    member present), Fortran-ordered transposes; `tied_table`: the token embedding is read
    transposed by the head. The other paths are absent: a plain array is their layout."""
    out: dict[str, Array] = {}
    parents: dict[str, list[str]] = {}
    for path in shapes:
        parent, _, leaf = path.rpartition(".")
        parents.setdefault(parent, []).append(leaf)
        if leaf in TRANSPOSED or (path == "token_embedding" and tied_table):
            out[path] = np.empty(shapes[path], dtype=dtype, order="F")
    for parent, leaves in parents.items():
        for group in _fused_groups(parent):
            if all(name in leaves for name in group):
                members = [f"{parent}.{name}" for name in group]
                widths = [shapes[m][-1] for m in members]
                block = np.empty((*shapes[members[0]][:-1], sum(widths)), dtype=dtype)
                bounds = np.cumsum([0, *widths])
                out.update({m: block[..., a:b] for m, a, b in zip(members, bounds[:-1], bounds[1:])})
    return out


def fuse_columns(parts: Sequence[Array]) -> list[Array]:
    """Copies of `parts` (..., n_i) laid side by side in one new (..., sum n_i) array, returned
    as its consecutive column views; `fused_array(*views)` gives the whole array back."""
    width = sum(p.shape[-1] for p in parts)
    block = np.empty((*parts[0].shape[:-1], width), dtype=np.result_type(*parts))  # C order,
    np.concatenate(parts, axis=-1, out=block)  # whatever order the parts come in: (..., n_1 + ...)
    bounds = np.cumsum([0, *(p.shape[-1] for p in parts)])
    return [block[..., a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def fused_array(*parts: Array | None) -> Array | None:
    """The one array whose consecutive column blocks are exactly `parts`, or None when they are
    not laid out that way (separate arrays, None, a different order)."""
    arrays = [p for p in parts if p is not None]
    if not arrays or len(arrays) < len(parts):
        return None
    base = arrays[0].base
    if not isinstance(base, np.ndarray) or any(p.base is not base for p in arrays):
        return None
    offset = 0
    for part in arrays:
        start = base.ctypes.data + offset * base.itemsize
        if part.shape[:-1] != base.shape[:-1] or part.strides != base.strides:
            return None
        if part.ctypes.data != start:
            return None
        offset += part.shape[-1]
    return base if offset == base.shape[-1] else None


def fused_projection(owner: object, weight_names: tuple[str, ...],
                     bias_names: tuple[str, ...]) -> tuple[Array, Array | None] | None:
    """(W, b) whose column views are the named fields of `owner` (b None when none of them has
    a bias), or None when they are not fused, or only some have biases: the caller then runs one
    product per field. Memoised on `owner`: checking the layout costs about 25 us, more than
    some decode-step products. A field assigned since, or a copy (deepcopy, pickle) whose fields
    are no longer views of the memoised array, is noticed."""
    parts = tuple(getattr(owner, name) for name in (*weight_names, *bias_names))
    memo = owner.__dict__.setdefault("_fused", {})
    hit = memo.get(weight_names)
    if hit is not None and all(a is b for a, b in zip(hit[0], parts)) and _still_views(*hit):
        return hit[1]
    w = fused_array(*parts[: len(weight_names)])
    biases = parts[len(weight_names):]
    if all(b is None for b in biases):
        result = None if w is None else (w, None)
    else:
        b = fused_array(*biases)  # None unless every field has one and they are fused
        result = None if w is None or b is None else (w, b)
    memo[weight_names] = (parts, result)
    return result


def _still_views(parts: tuple[Array | None, ...],
                 result: tuple[Array, Array | None] | None) -> bool:
    """Whether memoised fused arrays are still what the parts (weights, then as many biases)
    are views of."""
    if result is None:
        return True
    w, b = result
    n_weights = len(parts) // 2
    return (all(p is not None and p.base is w for p in parts[:n_weights])
            and (b is None or all(p is not None and p.base is b for p in parts[n_weights:])))


def _fuse(obj: object, weight_names: tuple[str, ...], bias_names: tuple[str, ...]) -> None:
    ws = [getattr(obj, n) for n in weight_names]
    if any(w is None for w in ws):
        return
    if fused_array(*ws) is None:
        for name, view in zip(weight_names, fuse_columns(ws)):
            setattr(obj, name, view)
    bs = [getattr(obj, n) for n in bias_names]
    if all(b is not None for b in bs) and fused_array(*bs) is None:
        for name, view in zip(bias_names, fuse_columns(bs)):
            setattr(obj, name, view)


def _c_order(array: Array | None) -> Array | None:
    return None if array is None else np.ascontiguousarray(array)  # no copy when already so


def _arrange_latent(w: LatentAttentionWeights) -> None:
    """MLA: every projection C-ordered, the output transposed like attention's."""
    w.wq, w.wq_a, w.wq_b = _c_order(w.wq), _c_order(w.wq_a), _c_order(w.wq_b)
    w.wkv_a, w.wkv_b = _c_order(w.wkv_a), _c_order(w.wkv_b)  # type: ignore[assignment]
    w.wo = np.asfortranarray(w.wo)  # (H*dv, d), memory (d, H*dv)


def _arrange_attention(w: AttentionWeights | LatentAttentionWeights, fuse: bool) -> None:
    if isinstance(w, LatentAttentionWeights):
        _arrange_latent(w)
        return
    if fuse:
        _fuse(w, *FUSED_QKV)
    else:
        w.wq, w.wk, w.wv = _c_order(w.wq), _c_order(w.wk), _c_order(w.wv)
    w.wo = np.asfortranarray(w.wo)  # (H*dh, d), memory (d, H*dh)


def _arrange_ffn(w: FFNWeights) -> None:
    if w.w_gate is not None:
        _fuse(w, *FUSED_GATE_UP)
    else:
        w.w_up = _c_order(w.w_up)
    w.w_down = np.asfortranarray(w.w_down)  # (d_ff, d), memory (d, d_ff)


def arrange_weights(weights: Weights) -> Weights:
    """Lay the arrays out for decode steps, in place (see the module docstring); values and shapes unchanged.

    Every matrix ends in its layout whatever it came in (the checkpoint loader hands over
    transposed views of nn.Linear weights, so the down and output projections need no copy).
    Cross-attention Q/K/V are not fused: its Q reads the decoder, its K/V the encoder output.
    """
    for stack in weights.stacks:
        for block in stack.blocks:
            _arrange_attention(block.attn, fuse=True)
            if block.cross_attn is not None:
                _arrange_attention(block.cross_attn, fuse=False)
            if isinstance(block.ffn, MoEWeights):
                block.ffn.router = np.ascontiguousarray(block.ffn.router)
                if block.ffn.shared is not None:
                    _arrange_ffn(block.ffn.shared)
                if block.ffn.shared_gate is not None:
                    block.ffn.shared_gate = np.ascontiguousarray(block.ffn.shared_gate)
            for ffn in block.ffn.experts if isinstance(block.ffn, MoEWeights) else [block.ffn]:
                _arrange_ffn(ffn)
    if weights.lm_head is None:  # tied (or headless: then the order does not matter)
        weights.token_embedding = np.asfortranarray(weights.token_embedding)  # memory (d, V)
    else:
        weights.token_embedding = np.ascontiguousarray(weights.token_embedding)
        weights.lm_head = np.ascontiguousarray(weights.lm_head)
    weights.pooler_w = _c_order(weights.pooler_w)
    weights.head_dense = _c_order(weights.head_dense)
    weights.classifier = _c_order(weights.classifier)
    return weights
