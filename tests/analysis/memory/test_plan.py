"""The memory plan's arithmetic: parts that add up, sharding, LoRA, quantised weights, and
--fit answers that agree with the breakdown (the answer fits, one step more does not)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tfcli.analysis.gpus.catalog import find_gpu
from tfcli.analysis.memory.fit import (CONTEXT_RESERVE, FRAGMENTATION, build_memory_report,
                                       fit_search, largest)
from tfcli.analysis.memory.plan import (MemoryOptions, build_memory_plan, lora_parameters,
                                        optimizer_bytes, parameter_tensors, weight_bytes)
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import total_parameters
from tfcli.sources import load_spec

LLAMA = load_spec("llama-2-7b")
TRAIN = MemoryOptions(seq_len=4096, train=True)


def test_total_is_the_sum_of_the_parts() -> None:
    plan = build_memory_plan(LLAMA, TRAIN)
    assert plan.total == sum(p.bytes for p in plan.parts)
    phi = total_parameters(LLAMA)
    # mixed precision: bfloat16 weights and gradients, float32 master, AdamW's two float32 states
    assert plan.part("weights") == plan.part("gradients") == 2 * phi
    assert plan.part("master weights") == 4 * phi
    assert plan.part("optimizer state") == 8 * phi + 4 * parameter_tensors(LLAMA)


def test_zero_stages_shard_in_turn() -> None:
    base = build_memory_plan(LLAMA, replace(TRAIN, gpus=8))
    for stage, sharded in ((1, {"optimizer state", "master weights"}),
                           (2, {"optimizer state", "master weights", "gradients"}),
                           (3, {"optimizer state", "master weights", "gradients", "weights"})):
        plan = build_memory_plan(LLAMA, replace(TRAIN, gpus=8, zero=stage))
        for part in ("weights", "gradients", "master weights", "activations"):
            # every LLaMA tensor's element count divides by 8: exactly an eighth each
            want = base.part(part) // 8 if part in sharded else base.part(part)
            assert plan.part(part) == want, (stage, part)
        # AdamW: the eighth of both float32 moments, and a step for an eighth of the tensors
        steps = -(-parameter_tensors(LLAMA) // 8)
        assert plan.part("optimizer state") == 8 * total_parameters(LLAMA) // 8 + 4 * steps


def test_tensor_parallel_shares_heads_and_hidden_units_not_norms() -> None:
    base = build_memory_plan(LLAMA, TRAIN)
    plan = build_memory_plan(LLAMA, replace(TRAIN, gpus=4, tp=4))
    assert plan.part("weights") == -(-base.part("weights") // 4)
    n, d = 4096, 4096  # tokens, d_model: per block two RMS norms and two linear inputs stay whole
    replicated = 32 * (2 * (4 * n * d + 2 * n * d + 4 * n) + 2 * 2 * n * d)
    blocks = base.part("activations") - plan.part("activations")
    assert plan.part("activations") > base.part("activations") / 4
    assert abs(blocks - 0.75 * (base.part("activations") - replicated)) < 0.02 * blocks


def test_recompute_full_keeps_one_input_per_block_and_adds_the_recomputed_block() -> None:
    none = build_memory_plan(LLAMA, TRAIN)
    full = build_memory_plan(LLAMA, replace(TRAIN, recompute="full"))
    selective = build_memory_plan(LLAMA, replace(TRAIN, recompute="selective", attention="eager"))
    eager = build_memory_plan(LLAMA, replace(TRAIN, attention="eager"))
    assert full.part("activations") < selective.part("activations") < eager.part("activations")
    assert full.part("recomputed block") > 0 and none.part("recomputed block") == 0
    assert build_memory_plan(LLAMA, replace(TRAIN, recompute="selective")).part("activations") \
        == none.part("activations")  # sdpa keeps no probabilities to drop


def test_lora_trains_only_the_adapters() -> None:
    params, tensors = lora_parameters(LLAMA, 16, ("q", "v"))
    assert params == 32 * 2 * 16 * (4096 + 4096) and tensors == 32 * 2 * 2
    plan = build_memory_plan(LLAMA, replace(TRAIN, lora_rank=16))
    assert plan.part("gradients") == 4 * params and plan.part("master weights") == 0
    assert plan.part("optimizer state") == optimizer_bytes("adamw", params, tensors)


def test_quantised_weights_add_one_scale_per_group() -> None:
    phi = total_parameters(LLAMA)
    matrices = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)
    rest = phi - matrices
    assert weight_bytes(LLAMA, "int4", 128) == matrices // 2 + matrices // 128 * 2 + 2 * rest
    assert weight_bytes(LLAMA, "int8", 64) == matrices + matrices // 64 * 2 + 2 * rest


def test_optimizer_state_bytes() -> None:
    assert optimizer_bytes("adam", 1000, 3) == 8000 + 12
    assert optimizer_bytes("sgd", 1000, 3) == 4000
    assert optimizer_bytes("adam8bit", 1024, 2) == 2048 + 4 * 8 + 8


@pytest.mark.parametrize("options", [MemoryOptions(seq_len=2048), TRAIN,
                                     replace(TRAIN, recompute="full", gpus=8, zero=3)])
def test_fit_answers_fit_and_one_more_does_not(options: MemoryOptions) -> None:
    gpu = find_gpu("a100-80gb")
    report = build_memory_report(LLAMA, options, gpu, search=True)
    usable = gpu.memory_bytes - CONTEXT_RESERVE - int(FRAGMENTATION * gpu.memory_bytes)
    assert report.fit is not None and report.fit.usable_bytes == usable
    found = report.search
    assert found is not None
    seq_len = options.resolved_seq_len(LLAMA)
    if found.max_batch is not None:
        at = build_memory_plan(LLAMA, replace(options, batch=found.max_batch, seq_len=seq_len))
        more = build_memory_plan(LLAMA, replace(options, batch=found.max_batch + 1, seq_len=seq_len))
        assert at.total <= usable < more.total
    if found.max_seq_len is not None and not found.seq_capped:
        assert build_memory_plan(LLAMA, replace(options, seq_len=found.max_seq_len)).total <= usable
        assert build_memory_plan(LLAMA, replace(options, seq_len=found.max_seq_len + 1)).total > usable


def test_nothing_fits_is_none() -> None:
    search = fit_search(LLAMA, TRAIN, usable=10**9)
    assert search.max_batch is None and search.max_seq_len is None


def test_largest_stops_at_its_bound() -> None:
    assert largest(lambda n: n <= 37, 1000) == (37, False)
    assert largest(lambda n: True, 1000) == (1000, True)
    assert largest(lambda n: False, 1000) == (None, False)


@pytest.mark.parametrize("change,word", [
    ({"gpus": 6, "tp": 4}, "--tp"), ({"optimizer": "adagrad"}, "--optimizer"),
    ({"zero": 4}, "--zero"), ({"dtype": "int4"}, "--lora-rank"), ({"attention": "engine"}, "backward"),
])
def test_bad_options_are_one_message(change: dict[str, object], word: str) -> None:
    with pytest.raises(BadInputError, match=word):
        build_memory_plan(LLAMA, replace(TRAIN, **change))


def test_lora_on_a_spec_without_the_targets() -> None:
    with pytest.raises(BadInputError, match="no linear layers named gate"):
        lora_parameters(load_spec("gpt2"), 8, ("gate",))
