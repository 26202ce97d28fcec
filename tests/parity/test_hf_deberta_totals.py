"""DeBERTa-v3's published configs at full size (base, large, small, xsmall; tests/parity/
encoder_configs.py): every DebertaV2 class tfcli builds counted by transformers'
num_parameters() on the meta device (tests/parity/meta_totals.py) and by tfcli, and
`tfcli import-config` of a config naming each class writing a spec of that class's count."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.parity.encoder_configs import (
    DEBERTA_V3_BASE,
    DEBERTA_V3_LARGE,
    DEBERTA_V3_SMALL,
    DEBERTA_V3_XSMALL,
)
from tests.parity.meta_totals import hf_total
from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.heads import ARCHITECTURES
from tfcli.spec.counts import components, total_parameters
from tfcli.spec.load import load_spec, parse_spec_text

CONFIGS = {"deberta-v3-base": DEBERTA_V3_BASE, "deberta-v3-large": DEBERTA_V3_LARGE,
           "deberta-v3-small": DEBERTA_V3_SMALL, "deberta-v3-xsmall": DEBERTA_V3_XSMALL}
CLASSES = list(ARCHITECTURES["deberta-v2"])
# transformers' meta-device counts, pinned: DebertaV2Model, and v3-base's head classes
TOTALS = {
    ("deberta-v3-base", "DebertaV2Model"): 183_831_552,
    ("deberta-v3-large", "DebertaV2Model"): 434_012_160,
    ("deberta-v3-small", "DebertaV2Model"): 141_304_320,
    ("deberta-v3-xsmall", "DebertaV2Model"): 70_682_112,
    ("deberta-v3-base", "DebertaV2ForMaskedLM"): 184_551_780,
    ("deberta-v3-base", "DebertaV2ForSequenceClassification"): 184_423_682,
    ("deberta-v3-base", "DebertaV2ForTokenClassification"): 183_833_090,
    ("deberta-v3-base", "DebertaV2ForQuestionAnswering"): 183_833_090,
    ("deberta-v3-base", "DebertaV2ForMultipleChoice"): 184_422_913,
}


@pytest.mark.parametrize("size", sorted(CONFIGS))
@pytest.mark.parametrize("name", CLASSES)
def test_every_class_of_every_v3_size_counts_what_transformers_builds(size: str,
                                                                      name: str) -> None:
    config = CONFIGS[size] | {"architectures": [name]}
    expected = hf_total(config)
    assert total_parameters(spec_from_config(config, "x")) == expected
    assert TOTALS.get((size, name), expected) == expected


def test_a_config_without_architectures_is_the_bare_model_the_bundled_spec_counts() -> None:
    spec = spec_from_config(DEBERTA_V3_BASE, "x")
    assert spec.head == "none" and not spec.pooler
    skip = {"name", "description", "source"}
    assert spec.model_dump(exclude=skip) == load_spec("deberta-v3-base").model_dump(exclude=skip)


def test_v3_base_relative_table_is_2_x_256_rows_normed_and_no_position_table() -> None:
    spec = load_spec("deberta-v3-base")
    shapes = {c.path: c.shape for c in components(spec)}
    assert shapes["encoder.relative_embedding"] == (512, 768)
    assert shapes["encoder.relative_embedding_norm.scale"] == (768,)
    assert "position_embedding" not in shapes and "token_type_embedding" not in shapes
    assert not any(".wpos_" in path for path in shapes)  # share_att_key: no own projections
    assert spec.scale == (64 * 3) ** -0.5


@pytest.mark.parametrize("name", CLASSES)
def test_import_config_of_each_class_writes_a_spec_of_its_count(
        invoke: Callable[..., object], tmp_path: Path, name: str) -> None:
    config = DEBERTA_V3_BASE | {"architectures": [name]}
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = invoke("import-config", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert total_parameters(parse_spec_text(result.stdout)) == hf_total(config)
