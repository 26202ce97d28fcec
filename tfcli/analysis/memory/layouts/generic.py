"""transformers' standard layer stack as the memory planner's layout `generic`: Llama-style
decoders (Llama, Mistral, Mixtral, Qwen 2/3 and their MoE, Gemma 1-3, Phi, Phi-3, StableLM,
GPT-NeoX, GPT-J, OLMo 2, DeepSeek) and BERT-style encoders (BERT, RoBERTa, DistilBERT,
ELECTRA, ALBERT), whose differences the spec's fields say (live.py, saved_parts.py and the
behaviours they read: latent.py, rope_layouts.py, window.py).
"""

from __future__ import annotations

from tfcli.analysis.memory.base import Phase, SavedActivations, Workload, rounded
from tfcli.analysis.memory.live import layer_phases
from tfcli.analysis.memory.saved_parts import generic_saved
from tfcli.spec.model import Spec


def live(spec: Spec, work: Workload, attention: str, fused: frozenset[str]) -> list[Phase]:
    return layer_phases(spec, work, attention, fused)


def saved(spec: Spec, work: Workload, attention: str, recompute: str, tp: int, dropout: bool,
          fused: frozenset[str]) -> SavedActivations:
    return rounded(*generic_saved(spec, work, attention, recompute, tp, dropout, fused))
