"""`Array`, the one name every module uses for an n-dimensional NumPy array.

Shapes go in comments and docstrings beside it (`x: Array  # (B, T, d)`). A top-level module so
that the engine, the checkpoint loader and the analyses share it without importing each other.
"""

from __future__ import annotations

import numpy as np

Array = np.ndarray
