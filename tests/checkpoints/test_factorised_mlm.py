"""masked_lm on factorised embeddings (embedding_dim): the transform maps d_model to
embedding_dim, its norm and the tied decoder are embedding_dim wide - ALBERT's predictions
head and ELECTRA's generator. Counted against transformers' AlbertForMaskedLM and
ElectraForMaskedLM on the meta device, from the body's imported spec with the head set."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tfcli.analysis.trace.build import build_trace
from tfcli.analysis.trace.check import execute_check
from tfcli.checkpoints import spec_from_config
from tfcli.engine.init import init_weights
from tfcli.engine.model import forward
from tfcli.engine.weights import count_parameters
from tfcli.spec.counts import components, total_parameters

if TYPE_CHECKING:
    import transformers

SIZES = {"embedding_size": 8, "hidden_size": 16, "intermediate_size": 32,
         "num_attention_heads": 2, "num_hidden_layers": 2, "vocab_size": 50,
         "max_position_embeddings": 32}
CONFIGS = {  # class -> (its config class, its body class, the head's activation)
    "AlbertForMaskedLM": ("AlbertConfig", "AlbertModel", None),
    "ElectraForMaskedLM": ("ElectraConfig", "ElectraModel", "gelu"),
}


@pytest.fixture
def config(transformers: ModuleType, name: str) -> transformers.PretrainedConfig:
    return getattr(transformers, CONFIGS[name][0])(**SIZES)


def _spec(name: str, config: transformers.PretrainedConfig):
    _, body, act = CONFIGS[name]
    spec = spec_from_config(config.to_dict() | {"architectures": [body]}, "x")
    return spec.replace(head="masked_lm", lm_head=True, pooler=False,
                        **({} if act is None else {"head_activation": act}))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_factorised_masked_lm_counts_what_transformers_builds(
        torch: ModuleType, transformers: ModuleType, name: str,
        config: transformers.PretrainedConfig) -> None:
    with torch.device("meta"):
        model = getattr(transformers, name)(config)
    spec = _spec(name, config)
    assert total_parameters(spec) == sum(p.numel() for p in model.parameters())
    head = {c.name: c.shape for c in components(spec) if c.group == "head"}
    assert head["head.transform.weight"] == (16, 8) and head["head.norm.scale"] == (8,)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_factorised_masked_lm_runs_and_traces(name: str,
                                              config: transformers.PretrainedConfig) -> None:
    spec = _spec(name, config)
    weights = init_weights(spec)
    assert count_parameters(weights, spec) == total_parameters(spec)
    out = forward(spec, weights, np.array([[1, 2, 3, 4]]))
    assert out.logits is not None and out.logits.shape == (1, 4, 50)
    report = build_trace(spec, batch=1, seq_len=4)
    assert report.total_params == total_parameters(spec)
    check = execute_check(spec, report)
    assert check.ok and check.mismatches == (), check.to_dict()
    rows = {r.op: r.output for r in report.rows if r.path == "head"}
    assert rows["transform"] == (1, 4, 8) and rows["logits"] == (1, 4, 50)
