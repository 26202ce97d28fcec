"""ZeRO shards whole values (issue 28.1): a rank holds ceil(numel / ranks) elements of every
tensor under stage 3 (DeepSpeed's per-parameter partition, padded), ceil(total / ranks) of the
flat buffer under stages 1-2 - never a fraction of a parameter - and a degree beyond the
parameters it shards is refused instead of printing sub-parameter bytes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tfcli.analysis.memory.plan import (MemoryOptions, build_memory_plan, elements_per_rank,
                                        parameter_tensor_sizes)
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import total_parameters
from tfcli.sources import load_spec

TINY = load_spec("lesson-tiny")  # 16,704 parameters in tensors as small as 16 values
TRAIN = MemoryOptions(seq_len=8, train=True)


def test_stage_3_partitions_each_tensor_and_pads_it() -> None:
    sizes = [(16, 2), (1000, 1), (7, 1)]  # (elements, tensors of that size)
    assert elements_per_rank(sizes, 8, per_tensor=True) == 2 + 2 + 125 + 1
    assert elements_per_rank(sizes, 8, per_tensor=False) == -(-1039 // 8)
    assert elements_per_rank(sizes, 1, per_tensor=True) == 1039


def test_the_tensor_sizes_add_up_to_the_parameter_count() -> None:
    assert sum(n * k for n, k in parameter_tensor_sizes(TINY)) == total_parameters(TINY)


@pytest.mark.parametrize("gpus", [2, 3, 64, 1000, 16_704])
@pytest.mark.parametrize("zero", [1, 2, 3])
def test_every_sharded_part_holds_whole_values(gpus: int, zero: int) -> None:
    """bfloat16 weights and gradients: an even number of bytes; float32 master weights and
    AdamW moments: a multiple of 4 - whatever the degree."""
    plan = build_memory_plan(TINY, replace(TRAIN, gpus=gpus, zero=zero))
    assert plan.part("weights") % 2 == 0 and plan.part("gradients") % 2 == 0
    assert plan.part("master weights") % 4 == 0 and plan.part("optimizer state") % 4 == 0
    assert plan.part("weights") >= 2 and plan.part("master weights") >= 4  # at least one value


def test_stage_3_at_many_ranks_holds_a_value_of_every_tensor() -> None:
    """1,000 ranks: the 16-value norms still cost each rank one (padded) value, so a rank
    holds one element per tensor, not 16,704 / 1,000 of a parameter."""
    sizes = parameter_tensor_sizes(TINY)
    tensors = sum(k for _, k in sizes)
    plan = build_memory_plan(TINY, replace(TRAIN, gpus=1000, zero=3))
    assert plan.part("weights") == 2 * sum(-(-n // 1000) * k for n, k in sizes) >= 2 * tensors


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_a_degree_beyond_the_parameters_is_refused(zero: int) -> None:
    with pytest.raises(BadInputError, match=r"--zero .* 16,705 data-parallel .* 16,704"):
        build_memory_plan(TINY, replace(TRAIN, gpus=16_705, zero=zero))
    build_memory_plan(TINY, replace(TRAIN, gpus=16_705, zero=0))  # nothing sharded: replicated


def test_lora_shards_only_the_adapters_values() -> None:
    plan = build_memory_plan(TINY, replace(TRAIN, gpus=4, zero=3, lora_rank=2))
    assert plan.part("gradients") % 4 == 0  # float32 adapter gradients, whole values
