"""ModernBERT's published configs at full size: every class transformers builds on them counted
by its num_parameters() on the meta device (tests/parity/meta_totals.py) and by tfcli, the
`import-config` spec of each class (written and read back) counting the same, and the bundled
modernbert-base equal to the published config's import."""

from __future__ import annotations

import pytest

from tests.parity.encoder_configs import MODERNBERT_BASE, MODERNBERT_LARGE
from tests.parity.meta_totals import hf_total
from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.export import spec_to_yaml
from tfcli.spec.counts import total_parameters
from tfcli.spec.load import load_spec, parse_spec_text

# (config, class) -> the total transformers counts (2 labels for the classifiers, the default)
CASES = {
    ("base", "ModernBertModel"): 149_014_272,
    ("base", "ModernBertForMaskedLM"): 149_655_232,  # the published class
    ("base", "ModernBertForSequenceClassification"): 149_606_402,
    ("base", "ModernBertForTokenClassification"): 149_606_402,
    ("base", "ModernBertForQuestionAnswering"): 149_606_402,
    ("base", "ModernBertForMultipleChoice"): 149_605_633,
    ("large", "ModernBertModel"): 394_781_696,
    ("large", "ModernBertForMaskedLM"): 395_881_664,
    ("large", "ModernBertForSequenceClassification"): 395_833_346,
}
CONFIGS = {"base": MODERNBERT_BASE, "large": MODERNBERT_LARGE}


@pytest.mark.parametrize(("size", "name"), sorted(CASES))
def test_totals_match_transformers(size: str, name: str) -> None:
    config = CONFIGS[size] | {"architectures": [name]}
    expected = CASES[size, name]
    assert hf_total(config) == expected
    spec = spec_from_config(config, "x")
    assert total_parameters(spec) == expected
    again = parse_spec_text(spec_to_yaml(spec))  # what import-config writes
    assert again == spec and total_parameters(again) == expected


def test_the_bundled_spec_is_the_published_config_imported() -> None:
    skip = {"name", "description", "source"}
    imported = spec_from_config(MODERNBERT_BASE, "x")
    bundled = load_spec("modernbert-base")
    assert imported.model_dump(exclude=skip) == bundled.model_dump(exclude=skip)
    assert total_parameters(bundled) == CASES["base", "ModernBertForMaskedLM"]


def test_the_published_recipe_reads_as_documented() -> None:
    spec = load_spec("modernbert-base")
    assert spec.layer_kinds[:6] == ("global", "local", "local") * 2
    assert spec.local_layers == 14 and spec.sliding_window == 65  # |i - j| <= 128 // 2
    assert (spec.rope_theta, spec.rope_local_theta) == (160000.0, 10000.0)
    assert (spec.head, spec.head_bias, spec.lm_head_bias, spec.tie_embeddings) == (
        "masked_lm", False, True, True)
