"""Peak activation memory of one inference forward pass: the largest set of arrays alive at once.

Not a sum of op outputs (that is what `tfcli trace` adds up): each phase of a block (norm,
attention, output projection, FFN) holds the arrays the code still references there, and the
peak is the largest phase. Three implementations are modelled, each walked in its own op order:

  engine  tfcli's NumPy engine (tfcli/engine): attention in query blocks of ~4 MB of scores run
          on `workers` threads at once (no (B, H, T, S) array ever exists), the FFN in rounds of
          rows split by hidden units across the workers (layouts/engine.py);
  eager   transformers' eager attention: (B, H, T, S) scores and probabilities materialised
          (two of them at the softmax), K/V repeated to every query head for GQA;
  sdpa    transformers' fused attention (torch sdpa / flash): no score matrix leaves the kernel.

transformers' module layouts differ per family: the layout walked is the row of
layouts.LAYOUTS that the spec, the attention and the checkpoint's fused modules pick. Which
buffers are freed when is written next to each phase (docs/memory.md has the whole list).
"""

from __future__ import annotations

from tfcli.analysis.memory.base import (ATTENTION_KINDS, FUSIONS, ActivationPeak, Workload,
                                        check_fused, check_modelled, peak_of)
from tfcli.analysis.memory.layouts import layout_for
from tfcli.core.errors import BadInputError
from tfcli.sources import Source
from tfcli.spec.model import Spec

__all__ = ["ATTENTION_KINDS", "FUSED_MODULES", "FUSIONS", "ActivationPeak", "Workload",
           "check_fused", "checkpoint_fusions", "inference_peak"]

# The projections a checkpoint's transformers modules fuse (base.FUSIONS), by its config.json
# model_type: Phi-3 both, GPT-NeoX qkv, Falcon its own attention module (layouts/falcon.py)
FUSED_MODULES: dict[str, frozenset[str]] = {
    "phi3": frozenset({"qkv", "gate_up"}),
    "gpt_neox": frozenset({"qkv"}),
    "falcon": frozenset({"falcon_qkv"}),
    "starcoder2": frozenset({"gelu_kernel"}),  # gelu_pytorch_tanh
    "glm": frozenset({"gate_up"}),
    "glm4": frozenset({"gate_up"}),
}


def checkpoint_fusions(source: Source) -> frozenset[str]:
    """The projections a model directory's transformers modules fuse (FUSED_MODULES by its
    config.json model_type); none for a spec file, a bundled name, a named config.json, a Hub
    id or a GGUF file."""
    from tfcli.checkpoints.configs import model_type, read_config
    from tfcli.sources import SourceKind

    if source.kind is not SourceKind.model_dir or source.path is None:
        return frozenset()
    return FUSED_MODULES.get(model_type(read_config(source.path)), frozenset())


def inference_peak(spec: Spec, work: Workload, attention: str = "engine",
                   fused: frozenset[str] = frozenset()) -> ActivationPeak:
    """The peak live activations of one forward pass of `work` under `attention` (engine, eager
    or sdpa) with transformers' modules fusing the `fused` projections (FUSIONS; the engine
    has its own layout), weights and KV cache excluded."""
    check_modelled(spec)
    check_fused(fused)
    if attention not in ATTENTION_KINDS:
        raise BadInputError(f"unknown attention implementation '{attention}': use one of "
                            f"{', '.join(ATTENTION_KINDS)}")
    layout = layout_for(spec, attention, fused)
    return peak_of(layout.module.live(spec, work, attention, fused), work)
