"""Gemma 1 / 2 / 3 checks of their own (the logits, generation, counts and trace of the rows
"gemma*" are in the table-driven test_parity_*.py, the builders in parity_families.py): the
imported spec switches on the variants the family uses (scaled embeddings, (1 + weight)
RMSNorms, GeGLU tanh; Gemma 2 / 3's sandwich norms, local layers with a window shorter than
the inputs, query_pre_attn_scalar).
"""

from __future__ import annotations

import pytest

from tests.parity.parity_families import FAMILIES, LENGTH, WINDOW, Saved, saved_family
from tfcli.checkpoints import spec_from_config_dir


@pytest.fixture(scope="module", params=[name for name in FAMILIES if name.startswith("gemma")])
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Saved:
    return saved_family(request, tmp_path_factory)


def test_imported_spec_uses_the_variants(saved: Saved) -> None:
    model, path = saved.model, saved.path
    spec = spec_from_config_dir(path)
    assert spec.scale_embeddings and spec.norm_unit_offset and spec.activation == "geglu_tanh"
    if model.config.model_type == "gemma":
        return
    assert spec.norm_placement == "sandwich" and "local" in spec.layer_pattern
    assert spec.sliding_window == WINDOW < LENGTH
    assert spec.attention_scale == model.config.query_pre_attn_scalar ** -0.5
