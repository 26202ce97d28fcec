"""Every dtype name tfcli takes: its size, and which option takes which (one table, one message).

The bottom of the import graph beside tfcli.core.errors (no NumPy: `tfcli params` imports this and
must stay light). The engine maps a name to NumPy with `np.dtype(name)`; safetensors' own dtype
codes (F32, BF16, F8_E4M3, ...) are a file format's, and stay in tfcli.checkpoints.tensors.
"""

from __future__ import annotations

from enum import Enum

from tfcli.core.errors import BadInputError, not_one_of

DTYPE_BYTES: dict[str, float] = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2, "int8": 1, "int4": 0.5}

WEIGHT_DTYPES = ("float32", "bfloat16", "int8", "int4")  # `params`: weight memory per dtype
KV_DTYPES = ("float32", "float16", "bfloat16", "int8")  # `params --kv-dtype`
ACTIVATION_DTYPES = ("float32", "bfloat16", "float16")  # `trace --dtype`: activation bytes
ENGINE_DTYPES = ("float32", "float64")  # `run` / `generate --dtype`: what the engine computes in
SWEEP_DTYPES = ("float64", "float32")  # `depth-sweep --dtype` (float64 first: its default)
# `memory --dtype`: weights and compute; int8 / int4 quantise the linear weights (compute bfloat16)
MEMORY_DTYPES = ("float32", "bfloat16", "float16", "int8", "int4")


def check_dtype(option: str, value: str, allowed: tuple[str, ...]) -> str:
    """`value` when `option` takes it, else BadInputError with not_one_of's message."""
    if value not in allowed:
        raise BadInputError(not_one_of(option, value, allowed))
    return value


def _choice(name: str, values: tuple[str, ...]) -> type[Enum]:
    """A str Enum of `values`: the typed choice an option takes, so its --help lists them and a
    wrong value is one line naming those allowed."""
    return Enum(name, [(value, value) for value in values], type=str)  # type: ignore[return-value]


# One Enum per option's set above (the CLI's --dtype / --kv-dtype types).
EngineDtype: type[Enum] = _choice("EngineDtype", ENGINE_DTYPES)
ActivationDtype: type[Enum] = _choice("ActivationDtype", ACTIVATION_DTYPES)
KvDtype: type[Enum] = _choice("KvDtype", KV_DTYPES)
SweepDtype: type[Enum] = _choice("SweepDtype", SWEEP_DTYPES)
MemoryDtype: type[Enum] = _choice("MemoryDtype", MEMORY_DTYPES)
