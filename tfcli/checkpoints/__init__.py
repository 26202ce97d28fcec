"""Hugging Face checkpoints: config.json -> Spec, safetensors -> Weights.

Supported families (config.json `model_type`): gpt2, bert, llama, mistral, mixtral, t5.

    spec = spec_from_config_dir("path/to/model")        # or load_spec("path/to/model")
    weights = load_weights("path/to/model", spec)       # float32 by default
    print(spec_to_yaml(spec))                           # what `tfcli import-config` prints

Reading a config needs neither NumPy nor safetensors (`tfcli params DIR` starts fast), so the
weight loaders are imported from loader.py on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tfcli.checkpoints.configs import (
    SUPPORTED_MODEL_TYPES,
    read_config,
    spec_from_config,
    spec_from_config_dir,
)
from tfcli.checkpoints.export import spec_to_yaml

if TYPE_CHECKING:
    from tfcli.checkpoints.loader import load_checkpoint, load_weights

__all__ = [
    "SUPPORTED_MODEL_TYPES", "load_checkpoint", "load_weights", "read_config",
    "spec_from_config", "spec_from_config_dir", "spec_to_yaml",
]
_LAZY = {"load_checkpoint", "load_weights"}  # they import NumPy, safetensors and the engine


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from tfcli.checkpoints import loader

        return getattr(loader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
