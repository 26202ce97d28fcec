"""Hugging Face checkpoints: config.json -> Spec, safetensors -> Weights.

Supported families (config.json `model_type`): gpt2, bert, llama, mistral, mixtral, t5.

    spec = spec_from_config_dir("path/to/model")        # or load_spec("path/to/model")
    weights = load_weights("path/to/model", spec)       # float32 by default
    print(spec_to_yaml(spec))                           # what `tfcli import-config` prints
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tfcli.checkpoints.configs import (
    SUPPORTED_MODEL_TYPES,
    read_config,
    spec_from_config,
    spec_from_config_dir,
)
from tfcli.checkpoints.export import spec_to_yaml
from tfcli.checkpoints.loader import load_weights
from tfcli.engine.weights import Weights
from tfcli.spec import Spec

__all__ = [
    "SUPPORTED_MODEL_TYPES", "load_checkpoint", "load_weights", "read_config",
    "spec_from_config", "spec_from_config_dir", "spec_to_yaml",
]


def load_checkpoint(path: str | Path, dtype: np.dtype | type = np.float32) -> tuple[Spec, Weights]:
    """Spec and Weights of a Hugging Face model directory in one call."""
    spec = spec_from_config_dir(path)
    return spec, load_weights(path, spec, dtype)
