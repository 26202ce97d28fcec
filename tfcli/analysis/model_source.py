"""A runnable model from a resolved SPEC argument: its spec with seeded random weights, or a
checkpoint's. Shared by `tfcli run` and `tfcli generate`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tfcli.checkpoints.gguf.file import is_gguf
from tfcli.analysis.allocation import MemoryEstimate, check_fits, weights_estimate
from tfcli.core.dtypes import ENGINE_DTYPES, check_dtype
from tfcli.engine.init import init_weights
from tfcli.engine.weights import Weights
from tfcli.core.errors import BadInputError
from tfcli.spec.model import Spec
from tfcli.sources import Source, SourceKind, resolve_source


@dataclass(frozen=True)
class Model:
    spec: Spec
    weights: Weights
    dtype: str
    origin: str  # "random weights (seed 0)" or the checkpoint directory
    weights_dir: str | None  # where a tokenizer.json may live (or the GGUF file holding one)
    notes: tuple[str, ...] = ()  # what --weights FILE.npz set and left to the random draw


def is_npz(path: str) -> bool:
    """Whether --weights names a learner's .npz file (engine paths) rather than a checkpoint."""
    return path.lower().endswith(".npz")


def numpy_dtype(name: str) -> type:
    """np.float32 for 'float32': the engine's dtype named by --dtype (BadInputError otherwise)."""
    return np.dtype(check_dtype("--dtype", name, ENGINE_DTYPES)).type


def _checkpoint_dir(source: Source, weights_dir: str | None) -> str | None:
    if weights_dir is not None:
        if not weights_dir:  # Path('') is the current folder: it would load whatever is here
            raise BadInputError("--weights needs a model directory (got an empty name)")
        return weights_dir
    return source.path if source.kind is SourceKind.model_dir else None


Estimator = Callable[[Spec, type], MemoryEstimate]


def load_model(source: Source | str, *, weights_dir: str | None = None, layers: int | None = None,
               dtype: str = "float32", seed: int = 0, estimate: Estimator | None = None) -> Model:
    """The spec (truncated to `layers` when given) with checkpoint or seeded random weights:
    the source's own (a model directory, a GGUF file, a Hub id's whole checkpoint), those of
    `weights_dir` (a model directory or GGUF file under an edited spec), else random ones.

    `estimate(spec, dtype)` checks the command's options against the spec and sizes the whole
    command (weights + activations + ...; default: the weights alone); it runs before any
    weight exists, and the command is refused, with the figures, when it would not fit."""
    np_dtype = numpy_dtype(dtype)
    if isinstance(source, str):
        source = resolve_source(source)
    if weights_dir is None:  # a Hub id: its whole checkpoint, then read as a local model directory
        source = source.with_checkpoint()
    checkpoint = _checkpoint_dir(source, weights_dir)
    spec = source.load_spec()
    if layers is not None:
        spec = spec.with_layers(layers)
    check_fits((estimate or weights_estimate)(spec, np_dtype))
    gguf_file = weights_dir if weights_dir is not None and is_gguf(weights_dir) else \
        source.path if source.kind is SourceKind.gguf and weights_dir is None else None
    if gguf_file is not None:  # the SPEC itself, or --weights FILE.gguf for a spec
        from tfcli.checkpoints.gguf.weights import load_gguf_weights  # gguf only when asked

        weights = load_gguf_weights(gguf_file, spec, np_dtype, truncated=layers is not None)
        return Model(spec, weights, dtype, gguf_file, gguf_file)  # its tokenizer is inside
    random = f"random weights (seed {seed}, std {spec.init_std})"
    if weights_dir is not None and is_npz(weights_dir):  # the learner's arrays over the draw
        from tfcli.checkpoints.npz import apply_npz_weights

        weights, notes = apply_npz_weights(weights_dir, spec, init_weights(spec, seed, np_dtype))
        return Model(spec, weights, dtype, f"{weights_dir} over {random}", None, tuple(notes))
    if checkpoint is None:
        return Model(spec, init_weights(spec, seed, np_dtype), dtype, random, None)
    from tfcli.checkpoints import load_weights  # safetensors only when a checkpoint is used

    weights = load_weights(checkpoint, spec, dtype=np_dtype, truncated=layers is not None)
    return Model(spec, weights, dtype, checkpoint, checkpoint)
