"""The checkpoint-header section of `tfcli params`: what the SPEC argument's file stores, beside
the spec's count. For a GGUF file today (its header is where its spec comes from too)."""

from __future__ import annotations

from tfcli.checkpoints.gguf_file import is_gguf, read_gguf
from tfcli.checkpoints.gguf_names import GGUF_TABLES
from tfcli.checkpoints.gguf_spec import gguf_architecture
from tfcli.checkpoints.stored import StoredTensor, StoredWeights, stored_weights
from tfcli.params import total_parameters
from tfcli.spec import Spec


def stored_for(spec_arg: str, spec: Spec) -> StoredWeights | None:
    """The stored-weights summary of `spec_arg` when it names a checkpoint file, else None."""
    if not is_gguf(spec_arg):
        return None
    gguf = read_gguf(spec_arg)
    tensors = [StoredTensor(t.name, t.ggml_type, t.shape, t.n_bytes) for t in gguf.tensors]
    table = GGUF_TABLES[gguf_architecture(gguf)]
    return stored_weights(spec_arg, "gguf", table, spec, tensors, total_parameters(spec))
