"""The implementation layouts the memory planner models: one module each (its live set per
phase and its saved set), and LAYOUTS, the one table that picks a layout.

A spec describes the maths, not the module layout, and carries no transformers model_type (a
bundled spec, a YAML file), so a layout is chosen by the first row whose rule holds: the
explicit keys first (the implementation asked for; the checkpoint's fused modules, read from
its model_type: activations.FUSED_MODULES), then the one spec field (or two) that only that
layout's modules have. Adding a family's memory model: a module here with `live` and `saved`,
and one row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from tfcli.analysis.memory.base import FALCON_QKV, Phase, SavedActivations, Workload
from tfcli.analysis.memory.layouts import (bart, deberta, engine, falcon, generic, gpt2, modernbert,
                                           t5)
from tfcli.spec.model import Spec


class LayoutModule(Protocol):
    """What every layout module defines."""

    def live(self, spec: Spec, work: Workload, attention: str,
             fused: frozenset[str]) -> list[Phase]: ...

    def saved(self, spec: Spec, work: Workload, attention: str, recompute: str, tp: int,
              dropout: bool, fused: frozenset[str]) -> SavedActivations: ...


# (spec, attention, fused) -> whether this layout runs it
Rule = Callable[[Spec, str, frozenset[str]], bool]


@dataclass(frozen=True)
class Layout:
    name: str
    applies: Rule
    module: LayoutModule


LAYOUTS: tuple[Layout, ...] = (
    # tfcli's NumPy engine: --attention engine (its own layout whatever the checkpoint)
    Layout("engine", lambda s, attention, fused: attention == "engine", engine),
    # FalconForCausalLM: --fused falcon_qkv, from the checkpoint's model_type "falcon"
    Layout("falcon", lambda s, attention, fused: FALCON_QKV in fused, falcon),
    # DebertaV2Model: the only module with disentangled attention
    Layout("deberta", lambda s, attention, fused: bool(s.disentangled_attention), deberta),
    # T5 / mT5 / UMT5 (and T5EncoderModel): the only modules with a relative position bias
    Layout("t5", lambda s, attention, fused: s.positions == "relative", t5),
    # BART: the other encoder-decoder
    Layout("bart", lambda s, attention, fused: s.family == "encoder-decoder", bart),
    # ModernBertModel: transformers' only encoder with RoPE
    Layout("modernbert", lambda s, attention, fused: s.family == "encoder"
           and s.positions == "rope", modernbert),
    # GPT-2: the decoder with learned positions
    Layout("gpt2", lambda s, attention, fused: s.family == "decoder"
           and s.positions == "learned", gpt2),
    # every other decoder and encoder: transformers' standard layers, told apart by fields
    Layout("generic", lambda s, attention, fused: True, generic),
)


def layout_for(spec: Spec, attention: str, fused: frozenset[str]) -> Layout:
    """The first LAYOUTS row whose rule holds (the last always does)."""
    return next(layout for layout in LAYOUTS if layout.applies(spec, attention, fused))
