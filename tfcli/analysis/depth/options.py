"""The options of a depth sweep: one field per `tfcli depth-sweep` flag (a leaf module, so
that sizing a sweep and running it both read it without importing each other)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DepthSweepOptions:
    """Every knob of `tfcli depth-sweep`; one field per flag."""

    depths: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)  # --depths 1,2,4 (each once; run sorted)
    variants: tuple[str, ...] = ("pre", "post", "plain")  # --variants, from VARIANTS
    sublayer: str = "block"  # --sublayer block|attention|ffn|linear
    seq_len: int = 16  # --seq-len: positions per sequence
    batch: int = 1  # --batch: sequences
    seed: int = 0  # --seed
    dtype: str = "float64"  # --dtype float64|float32 (activations and weights)
    share_weights: bool = False  # --share-weights: one layer reused at every depth
    weight_scale: float | None = None  # --weight-scale, linear only; default 1/sqrt(d_model)
    # --d-model, --n-heads, --d-ff, --init-std, ...: spec fields, applied with spec.replace.
    # A None value means "not given" and is skipped. Without a spec only d_model is allowed.
    overrides: Mapping[str, Any] = field(default_factory=dict)
    n_directions: int = 3  # --directions: random directions averaged for the gain
    fd_step: float | None = None  # --fd-step: relative step h/||x||; default eps^(1/3) of dtype
    causal: bool | None = None  # None: causal iff the spec is a decoder
    gradients: bool = False  # --gradients: a backward pass through the deepest stack
    weights: str | None = None  # --weights FILE.npz: the layers' arrays by engine path
    inputs: str | None = None  # --inputs FILE.npz: X0 as `embeddings` (B, N, d); sets batch, seq_len
