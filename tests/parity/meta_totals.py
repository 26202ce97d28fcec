"""transformers' own parameter count of a published config: the class its `architectures`
names, built on the meta device (no memory for the weights), for the totals tests.

torch and transformers are imported in the call, not at collection (tests/conftest.py)."""

from __future__ import annotations

import copy


def hf_total(config: dict[str, object]) -> int:
    """num_parameters() of config["architectures"][0] built from `config` on the meta device."""
    import torch
    import transformers

    model_class = getattr(transformers, config["architectures"][0])  # type: ignore[index]
    config_class = transformers.AutoConfig.for_model(str(config["model_type"])).__class__
    # a deep copy: transformers fills its defaults into the rope dict it is given, in place
    given = copy.deepcopy({k: v for k, v in config.items() if k != "model_type"})
    with torch.device("meta"):
        model = model_class(config_class(**given))
    return model.num_parameters()


def hf_config_dict(config_class: str, model_class: str, **values: object) -> dict[str, object]:
    """transformers' own saved form of `config_class(**values)` (its to_dict(), the config.json
    save_pretrained writes), naming `model_class` in architectures."""
    import transformers

    built = getattr(transformers, config_class)(**values)
    return built.to_dict() | {"architectures": [model_class]}
