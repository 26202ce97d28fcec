"""Random initialisation (tfcli/engine/init.py): one builder for init_weights and the loader's
skeleton, drawn straight into the decode layout, each value the one a plain row-major draw of
the field gives (so the layout never changes what a seed means)."""

from __future__ import annotations

import numpy as np
import pytest
from tests.engine.engine_specs import VARIANTS, make_spec

from tfcli.checkpoints.loader import skeleton
from tfcli.engine import init as init_module
from tfcli.engine.init import Initializer, init_weights
from tfcli.engine.layout import arrange_weights
from tfcli.engine.weights import NormWeights, Weights, count_parameters, iter_arrays, named_arrays
from tfcli.spec.counts import total_parameters


def _plain(spec, seed: int, dtype) -> Weights:
    """The same draws, each field its own C-ordered array, then arranged by copying."""
    return arrange_weights(Initializer(spec, np.random.default_rng(seed), dtype).weights())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("variant", VARIANTS)
def test_laid_out_draws_equal_plain_draws_value_for_value(variant: str, dtype,
                                                          monkeypatch) -> None:
    monkeypatch.setattr(init_module, "CHUNK_VALUES", 100)  # chunks of 2-3 rows, a short last one
    spec = make_spec(variant)
    laid, plain = dict(named_arrays(init_weights(spec, 5, dtype))), dict(named_arrays(_plain(spec, 5, dtype)))
    assert list(laid) == list(plain)
    for path, array in laid.items():
        assert array.dtype == dtype and array.strides == plain[path].strides, path
        np.testing.assert_array_equal(array, plain[path], err_msg=path)  # exact: same draws


@pytest.mark.parametrize("variant", VARIANTS)
def test_laid_out_draws_leave_arrange_weights_nothing_to_move(variant: str) -> None:
    weights = Initializer(make_spec(variant), np.random.default_rng(1), laid_out=True).weights()
    before = [(path, id(array)) for path, array in named_arrays(weights)]
    arrange_weights(weights)
    assert [(path, id(array)) for path, array in named_arrays(weights)] == before


@pytest.mark.parametrize("variant", VARIANTS)
def test_skeleton_is_init_weights_without_memory(variant: str) -> None:
    spec = make_spec(variant)
    drawn = [(path, a.shape, a.dtype) for path, a in named_arrays(init_weights(spec, 0, np.float64))]
    shell = skeleton(spec, np.float64)
    assert [(path, a.shape, a.dtype) for path, a in named_arrays(shell)] == drawn
    assert all(a.strides == (0,) * a.ndim for a in iter_arrays(shell))
    assert count_parameters(shell, spec) == total_parameters(spec)


def test_a_seed_means_the_same_weights_and_another_seed_others() -> None:
    spec = make_spec("llama_gqa")
    a, b, c = (dict(named_arrays(init_weights(spec, seed))) for seed in (3, 3, 4))
    assert all(np.array_equal(a[p], b[p]) for p in a)
    assert not np.array_equal(a["decoder.blocks.0.attn.wq"], c["decoder.blocks.0.attn.wq"])


def test_normal_draws_have_the_spec_std() -> None:
    spec = make_spec("gpt", init_std=0.05)
    values = Initializer(spec, np.random.default_rng(0)).normal(400, 500)
    # 200,000 draws: the sample std is within 4 standard errors (std / sqrt(2n)) of 0.05
    assert abs(values.std() - 0.05) < 4 * 0.05 / np.sqrt(2 * values.size)
    assert values.dtype == np.float32


def test_named_arrays_paths_and_a_shared_array_once() -> None:
    shared = np.ones(3)
    pair = [NormWeights(shared, np.zeros(3)), NormWeights(shared, None)]
    assert [(p, a is shared) for p, a in named_arrays(pair, "norms")] == [
        ("norms.0.scale", True), ("norms.0.bias", False)]
    paths = [p for p, _ in named_arrays(init_weights(make_spec("t5"), 0))]
    assert paths[0] == "token_embedding" and "decoder.blocks.2.cross_attn.wo" in paths
