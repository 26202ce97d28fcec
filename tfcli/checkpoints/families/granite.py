"""Granite (ibm-granite/granite-3.x): LLaMA's body and tensor names with four scalar multipliers:
the token embeddings times `embedding_multiplier`, the attention scores times
`attention_multiplier` (in place of 1/sqrt(d_head)), each sublayer's output times
`residual_multiplier` before its residual add, and the logits divided by `logits_scaling`."""

from __future__ import annotations

from tfcli.checkpoints.families import llama
from tfcli.checkpoints.fields import Config, ConfigFields
from tfcli.checkpoints.heads import BARE, LM, Architecture

# GraniteConfig() defaults, for the keys read
DEFAULTS: Config = llama.LLAMA_DEFAULTS | {
    "embedding_multiplier": 1.0, "attention_multiplier": 1.0, "residual_multiplier": 1.0,
    "logits_scaling": 1.0,
}
CLASSES: dict[str, Architecture] = {"GraniteForCausalLM": LM, "GraniteModel": BARE}
TABLE = llama.TABLE  # LLaMA's tensor names, layer for layer


def _multiplier(c: ConfigFields, key: str) -> float | None:
    """A multiplier's value (a number > 0), None when it is 1: nothing to do."""
    value = c.number(key)
    return None if value == 1 else value


def read(c: ConfigFields, arch: Architecture) -> tuple[Config, list[str]]:
    fields, notes = llama.read_llama(c, arch)
    fields.pop("sliding_window", None)  # Granite has none (read_llama reads it for others)
    fields["attention_scale"] = c.number("attention_multiplier")
    # the config keys are the spec fields' names; a bare model has no logits to scale
    for key in ("embedding_multiplier", "residual_multiplier", "logits_scaling"):
        value = _multiplier(c, key)
        if value is not None and (key != "logits_scaling" or arch.lm_head):
            fields[key] = value
    return fields, notes
