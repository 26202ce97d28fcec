"""What every family reader shares: the reader's type, HF activation names, refusals.

A family module (gpt2.py, llama.py, ...) holds all tfcli knows of one model family: the defaults
of its transformers config class, its config.json reader (-> spec fields) and its checkpoint
name Table. The registry is tfcli.checkpoints.families.FAMILIES.
"""

from __future__ import annotations

from collections.abc import Callable

from tfcli.checkpoints.fields import Config, ConfigFields, shown
from tfcli.checkpoints.heads import Architecture
from tfcli.core.errors import BadInputError

# A reader: the config's fields (merged over the family's defaults) and its model class ->
# the spec's fields and notes for its description (approximations accepted, if any).
Reader = Callable[[ConfigFields, Architecture], tuple[Config, list[str]]]

# HF activation names (ACT2FN keys) -> spec.activation for a plain FFN.
ACTIVATION_NAMES = {
    "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh", "relu": "relu", "silu": "silu", "swish": "silu",
}


def unsupported(c: ConfigFields, message: str) -> BadInputError:
    """A config.json feature tfcli does not model (its fields are well formed)."""
    return BadInputError(f"{c.file} (model_type '{c.values['model_type']}'): {message}")


def activation(c: ConfigFields, value: str, key: str) -> str:
    if value not in ACTIVATION_NAMES:
        raise unsupported(c, f"{key} {shown(value)} is not supported "
                             f"(supported: {', '.join(sorted(ACTIVATION_NAMES))})")
    return ACTIVATION_NAMES[value]


def architecture_name(c: ConfigFields) -> str:
    names = c.names("architectures")
    return names[0] if names else ""


def require_false(c: ConfigFields, *keys: str) -> None:
    for key in keys:
        if c.flag(key, default=False):
            raise unsupported(c, f"{key} = True is not supported")

