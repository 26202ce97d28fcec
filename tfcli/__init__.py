"""tfcli: inspect and run Transformer architectures."""

__version__ = "0.1.0"
