"""transformers' GPT-2 modules (GPT2LMHeadModel: a decoder with learned positions) as the memory
planner's layout `gpt2`: the generic layers (live.py, saved_parts.py) with what its model keeps
of its learned positions: the wpe output held through the forward, the int64 position ids its
lookup saves, and under gradient checkpointing the eager float mask its blocks take as a tensor
(measured: tests/parity/memory_families.py).
"""

from __future__ import annotations

from tfcli.analysis.memory.base import Phase, SavedActivations, Workload, rounded
from tfcli.analysis.memory.live import layer_phases, learned_held
from tfcli.analysis.memory.saved_parts import generic_saved, learned_position_parts
from tfcli.spec.model import Spec


def live(spec: Spec, work: Workload, attention: str, fused: frozenset[str]) -> list[Phase]:
    positions = learned_held(spec, work)  # held beside every phase, the logits' included
    return [(name, e + positions) for name, e in layer_phases(spec, work, attention, fused)]


def saved(spec: Spec, work: Workload, attention: str, recompute: str, tp: int, dropout: bool,
          fused: frozenset[str]) -> SavedActivations:
    parts, block = generic_saved(spec, work, attention, recompute, tp, dropout, fused)
    return rounded(parts + learned_position_parts(spec, work, attention, recompute), block)
