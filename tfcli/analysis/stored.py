"""The checkpoint-header section of `tfcli params`: what the SPEC argument's checkpoint stores,
beside the spec's count - a GGUF file's tensors, a model directory's safetensors headers, or a
Hub repository's (by range requests) - no tensor data is read, NumPy is not imported."""

from __future__ import annotations

import re
from math import prod
from pathlib import Path

from tfcli.checkpoints.configs import model_type, read_config
from tfcli.checkpoints.families import multimodal, table_for
from tfcli.checkpoints.gguf.file import read_gguf
from tfcli.checkpoints.gguf.names import GGUF_TABLES
from tfcli.checkpoints.gguf.spec import gguf_architecture
from tfcli.checkpoints.safetensors_header import INDEX_FILE, SINGLE_FILE, checkpoint_entries
from tfcli.checkpoints.stored import StoredTensor, StoredWeights, merged_mxfp4, stored_weights
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import total_parameters
from tfcli.spec.model import Spec
from tfcli.sources import Source, SourceKind, resolve_source


def _gguf(path: str, spec: Spec) -> StoredWeights:
    gguf = read_gguf(path)
    tensors = [StoredTensor(t.name, t.ggml_type, t.shape, t.n_bytes) for t in gguf.tensors]
    table = GGUF_TABLES[gguf_architecture(gguf)]
    return stored_weights(path, "gguf", table, spec, tensors, total_parameters(spec),
                          unreadable=gguf.unsupported())


def _safetensors(folder: str, spec: Spec) -> StoredWeights | None:
    root = Path(folder)
    if not ((root / SINGLE_FILE).exists() or (root / INDEX_FILE).exists()):
        return None  # a config.json alone: nothing stored to compare
    config = read_config(root)
    entries = checkpoint_entries(root)
    tensors = [StoredTensor(name, e.dtype, e.shape, e.nbytes) for name, e in sorted(entries.items())]
    method = _quant_method(config.get("quantization_config"))
    kind = model_type(config, str(root / "config.json"))
    tensors, method = _readable(tensors, method)
    return stored_weights(folder, "safetensors", table_for(config, kind), spec, tensors,
                          total_parameters(spec), method, not_counted=_not_counted(kind, tensors))


def _not_counted(kind: str, tensors: list[StoredTensor]) -> str:
    """A vision-language wrapper's towers in the file, in words and figures ("" otherwise)."""
    if kind not in multimodal.WRAPPERS:
        return ""
    towers = [t for t in tensors if re.search(multimodal.UNCOUNTED, t.name)]
    parameters = sum(prod(t.shape) for t in towers)
    return (f"{multimodal.WRAPPERS[kind].uncounted}, {len(towers):,} tensors of "
            f"{parameters:,} parameters")


def _readable(tensors: list[StoredTensor], method: str) -> tuple[list[StoredTensor], str]:
    """MXFP4 (gpt-oss) is read as stored: its pairs merged, checked tensor by tensor like any
    other checkpoint; other quantisation methods stay summarised as packed."""
    return (merged_mxfp4(tensors), "") if method == "mxfp4" else (tensors, method)


def _hub(source: Source, spec: Spec) -> StoredWeights | None:
    """A Hub id's safetensors headers, fetched by range requests (none offline)."""
    from tfcli.checkpoints.hub import remote_tensors

    ref, spec_arg = source.hub, source.argument
    assert ref is not None
    folder = Path(str(source.with_config().path))  # cached by load_spec already
    config = read_config(folder)
    kind = model_type(config, str(folder / "config.json"))
    table = table_for(config, kind)
    try:
        found = remote_tensors(ref)
    except BadInputError as exc:
        return StoredWeights(spec_arg, "safetensors on the Hub", (), 0, 0, total_parameters(spec),
                             (f"the checkpoint headers cannot be read: {exc.message}",))
    if found is None:
        return None
    tensors, method = _readable([StoredTensor(*entry) for entry in found],
                                _quant_method(config.get("quantization_config")))
    return stored_weights(spec_arg, "safetensors on the Hub", table, spec, tensors,
                          total_parameters(spec), method, not_counted=_not_counted(kind, tensors))


def _quant_method(quantized: object) -> str:
    """A config's quantization_config method ("gptq", "awq", "bitsandbytes", "fp8"), "" when
    it has none."""
    if quantized is None:
        return ""
    method = quantized.get("quant_method") if isinstance(quantized, dict) else None
    return method[:40] if isinstance(method, str) and method.isprintable() and method else "unknown"


def stored_for(source: Source | str, spec: Spec) -> StoredWeights | None:
    """The stored-weights summary of `source` when it names a checkpoint, else None."""
    if isinstance(source, str):
        source = resolve_source(source)
    if source.kind is SourceKind.gguf:
        return _gguf(source.argument, spec)
    if source.kind is SourceKind.hub:
        return _hub(source, spec)
    folder = source.config_dir  # a named config.json: its folder, as load_spec reads it
    if folder is not None:
        try:
            return _safetensors(folder, spec)
        except BadInputError as exc:  # the count stands on config.json alone; say what failed
            return StoredWeights(folder, "safetensors", (), 0, 0, total_parameters(spec),
                                 (f"the checkpoint cannot be read: {exc.message}",))
    return None
