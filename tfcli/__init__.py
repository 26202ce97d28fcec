"""tfcli: inspect, size and run Transformer architectures.

    import tfcli

    model = tfcli.load("gpt2")   # a bundled name, YAML file, model directory, Hub id or GGUF file
    print(model.params().total)

The names below load on first use, so `import tfcli` (and the command line's start) stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from tfcli.api import Model, depth_sweep, diff, gpus, load, specs, validate
    from tfcli.core.errors import BadInputError, CheckFailedError, SpecError, TfcliError
    from tfcli.sources import Source, SourceKind, resolve_source

_HOMES = {
    **dict.fromkeys(("Model", "depth_sweep", "diff", "gpus", "load", "specs", "validate"),
                    "tfcli.api"),
    **dict.fromkeys(("BadInputError", "CheckFailedError", "SpecError", "TfcliError"),
                    "tfcli.core.errors"),
    **dict.fromkeys(("Source", "SourceKind", "resolve_source"), "tfcli.sources"),
}
__all__ = [  # what _HOMES loads, spelled out for tools that read __all__ statically
    "BadInputError", "CheckFailedError", "Model", "Source", "SourceKind", "SpecError",
    "TfcliError", "__version__", "depth_sweep", "diff", "gpus", "load", "resolve_source",
    "specs", "validate",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tfcli' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)
