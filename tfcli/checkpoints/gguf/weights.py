"""GGUF tensors -> tfcli Weights: each tensor dequantised to float32 (then the engine's dtype)
through the `gguf` package, and placed by the architecture's name table (gguf_names.py) with
the same plan / convert steps as a safetensors checkpoint (loader.py).

llama.cpp's converter permutes the rows of q and k for its "llama" architecture (so that its
RoPE pairs adjacent dimensions); the permutation is undone here, as transformers does when it
loads a GGUF, so the engine's rotate-half RoPE sees Hugging Face's layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tfcli.core.arrays import Array
from tfcli.checkpoints.gguf.file import GGUFFile, GGUFTensor, read_gguf, type_id
from tfcli.checkpoints.gguf.names import GGUF_TABLES
from tfcli.checkpoints.gguf.spec import gguf_architecture
from tfcli.checkpoints.loader import (
    _check_complete,
    checked_plan,
    convert,
    set_path,
    skeleton,
)
from tfcli.core.deps import calling, require
from tfcli.engine.layout import arrange_weights
from tfcli.engine.weights import Weights, named_arrays
from tfcli.core.errors import shown
from tfcli.spec.model import Spec

# llama.cpp architectures whose converter permuted q and k (convert_hf_to_gguf.py LlamaModel
# and its subclasses GraniteModel, SmolLM3Model)
PERMUTED_QK = frozenset({"llama", "granite", "smollm3"})
# ... and those whose converter stored every norm weight as 1 + w (llama.cpp's RMSNorm scales
# by w; Gemma's by 1 + w): transformers subtracts the 1 again (Gemma2TensorProcessor), as here
PLUS_ONE_NORMS = frozenset({"gemma2", "gemma3"})


def _dequantize() -> Any:
    """gguf's dequantiser, imported through deps.require (a missing or broken install is one
    line saying how to install it)."""
    quants = require("gguf.quants", "running a GGUF file (to dequantise its tensors)")
    kinds = require("gguf", "running a GGUF file").GGMLQuantizationType
    return lambda raw, tid: quants.dequantize(raw, kinds(tid))


def unpermute(weights: Array, n_heads: int) -> Array:
    """Undo llama.cpp's q/k row permutation: (H * dh, ...) rows back to rotate-half order.
    llama.cpp wrote rows as (H, dh/2, 2) from Hugging Face's (H, 2, dh/2)."""
    rows = weights.shape[0]
    w = weights.reshape(n_heads, rows // n_heads // 2, 2, *weights.shape[1:])
    return w.swapaxes(1, 2).reshape(weights.shape)  # (H, dh/2, 2, ...) -> (H, 2, dh/2, ...)


class GGUFSource:
    """The TensorSource interface (names, shape, get, directory) over one GGUF file."""

    def __init__(self, gguf: GGUFFile, spec: Spec) -> None:
        self.gguf, self.directory = gguf, gguf.path
        self.names = [t.name for t in gguf.tensors]
        self._tensors = {t.name: t for t in gguf.tensors}
        self._data = np.memmap(gguf.path, dtype=np.uint8, mode="r")
        self._dequantize = _dequantize()
        arch = gguf_architecture(gguf)
        permuted = arch in PERMUTED_QK
        self._heads = {"attn_q": spec.n_heads, "attn_k": spec.kv_heads} if permuted else {}
        self._norm_offset = 1.0 if arch in PLUS_ONE_NORMS else 0.0

    def shape(self, name: str) -> tuple[int, ...]:
        return self._tensors[name].shape

    def _raw(self, t: GGUFTensor) -> Array:
        start = self.gguf.data_offset + t.offset
        rows = t.shape[0] if len(t.shape) > 1 else 1
        return self._data[start:start + t.n_bytes].reshape(rows, -1)  # (rows, bytes per row)

    def get(self, name: str, dtype: np.dtype | Any) -> Array:
        t = self._tensors[name]
        with calling("gguf", str(self.gguf.path), f"dequantising tensor {shown(name)}"):
            array = self._dequantize(self._raw(t), type_id(t.ggml_type)).reshape(t.shape)
        role = name.split(".")[-2] if name.startswith("blk.") else ""
        if role in self._heads:
            array = unpermute(array, self._heads[role])
        if self._norm_offset and name.endswith("norm.weight"):
            array = array - self._norm_offset
        return np.ascontiguousarray(array, dtype=dtype)


def _check_dequantisable(gguf: GGUFFile, names: list[str]) -> None:
    """Refuse, before any tensor is dequantised, a needed tensor whose ggml type the header
    allows but the dequantiser lacks (gguf_file.DEQUANTISABLE)."""
    tensors = {t.name: t for t in gguf.tensors}
    for name in names:
        why = tensors[name].unsupported if name in tensors else None
        if why is not None:
            raise gguf.error(f"{why}, so it cannot be run")


def load_gguf_weights(path: str | Path, spec: Spec, dtype: np.dtype | type = np.float32, *,
                      truncated: bool = False) -> Weights:
    """Weights for `spec` from a GGUF file, dequantised to `dtype`. Missing, mis-shaped or
    unexpected tensors are refused by name before any is dequantised."""
    gguf = read_gguf(path)
    arch = gguf_architecture(gguf)
    source = GGUFSource(gguf, spec)
    weights = skeleton(spec, dtype)
    slots = dict(named_arrays(weights))
    steps = checked_plan(GGUF_TABLES[arch], spec, slots, source, f"GGUF {arch}", truncated)
    _check_dequantisable(gguf, [step.hf for step in steps])
    for step in steps:
        tensor, shapes = source.get(step.hf, np.dtype(dtype)), [slots[p].shape for p in step.ours]
        for ours, array in zip(step.ours, convert(step.rule, tensor, shapes)):
            set_path(weights, ours, array)
            slots.pop(ours)
    _check_complete(weights, spec, slots, gguf.path)
    return arrange_weights(weights)
