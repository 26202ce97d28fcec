"""What each family's own parity test checks beyond the table-driven rows, on the rows' padded
batch: that each feature matters (switched off in transformers - a callable that edits a copy
of the model - the logits move by more than 100x the float32 tolerance, while tfcli, which
keeps the feature, matches the model as saved: a parity that would also pass with the feature
off proves nothing), and that the float64 logits match to 1e-10."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tests.parity.parity_families import right_padded, tokens
from tests.parity.saved_models import real_logits, save_random
from tests.parity.test_hf_parity import F32, F64

if TYPE_CHECKING:
    from transformers import PreTrainedModel

Switch = Callable[["PreTrainedModel"], None]


def transformers_logits(model: PreTrainedModel) -> np.ndarray:
    """transformers' logits on the parity rows' tokens, the second sequence right-padded."""
    import torch
    mask, _ = right_padded()
    with torch.no_grad():
        return model(input_ids=torch.from_numpy(tokens()),
                     attention_mask=torch.from_numpy(mask)).logits.numpy()


def assert_switch_moves_the_logits(model: PreTrainedModel, path: Path, switch: Switch) -> None:
    """`switch` (on a deep copy) moves transformers' logits past 100x the tolerance; tfcli's
    logits of the checkpoint at `path` match the unswitched model's."""
    on = transformers_logits(model)
    off_model = copy.deepcopy(model)
    switch(off_model)
    tolerance = F32["atol"] + F32["rtol"] * np.abs(on).max()
    moved = np.abs(on - transformers_logits(off_model)).max()
    assert moved > 100 * tolerance, (moved, tolerance)
    mask, _ = right_padded()
    got, want = real_logits(model, path, tokens(), mask)
    np.testing.assert_allclose(got, want, **F32)


def assert_float64_logits_match(model: PreTrainedModel, path: Path,
                                attention: str | None = "sdpa") -> None:
    """tfcli's float64 logits of the checkpoint at `path` against `model` run in float64
    (`attention` for it: eager attention's softmax is float32 in most families; None keeps
    the model's), within F64 on the real positions. The caller patches what transformers
    computes in float32 whatever the dtype (norms, RoPE tables, routers)."""
    import torch

    from tfcli.checkpoints import load_weights, spec_from_config_dir
    from tfcli.engine.model import ModelInput, forward
    mask, _ = right_padded()
    before = model.config._attn_implementation
    model.double()
    if attention is not None:
        model.set_attn_implementation(attention)
    try:
        with torch.no_grad():
            want = model(input_ids=torch.from_numpy(tokens()),
                         attention_mask=torch.from_numpy(mask)).logits.numpy()
    finally:
        model.float().set_attn_implementation(before)
    spec = spec_from_config_dir(path)
    got = forward(spec, load_weights(path, spec, np.float64),
                  ModelInput(tokens(), attention_mask=mask)).logits
    real = mask.astype(bool)
    np.testing.assert_allclose(got[real], want[real], **F64)


def saved_rows(builders: Mapping[str, Callable[[], PreTrainedModel]]) -> Any:
    """A module-scoped `saved` fixture: (model, path) of each builder's model, saved as the
    parity rows are (save_random) with matrices of std 0.15 - logits of order 1, against which
    a feature's effect is measured."""
    import pytest

    @pytest.fixture(scope="module", params=list(builders))
    def saved(request: pytest.FixtureRequest,
              tmp_path_factory: pytest.TempPathFactory) -> tuple[PreTrainedModel, Path]:
        path = tmp_path_factory.mktemp(request.param)
        return save_random(builders[request.param], path, std=0.15), path
    return saved


def layers(model: PreTrainedModel) -> list[Any]:
    """A decoder's blocks (model.model.layers), for the switches that edit each."""
    return list(model.model.layers)  # type: ignore[attr-defined]


def no_rope(model: PreTrainedModel) -> None:
    """A switch: the model's RoPE tables at cos 1, sin 0 (no rotation), on this model only."""
    import torch
    rotary = model.model.rotary_emb  # type: ignore[attr-defined]
    rotated = rotary.forward

    def unrotated(x: torch.Tensor, position_ids: torch.Tensor) -> tuple:
        cos, sin = rotated(x, position_ids)
        return torch.ones_like(cos), torch.zeros_like(sin)
    rotary.forward = unrotated


def no_qk_norms(model: PreTrainedModel) -> None:
    """A switch: every block's q and k norms (self_attn.q_norm / k_norm) the identity."""
    import torch
    for layer in layers(model):
        layer.self_attn.q_norm = torch.nn.Identity()
        layer.self_attn.k_norm = torch.nn.Identity()


def switch_test(switches: Mapping[str, Switch], fixture: str = "saved") -> Any:
    """A family module's test that each of `switches` moves the logits (one case a switch) on
    the (model, path) of its `fixture` (saved_rows'): assign it to a module name starting with
    test_. Its signature names the fixture, as pytest reads it."""
    import inspect

    import pytest

    def test(feature: str, **fixtures: tuple[PreTrainedModel, Path]) -> None:
        model, path = fixtures[fixture]
        assert_switch_moves_the_logits(model, path, switches[feature])
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    test.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(fixture, kind), inspect.Parameter("feature", kind)])
    return pytest.mark.parametrize("feature", list(switches))(test)


def no_norm_biases(model: PreTrainedModel) -> None:
    """A switch: every block's two LayerNorm biases (input / post-attention) zero."""
    for layer in layers(model):
        layer.input_layernorm.bias.data.zero_()
        layer.post_attention_layernorm.bias.data.zero_()
