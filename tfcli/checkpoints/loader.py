"""safetensors checkpoint -> tfcli Weights, through the family's name table (names.py).

The spec's blueprint (tfcli.spec.blueprint) decides which arrays exist and their shapes: a
shape-only skeleton, the same walk over it as `init_weights`, lists every Weights path. Loading then (1) expands the table over
blocks and experts, (2) checks that every needed tensor is present with the expected shape and
that no unknown tensor is left over, (3) reads and places the tensors, (4) checks the total
against `tfcli.spec.counts.total_parameters`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tfcli.core.arrays import Array
from tfcli.checkpoints.configs import config_file, model_type, read_config, spec_from_config_dir
from tfcli.checkpoints.families import table_for
from tfcli.checkpoints.gguf.file import is_gguf
from tfcli.checkpoints.names import (Rule, Table, engine_paths, expand, expected_shape,
                                     tensors_per_block, unstacked)
from tfcli.checkpoints.tensors import TensorSource
from tfcli.engine.init import Initializer
from tfcli.engine.layout import arrange_weights
from tfcli.engine.weights import Weights, count_parameters, named_arrays
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import total_parameters
from tfcli.spec.model import Spec

MAX_LISTED = 8  # names shown in one error message


class _ShapeOnly(Initializer):
    """An Initializer whose 'arrays' are zero-stride views: shapes without memory."""

    def _placeholder(self, *shape: int) -> Array:
        return np.broadcast_to(np.zeros((), dtype=self.dtype), shape)

    normal = zeros = ones = _placeholder


def skeleton(spec: Spec, dtype: np.dtype | type = np.float32) -> Weights:
    """Weights of `spec` with placeholder arrays: init_weights' walk of the blueprint, drawing
    nothing."""
    return _ShapeOnly(spec, np.random.default_rng(0), dtype).weights()


def set_path(obj: object, path: str, value: Array) -> None:
    *parents, last = path.split(".")
    for part in parents:
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part)  # type: ignore[index]
    setattr(obj, last, value)


@dataclass(frozen=True)
class Step:
    """One checkpoint tensor to read and where its piece(s) go."""

    rule: Rule
    hf: str  # the name as stored in the checkpoint
    ours: tuple[str, ...]


def plan(table: Table, spec: Spec, base: str, slots: dict[str, Array],
         stored: dict[str, str]) -> tuple[list[Step], list[str]]:
    """The steps that fill `slots`, and the checkpoint names they need but are missing (each
    with the Weights path(s) it would fill: 'h.0.ln_1.weight (for decoder.blocks.0.attn_norm.scale)')."""
    steps, missing = [], []
    for rule in table.rules:
        if not rule.when(spec):
            continue
        for hf, ours in expand(rule, spec, base):
            if not all(p in slots for p in ours):
                continue  # this variant does not exist for the spec (bias: false, dense FFN, ...)
            if hf in stored:
                steps.append(Step(rule, stored[hf], ours))
            else:
                missing.append(f"{hf} (for {', '.join(ours)})")
    return steps, missing


def _owned(array: Array) -> Array:
    """`array` in memory NumPy allocated itself (or a view of such: an expert of a stacked one). NumPy asks Linux for transparent huge pages on
    large allocations; safetensors' buffers get none, and the TLB misses cost decode steps,
    which stream every weight once per token (GPT-2 small: 23.5-29.8 tok/s from safetensors'
    buffers, 26.9-31.5 after a copy, 3 alternating runs)."""
    owner = array if array.flags.owndata else array.base
    return array if isinstance(owner, np.ndarray) and owner.flags.owndata else array.copy()


def convert(rule: Rule, array: Array, shapes: list[tuple[int, ...]],
            d_head: int | None = None) -> list[Array]:
    """The arrays `rule` makes of checkpoint tensor `array`, for Weights slots of `shapes`
    (`d_head`: the spec's head width, which `split_heads3` cuts at)."""
    if rule.stacked:  # (E, ...): each expert's slice as its own tensor, `shapes` expert by expert
        per_expert, one = len(rule.ours), unstacked(rule)
        return [piece for e, expert in enumerate(_owned(array))
                for piece in convert(one, expert, shapes[e * per_expert:(e + 1) * per_expert],
                                     d_head)]
    if rule.transform == "split_heads3":
        return _split_heads3(array, d_head)
    if rule.transform == "split_grouped_qkv":
        return _split_grouped_qkv(array, shapes, d_head)
    if rule.transform == "linear":
        # nn.Linear (out, in) -> (in, out) as a transposed view; arrange_weights then copies
        # only the matrices whose layout differs (not the down and output projections)
        return [_owned(array).T]
    if rule.transform == "deinterleave":  # (..., k w) -> k strided views (..., w)
        return [array[..., j::len(shapes)] for j in range(len(shapes))]
    if rule.transform == "split":
        # equal column views: GPT-2's c_attn (d, 3d) -> wq, wk, wv (already fused, see
        # arrange_weights); Llama 4's gate_up_proj (d, 2 d_ff) -> w_gate, w_up
        return np.split(_owned(array), len(shapes), axis=-1)
    if rule.transform == "squeeze":  # (1, *shape) -> shape
        return [_owned(array)[0]]
    if rule.transform == "split_linear":
        # (sum w_i, in) -> (in, w_i) column views of the transpose, cut at the spec's widths;
        # arrange_weights fuses them again (Q/K/V, gate/up) in the decode layout
        bounds = np.cumsum([s[-1] for s in shapes])[:-1]
        return np.split(_owned(array).T, bounds, axis=-1)
    return [_owned(array)]


def _split_heads3(array: Array, d_head: int | None) -> list[Array]:
    """GPT-NeoX's query_key_value: an nn.Linear (3 H dh, in) whose rows are head-major, each
    head's q, k and v rows together ((H, 3, dh) as transformers views it), or its (3 H dh,)
    bias -> wq, wk, wv (in, H dh) and bq, bk, bv (H dh,)."""
    if not d_head:
        raise ValueError("split_heads3 needs the spec's d_head")
    rest = array.shape[1:]  # (in,) for the weight, () for the bias
    heads = array.reshape(-1, 3, d_head, *rest)  # (H, 3, dh, *rest)
    # (H, dh, *rest) -> (H dh, *rest) -> (in, H dh): arrange_weights lays them out for decoding
    return [heads[:, j].reshape(-1, *rest).T for j in range(3)]


def _split_grouped_qkv(array: Array, shapes: list[tuple[int, ...]],
                       d_head: int | None) -> list[Array]:
    """Falcon's query_key_value: an nn.Linear whose rows are grouped per key/value head,
    (n_kv, g + 2, dh, in) - the group's g query heads, then its key, then its value - or its
    bias -> wq (in, H dh), wk and wv (in, n_kv dh), or the biases. Multi-query is one group of
    every head; the old (H, 3, dh) layout is H groups of one."""
    if not d_head:
        raise ValueError("split_grouped_qkv needs the spec's d_head")
    q_width, kv_width = shapes[0][-1], shapes[1][-1]
    group, rest = q_width // kv_width, array.shape[1:]  # rest: (in,) for the weight, () bias
    groups = array.reshape(kv_width // d_head, group + 2, d_head, *rest)  # (n_kv, g + 2, dh, ..)
    parts = (groups[:, :group], groups[:, group], groups[:, group + 1])
    # each (n_kv [, g], dh, *rest) -> (width, *rest), in memory of its own -> (in, width)
    return [_owned(p.reshape(w, *rest)).T for p, w in zip(parts, (q_width, kv_width, kv_width))]


def canonical_names(table: Table, names: list[str]) -> dict[str, str]:
    """Canonical name (after the table's renames) -> name as stored."""
    out = {}
    for name in names:
        canonical = name
        for old, new in table.renames:
            if canonical.endswith(old):
                canonical = canonical[: -len(old)] + new
        out[canonical] = name
    return out


def find_base(table: Table, stored: dict[str, str], where: Path, kind: str) -> str:
    for base in table.bases:
        if base + table.anchor in stored:
            return base
    tried = ", ".join(repr(b + table.anchor) for b in table.bases)
    raise BadInputError(f"{where}: no tensor {tried}; is this a {kind} checkpoint?")


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    return shown + (f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def unexpected(table: Table, spec: Spec, stored: dict[str, str], used: set[str]) -> list[str]:
    ignored = list(table.ignored)
    if spec.tie_embeddings:
        ignored += [f"^{re.escape(name)}$" for name in table.tied_copies]
    return sorted(
        name for canonical, name in stored.items()
        if name not in used and not any(re.search(p, canonical) for p in ignored)
    )


def _unexpected_label(table: Table, spec: Spec, base: str, name: str, canonical: str) -> str:
    """`name` with what tfcli would make of it: the Weights path a rule maps it to (which this
    spec lacks: a bias of a `bias: false` spec, a block past its last), or no weight at all."""
    paths = engine_paths(table, spec, base, canonical)
    if paths is None:
        return f"{name} (no tfcli weight)"
    return f"{name} (for {', '.join(paths)}, which this spec does not have)"


def check_shapes(steps: list[Step], slots: dict[str, Array], source: TensorSource) -> None:
    for step in steps:
        expected = expected_shape(step.rule, [slots[p].shape for p in step.ours])
        actual = source.shape(step.hf)
        if actual != expected:
            raise BadInputError(
                f"{source.directory}: tensor '{step.hf}' has shape {list(actual)}, expected "
                f"{list(expected)} for the spec's {', '.join(step.ours)} (does config.json "
                "match the weights?)"
            )


def load_weights(path: str | Path, spec: Spec, dtype: np.dtype | type = np.float32, *,
                 truncated: bool = False) -> Weights:
    """Weights for `spec` from a Hugging Face model directory (config.json + safetensors).

    Tensors are converted to `dtype` (bf16 / f16 checkpoints included). Tied heads share the
    embedding array (`lm_head` is None). Raises BadInputError naming any missing, mis-shaped or
    unexpected tensor, before reading any tensor data. `truncated`: the spec keeps only the
    first blocks of the checkpoint (`--layers K`), so tensors of later blocks are skipped.
    """
    directory = Path(path)
    if is_gguf(directory):  # a regular file only; not 'config.json is not UTF-8 text'
        raise BadInputError(f"{directory}: a GGUF file, not a Hugging Face model directory "
                            "(config.json + safetensors); load it as the SPEC, or with "
                            "load_gguf_weights")
    config = read_config(directory)
    kind = model_type(config, str(config_file(directory)))
    table = table_for(config, kind)
    with TensorSource(directory) as source:
        _check_block_count(table, spec, source)
        weights = skeleton(spec, dtype)
        slots = dict(named_arrays(weights))
        steps = checked_plan(table, spec, slots, source, kind, truncated)
        for step in steps:
            tensor, shapes = source.get(step.hf, np.dtype(dtype)), [slots[p].shape for p in step.ours]
            for ours, array in zip(step.ours, convert(step.rule, tensor, shapes, spec.head_dim)):
                set_path(weights, ours, array)
                slots.pop(ours)
    _check_complete(weights, spec, slots, directory)
    return arrange_weights(weights)


def _check_block_count(table: Table, spec: Spec, source: TensorSource) -> None:
    """Every block (and expert) needs tensors of its own: a spec with more of them than the
    checkpoint holds tensors is refused before skeleton() and plan() loop over billions."""
    if spec.total_layers * tensors_per_block(table, spec) > len(source.names):
        raise BadInputError(f"{source.directory}: the spec has {spec.total_layers:,} blocks "
                            f"but the checkpoint holds only {len(source.names):,} tensors")


def _later_block(name: str, spec: Spec) -> bool:
    """True for a tensor of a block beyond the (truncated) spec: the first number in every
    family's tensor names is the block index (h.3, layer.3, layers.3, block.3)."""
    match = re.search(r"\.(\d+)\.", name)
    return match is not None and int(match.group(1)) >= max(spec.encoder_layers, spec.decoder_layers)


def checked_plan(table: Table, spec: Spec, slots: dict[str, Array], source: TensorSource,
                 kind: str, truncated: bool = False) -> list[Step]:
    """The loading steps, once every needed tensor is known present, expected and well shaped."""
    stored = canonical_names(table, source.names)
    base = find_base(table, stored, source.directory, kind)
    steps, missing = plan(table, spec, base, slots, stored)
    if missing:
        raise BadInputError(f"{source.directory}: missing tensor(s) {_listed(missing)}")
    extra = unexpected(table, spec, stored, {s.hf for s in steps})
    if truncated:
        extra = [name for name in extra if not _later_block(name, spec)]
    if extra:
        canonical = {name: key for key, name in stored.items()}
        labels = [_unexpected_label(table, spec, base, name, canonical[name])
                  for name in extra[:MAX_LISTED]] + extra[MAX_LISTED:]  # only the shown ones
        raise BadInputError(f"{source.directory}: unexpected tensor(s) {_listed(labels)} "
                            f"(not part of a {kind} model as tfcli describes it)")
    check_shapes(steps, slots, source)
    return steps


def _check_complete(weights: Weights, spec: Spec, unfilled: dict[str, Array], where: Path) -> None:
    if unfilled:  # a table without a rule for some array: a tfcli bug, not the user's
        raise RuntimeError(f"no checkpoint rule fills {_listed(sorted(unfilled))}")
    loaded, expected = count_parameters(weights, spec), total_parameters(spec)
    if loaded != expected:
        raise BadInputError(f"{where}: loaded {loaded:,} parameters but the spec counts {expected:,}")


def load_checkpoint(path: str | Path, dtype: np.dtype | type = np.float32) -> tuple[Spec, Weights]:
    """Spec and Weights of a Hugging Face model directory in one call."""
    spec = spec_from_config_dir(path)
    return spec, load_weights(path, spec, dtype)
