"""SmolLM3 (HuggingFaceTB/SmolLM3-3B): LLaMA's body and names, with NoPE layers - every layer
whose `no_rope_layers` flag is 0 (every `no_rope_layer_interval`-th by default) attends without
RoPE - and Qwen2-style sliding windows behind `use_sliding_window`."""

from __future__ import annotations

from tfcli.checkpoints.families.common import require_false
from tfcli.checkpoints.families import llama
from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import Architecture, decoder_classes

# SmolLM3Config() defaults, for the keys read
DEFAULTS: Config = llama.LLAMA_DEFAULTS | {
    "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 11008,
    "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 4,
    "max_position_embeddings": 32768, "rope_theta": 2000000.0, "tie_word_embeddings": True,
    "use_sliding_window": False, "no_rope_layers": None, "no_rope_layer_interval": 4,
}
MAX_NOPE_LAYERS = 1 << 16  # Spec.nope_layers holds at most this many
CLASSES: dict[str, Architecture] = decoder_classes("SmolLM3")
TABLE = llama.TABLE  # LLaMA's tensor names, layer for layer


def nope_layers(c: ConfigFields, n_layers: int) -> list[int]:
    """The layers whose no_rope_layers flag is 0; without the list, every interval-th layer
    (SmolLM3Config: flag (i + 1) % interval != 0)."""
    flags = c.values.get("no_rope_layers")
    if flags is None:
        interval = c.integer("no_rope_layer_interval")
        if n_layers // interval > MAX_NOPE_LAYERS:  # a list the spec would refuse: never built
            raise c.error("no_rope_layer_interval", f"leaves {n_layers // interval:,} layers "
                                                    f"without RoPE, more than tfcli lists "
                                                    f"({MAX_NOPE_LAYERS:,})")
        return list(range(interval - 1, n_layers, interval))
    if not isinstance(flags, list) or len(flags) != n_layers or any(f not in (0, 1) for f in flags):
        raise c.error("no_rope_layers", f"expected a 0/1 flag per layer ({n_layers}), got "
                                        f"{shown(flags)}")
    return [i for i, use_rope in enumerate(flags) if not use_rope]


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    require_false(c, "use_sliding_window")
    fields, notes = llama.read_llama(c, arch)
    fields.pop("sliding_window", None)  # only read with use_sliding_window, refused above
    nope = nope_layers(c, fields["n_layers"])
    if nope:
        fields["nope_layers"] = nope
    return fields, notes
