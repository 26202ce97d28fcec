"""The blueprint (tfcli/spec/blueprint.py): every weight once, with what the counts, the random
draws and the containers read from it. The engine's side (init_weights equal to the blueprint,
value for value) is tests/engine/test_init.py; names against checkpoints, test_weight_names.py."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tests.engine.engine_specs import VARIANTS, make_spec
from tests.conftest import VALID_SPEC
from tfcli.engine.init import init_weights
from tfcli.engine.weights import named_arrays
from tfcli.sources import load_spec
from tfcli.spec.blueprint import (EVERY, block_part, blueprint, components, concrete_paths,
                                  placed)
from tfcli.spec.counts import total_parameters
from tfcli.spec.load import parse_spec_text


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_drawn_array_has_a_draw_key_of_its_own(variant: str) -> None:
    """The seed's values go to arrays by draw key alone: two normal draws sharing a key would
    fall back on the table's order, which is free to change."""
    drawn = [p.draw for p in placed(make_spec(variant)) if p.component.init == "normal"]
    assert [key for key, n in Counter(drawn).items() if n > 1] == []
    assert all(isinstance(part, int) for key in drawn for part in key)  # every `*` filled


@pytest.mark.parametrize("variant", VARIANTS)
def test_placed_lists_the_arrays_the_counts_sum(variant: str) -> None:
    spec = make_spec(variant)
    arrays = [p for p in placed(spec) if p.component.array]
    counted = sum(p.component.per_instance for p in arrays)
    assert counted == total_parameters(spec)
    assert sorted(p.path for p in arrays) == sorted(path for path, _ in named_arrays(
        init_weights(spec, 0)))


def test_roles_and_init_rules() -> None:
    spec = load_spec("gpt2")
    by_path = {c.path: c for c in blueprint(spec) if not c.tied}  # the tied head: no array
    assert (by_path["token_embedding"].role, by_path["token_embedding"].init) == ("table", "normal")
    wq = by_path[f"decoder.blocks.{EVERY}.attn.wq"]
    assert (wq.role, wq.init, wq.shape, wq.repeat) == ("matrix", "normal", (768, 768), 12)
    bias = by_path[f"decoder.blocks.{EVERY}.attn.bq"]
    assert (bias.role, bias.init) == ("vector", "zeros")
    assert by_path[f"decoder.blocks.{EVERY}.attn_norm.scale"].init == "ones"
    gemma = {c.path: c for c in blueprint(load_spec("gemma-2b"))}
    assert gemma[f"decoder.blocks.{EVERY}.attn_norm.scale"].init == "zeros"  # (1 + weight)


def test_a_norm_without_parameters_is_a_module_and_no_component() -> None:
    spec = parse_spec_text(VALID_SPEC + "norm: layernorm_noaffine\n")
    modules = [c.path for c in blueprint(spec) if not c.array]
    assert "decoder.final_norm" in modules and f"decoder.blocks.{EVERY}.attn_norm" in modules
    assert not any(c.path in modules for c in components(spec))
    assert init_weights(spec, 0).decoder.final_norm is not None  # the module still runs


def test_a_trillion_parameter_spec_is_counted_without_expanding() -> None:
    spec = load_spec("lesson-tiny").replace(n_layers=10**9)
    entries = blueprint(spec)
    assert len(entries) < 50 and total_parameters(spec) > 10**12


def test_concrete_paths_fill_blocks_and_experts() -> None:
    spec = load_spec("mixtral-8x7b").with_layers(2)
    assert concrete_paths(spec, f"decoder.blocks.{EVERY}.ffn.experts.{EVERY}.w_up")[:3] == [
        "decoder.blocks.0.ffn.experts.0.w_up", "decoder.blocks.0.ffn.experts.1.w_up",
        "decoder.blocks.0.ffn.experts.2.w_up"]
    assert len(concrete_paths(spec, f"decoder.blocks.{EVERY}.ffn.experts.{EVERY}.w_up")) == 16


def test_block_part_is_one_block_without_the_others() -> None:
    spec = load_spec("llama-2-70b")
    node, entries = block_part(spec, "decoder", 41, "attn")
    assert node == "decoder.blocks.41.attn"
    assert [p.path for p in entries] == [f"{node}.w{x}" for x in "qkvo"]
    shared = load_spec("albert-base-v2")
    node, entries = block_part(shared, "encoder", 7, "ffn")
    assert node == "encoder.blocks.0.ffn" and entries  # every block runs block 0's arrays


def test_a_seed_keeps_meaning_the_same_weights() -> None:
    """The draw order pinned: values of np.random.default_rng(0)'s float64 draws for block 1 of
    a tiny Llama (a changed draw key, or a reordered table without keys, moves them): equal to
    the values init_weights gave before the blueprint (4d985e3)."""
    w = init_weights(make_spec("llama_gqa"), 0, np.float64)
    block = w.decoder.blocks[1]
    expected = {"wq": (block.attn.wq, [-0.01743971693, 0.007525718477]),
                "wo": (block.attn.wo, [0.036299528565, 0.020355396249]),
                "w_up": (block.ffn.w_up, [-0.038747384041, -0.011359132397]),
                "w_down": (block.ffn.w_down, [-0.005451832538, -0.019092477379]),
                "w_gate": (block.ffn.w_gate, [-0.018645042023, -0.021138749243]),
                "token": (w.token_embedding, [0.002514604422, -0.002642097266])}
    for name, (array, first) in expected.items():
        np.testing.assert_allclose(array.ravel()[:2], first, rtol=1e-9, err_msg=name)
