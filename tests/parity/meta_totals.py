"""transformers' own parameter count of a published config: the class its `architectures`
names, built on the meta device (no memory for the weights), for the *_totals tests."""

from __future__ import annotations

import copy

import torch
import transformers


def hf_total(config: dict[str, object]) -> int:
    """num_parameters() of config["architectures"][0] built from `config` on the meta device."""
    model_class = getattr(transformers, config["architectures"][0])  # type: ignore[index]
    config_class = transformers.AutoConfig.for_model(str(config["model_type"])).__class__
    # a deep copy: transformers fills its defaults into the rope dict it is given, in place
    given = copy.deepcopy({k: v for k, v in config.items() if k != "model_type"})
    with torch.device("meta"):
        model = model_class(config_class(**given))
    return model.num_parameters()
