"""The Python API that the command line is a client of (docs/api.md)."""

from tfcli.api.model import Model, depth_sweep, diff, gpus, load, specs, validate

__all__ = ["Model", "depth_sweep", "diff", "gpus", "load", "specs", "validate"]
