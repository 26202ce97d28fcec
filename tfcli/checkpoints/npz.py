"""A learner's own arrays: `--weights FILE.npz` (weights by engine path) and `--inputs FILE.npz`
(`embeddings` or `tokens`), each checked for name, shape and dtype against the spec.

Weights are keyed by the engine's paths (`decoder.blocks.0.attn.wq`), oriented as `x @ W`:
(d_in, d_out), as the lessons write them. `*` for the block index gives one array to every
block (`decoder.blocks.*.attn.wq`), as the lesson's four blocks share one set. Arrays the file
does not hold keep the spec's seeded random draw, and a note names them.

The file is a zip of .npy members: every member's header (shape, dtype) is read and checked
before its data, so a member claiming a huge shape, an object array (pickles are never
loaded), a truncated member or a file that is no zip at all is one BadInputError naming the
file and the key, not an allocation or a traceback.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tfcli.core.arrays import Array
from tfcli.core.errors import BadInputError, clip, shown
from tfcli.engine.weights import Weights, named_arrays
from tfcli.spec.blueprint import EVERY, blueprint, concrete_paths
from tfcli.spec.load import did_you_mean
from tfcli.spec.model import Spec

MAX_MEMBERS = 100_000  # keys read from one file: far past any spec's arrays
MAX_LISTED = 8  # names shown in a note or a message
MAX_INPUT_ELEMENTS = 1 << 28  # an inputs array past 1 GiB of float32 is refused before reading


@dataclass(frozen=True)
class Member:
    """One array of the file, its header read, its data not yet."""

    key: str
    shape: tuple[int, ...]
    dtype: np.dtype
    info: zipfile.ZipInfo


def _label(path: str | Path) -> str:
    return clip(str(path))


def _open(path: str | Path, option: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except FileNotFoundError:
        raise BadInputError(f"{option} {_label(path)}: no such file") from None
    except IsADirectoryError:
        raise BadInputError(f"{option} {_label(path)}: a directory, not an .npz file") from None
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise BadInputError(f"{option} {_label(path)}: not an .npz file (np.savez writes one): "
                            f"{clip(str(error))}") from None


def _header(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[tuple[int, ...], np.dtype]:
    with archive.open(info) as handle:
        version = np.lib.format.read_magic(handle)
        read = {(1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0}.get(version)
        if read is None:
            raise ValueError(f"unknown .npy version {version}")
        shape, _, dtype = read(handle)
    return tuple(int(n) for n in shape), np.dtype(dtype)


def members(archive: zipfile.ZipFile, path: str | Path, option: str) -> list[Member]:
    """Every array of the file with its header, in file order; BadInputError for a member that
    is not a readable .npy array or holds Python objects."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise BadInputError(f"{option} {_label(path)} holds {len(infos):,} members; at most "
                            f"{MAX_MEMBERS:,} are read")
    out = []
    for info in infos:
        key = info.filename.removesuffix(".npy")
        try:
            shape, dtype = _header(archive, info)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
            raise BadInputError(f"{option} {_label(path)}: {shown(key)} is not a readable .npy "
                                f"array: {clip(str(error))}") from None
        if dtype.hasobject:
            raise BadInputError(f"{option} {_label(path)}: {shown(key)} holds Python objects; "
                                "only numeric arrays are read (no pickles)")
        out.append(Member(key, shape, dtype, info))
    return out


def read(archive: zipfile.ZipFile, member: Member, path: str | Path, option: str) -> Array:
    """The member's data, its header already checked."""
    try:
        with archive.open(member.info) as handle:
            return np.lib.format.read_array(handle, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
        raise BadInputError(f"{option} {_label(path)}: {shown(member.key)} could not be read: "
                            f"{clip(str(error))}") from None


# --- weights --------------------------------------------------------------------------------------


def _shapes(spec: Spec) -> dict[str, tuple[int, ...]]:
    """Every concrete weight path of `spec` and its shape (tied arrays under their table)."""
    return {p: c.shape for c in blueprint(spec) if c.array and not c.tied
            for p in concrete_paths(spec, c.path)}


def _targets(key: str, shapes: dict[str, tuple[int, ...]], owner: str, label: str) -> list[str]:
    """The concrete paths a key names: itself, or with `*` every block's (every expert's)."""
    if EVERY in key:
        pattern = key.split(".")
        found = [p for p in shapes if _matches(pattern, p.split("."))]
    else:
        found = [key] if key in shapes else []
    if not found:
        names = sorted({_generic(p) for p in shapes} | set(shapes)) if EVERY in key else \
            list(shapes)
        raise BadInputError(f"--weights {label}: {shown(key)} is no weight of {owner}"
                            f"{did_you_mean(key, names)} (keys are engine paths such as "
                            f"{next(iter(shapes))})")
    return found


def _matches(pattern: list[str], parts: list[str]) -> bool:
    return len(pattern) == len(parts) and all(
        a == b or (a == EVERY and b.isdigit()) for a, b in zip(pattern, parts))


def _generic(path: str) -> str:
    return ".".join(EVERY if part.isdigit() else part for part in path.split("."))


def _check_array(member: Member, want: tuple[int, ...], label: str) -> None:
    if member.shape != want:
        raise BadInputError(f"--weights {label}: {shown(member.key)} has shape {member.shape}; "
                            f"the spec's is {want} (matrices as x @ W: (d_in, d_out))")
    if member.dtype.kind not in "fiu":
        raise BadInputError(f"--weights {label}: {shown(member.key)} is {member.dtype}; "
                            "weights must be real numbers")


@dataclass(frozen=True)
class GivenArrays:
    """What a weights file set: each concrete path's array, and the notes saying so."""

    arrays: dict[str, Array]
    notes: tuple[str, ...]


def read_weight_arrays(path: str | Path, shapes: dict[str, tuple[int, ...]],
                       owner: str) -> GivenArrays:
    """The file's arrays by the concrete paths their keys name (`*` for every index), each
    checked against `shapes` (every path the reader takes, and its shape). BadInputError for
    an unknown key (with a did-you-mean), a path given twice, a wrong shape or dtype."""
    label = _label(path)
    given: dict[str, str] = {}  # concrete path -> the key that set it
    out: dict[str, Array] = {}
    with _open(path, "--weights") as archive:
        found = members(archive, path, "--weights")
        if not found:
            raise BadInputError(f"--weights {label} holds no arrays")
        plan = []
        for member in found:
            targets = _targets(member.key, shapes, owner, label)
            _check_array(member, shapes[targets[0]], label)
            for target in targets:
                if target in given:
                    raise BadInputError(f"--weights {label}: {shown(target)} is given twice "
                                        f"(by {shown(given[target])} and {shown(member.key)})")
                given[target] = member.key
            plan.append((member, targets))
        for member, targets in plan:
            value = read(archive, member, path, "--weights")
            out |= dict.fromkeys(targets, value)  # one array read, shared by its paths
    return GivenArrays(out, tuple(_notes(label, found, shapes, given)))


def apply_npz_weights(path: str | Path, spec: Spec, weights: Weights) -> tuple[Weights, list[str]]:
    """`weights` (the spec's random draw) with the file's arrays written into them in place
    (so the engine's fused layout stays as it is), and the notes: what was taken, and which
    arrays kept the random draw."""
    given = read_weight_arrays(path, _shapes(spec), spec.name)
    arrays = dict(named_arrays(weights))
    for target, value in given.arrays.items():
        arrays[target][...] = value  # cast to the run's dtype, in place
    return weights, list(given.notes)


def _notes(label: str, found: list[Member], shapes: dict[str, tuple[int, ...]],
           given: dict[str, str]) -> list[str]:
    kept = [p for p in shapes if p not in given]
    notes = [f"weights: {len(found):,} array(s) from {label} set {len(given):,} of "
             f"{len(shapes):,}"]
    if kept:
        listed = ", ".join(kept[:MAX_LISTED]) + (f" and {len(kept) - MAX_LISTED:,} more"
                                                 if len(kept) > MAX_LISTED else "")
        notes.append(f"kept the spec's random draw: {listed}")
    return notes


# --- inputs ---------------------------------------------------------------------------------------

INPUT_KEYS = ("embeddings", "tokens")


@dataclass(frozen=True)
class NpzInputs:
    """What --inputs held: token ids (B, N) or the first block's input (B, N, d_model)."""

    tokens: Array | None
    embeddings: Array | None


def read_npz_inputs(path: str | Path, spec: Spec) -> NpzInputs:
    """`embeddings` (B, N, d_model) or (N, d_model), or `tokens` (B, N) or (N,): exactly one
    of them, checked against the spec (width, vocabulary, length)."""
    label = _label(path)
    with _open(path, "--inputs") as archive:
        member = _one_input(archive, path, label)
        if member.key == "embeddings":
            embeddings = _embeddings(archive, member, spec.d_model, spec.name, label, path)
            _check_length(spec, embeddings.shape[1], label)
            return NpzInputs(None, embeddings)
        return NpzInputs(_tokens(archive, member, spec, label, path), None)


def read_npz_embeddings(path: str | Path, d_model: int, owner: str) -> Array:
    """--inputs for what has no embedding table (a depth sweep's stacked layers): `embeddings`
    (B, N, d_model) or (N, d_model) only, `tokens` refused by name."""
    label = _label(path)
    with _open(path, "--inputs") as archive:
        member = _one_input(archive, path, label)
        if member.key != "embeddings":
            raise BadInputError(f"--inputs {label}: {owner} takes embeddings (B, N, {d_model}), "
                                "not tokens: a stack of layers has no embedding table")
        return _embeddings(archive, member, d_model, owner, label, path)


def _one_input(archive: zipfile.ZipFile, path: str | Path, label: str) -> Member:
    """The file's one array, a known key within the element bound."""
    found = members(archive, path, "--inputs")
    for member in found:
        if member.key not in INPUT_KEYS:
            raise BadInputError(f"--inputs {label}: unknown key {shown(member.key)}"
                                f"{did_you_mean(member.key, list(INPUT_KEYS))}; an inputs "
                                "file holds embeddings (B, N, d_model) or tokens (B, N)")
    if len(found) != 1:
        raise BadInputError(f"--inputs {label} must hold one of embeddings or tokens, "
                            f"found {len(found)} arrays")
    member = found[0]
    if int(np.prod(member.shape, dtype=object)) > MAX_INPUT_ELEMENTS:
        raise BadInputError(f"--inputs {label}: {member.key} has shape {member.shape}, past "
                            f"{MAX_INPUT_ELEMENTS:,} elements")
    return member


def _embeddings(archive: zipfile.ZipFile, member: Member, d_model: int, owner: str, label: str,
                path: str | Path) -> Array:
    shape = (1, *member.shape) if len(member.shape) == 2 else member.shape
    if len(shape) != 3 or shape[-1] != d_model or 0 in shape:
        raise BadInputError(f"--inputs {label}: embeddings has shape {member.shape}; "
                            f"{owner} takes (B, N, {d_model}) or (N, {d_model})")
    if member.dtype.kind != "f":
        raise BadInputError(f"--inputs {label}: embeddings is {member.dtype}; it must be float")
    return read(archive, member, path, "--inputs").reshape(shape)


def _tokens(archive: zipfile.ZipFile, member: Member, spec: Spec, label: str,
            path: str | Path) -> Array:
    shape = (1, *member.shape) if len(member.shape) == 1 else member.shape
    if len(shape) != 2 or 0 in shape:
        raise BadInputError(f"--inputs {label}: tokens has shape {member.shape}; it must be "
                            "(B, N) or (N,)")
    if member.dtype.kind not in "iu":
        raise BadInputError(f"--inputs {label}: tokens is {member.dtype}; token ids are integers")
    _check_length(spec, shape[1], label)
    tokens = read(archive, member, path, "--inputs").reshape(shape).astype(np.int64)
    if tokens.min() < 0 or tokens.max() >= spec.vocab_size:
        raise BadInputError(f"--inputs {label}: tokens hold ids outside {spec.name}'s "
                            f"vocabulary [0, {spec.vocab_size})")
    return tokens


def _check_length(spec: Spec, length: int, label: str) -> None:
    if spec.positions == "learned" and length > spec.max_seq_len:
        raise BadInputError(f"--inputs {label}: {length:,} positions; {spec.name} has "
                            f"learned positions up to max_seq_len {spec.max_seq_len:,}")
