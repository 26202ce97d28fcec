"""What autograd keeps for backward in one training forward pass, as transformers' modules run
(the bytes torch.autograd.graph.saved_tensors_hooks sees, each storage once): the layout's own
count (layouts.LAYOUTS picks it), built on the generic saved parts (saved_parts.py).

Recomputation: `none` keeps everything; `selective` (Korthikanti et al. 2022) recomputes the
attention core, dropping the (B, H, T, S) probabilities; `full` (transformers' gradient
checkpointing) keeps only each block's input and recomputes the block during backward, so one
block's saved set is alive again at a time (`SavedActivations.per_block`).
"""

from __future__ import annotations

from tfcli.analysis.memory.base import (RECOMPUTE, SavedActivations, Workload, check_fused,
                                        check_modelled)
from tfcli.analysis.memory.layouts import layout_for
from tfcli.core.errors import BadInputError, not_one_of
from tfcli.spec.model import Spec

__all__ = ["RECOMPUTE", "SavedActivations", "saved_activations"]


def _check(spec: Spec, attention: str, recompute: str, fused: frozenset[str]) -> None:
    check_modelled(spec)
    check_fused(fused)
    if attention not in ("eager", "sdpa"):
        raise BadInputError(not_one_of("--attention", attention, ("eager", "sdpa")) +
                            " (training follows transformers' implementations)")
    if recompute not in RECOMPUTE:
        raise BadInputError(not_one_of("--recompute", recompute, RECOMPUTE))
    if recompute == "full" and spec.shared_layers:  # nothing to measure the figure against
        raise BadInputError(f"{spec.name}: --recompute full with one block shared by every "
                            "layer (ALBERT) is not modelled: transformers' AlbertModel has no "
                            "gradient checkpointing")


def saved_activations(spec: Spec, work: Workload, attention: str = "sdpa",
                      recompute: str = "none", tp: int = 1, dropout: bool = False,
                      fused: frozenset[str] = frozenset()) -> SavedActivations:
    """Bytes autograd saves in one forward pass of `work` with `attention` (eager | sdpa), on
    each of `tp` tensor-parallel GPUs, with the model's dropouts on or off and transformers'
    modules fusing the `fused` projections (base.FUSIONS)."""
    _check(spec, attention, recompute, fused)
    layout = layout_for(spec, attention, fused)
    return layout.module.saved(spec, work, attention, recompute, tp, dropout, fused)
