"""The checks of a Spec's encoder-body fields: factorised embeddings (embedding_dim), offset
learned positions (position_offset) and one block shared by a whole stack (shared_layers).

Each field changes nothing at its default; set, it must mean something for the spec, else one
SpecConsistencyError names it. Kept apart from tfcli/spec/model.py, which calls check_encoder_fields
from its validator (after the head is resolved: lm_head is then known).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfcli.core.errors import SpecConsistencyError

if TYPE_CHECKING:
    from tfcli.spec.model import Spec


def check_encoder_fields(spec: Spec) -> None:
    if spec.position_offset and spec.positions != "learned":
        raise SpecConsistencyError("position_offset", f"needs positions: learned (got "
                                   f"{spec.positions!r}): it offsets rows of the learned table")
    if spec.embedding_dim is not None:
        if spec.family != "encoder":
            raise SpecConsistencyError("embedding_dim", f"only applies to family 'encoder' "
                                       f"(got {spec.family!r})")
        if spec.lm_head and spec.head != "masked_lm":  # its transform maps d_model to e
            raise SpecConsistencyError("embedding_dim", "does not apply with lm_head: vocabulary "
                                       "logits of factorised embeddings are built for head "
                                       "masked_lm only (its transform maps d_model to "
                                       "embedding_dim)")
    for field, changed in (("embedding_project_bias", not spec.embedding_project_bias),
                           ("embedding_project_first", spec.embedding_project_first)):
        if changed and spec.embedding_dim is None:
            raise SpecConsistencyError(field, "needs embedding_dim (a factorised embedding's "
                                       "projection)")
    if spec.shared_layers and spec.family != "encoder":
        raise SpecConsistencyError("shared_layers", f"only applies to family 'encoder' (got "
                                   f"{spec.family!r})")
