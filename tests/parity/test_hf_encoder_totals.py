"""The encoder families' published configs at full size: the bare body classes and the head
classes (the config's own masked-LM class, classifiers) counted by transformers'
num_parameters() on the meta device (tests/parity/meta_totals.py) and by tfcli."""

from __future__ import annotations

import pytest

from tests.parity.encoder_configs import (
    ALBERT_BASE_V2,
    DISTILBERT_BASE_UNCASED,
    ELECTRA_BASE_DISCRIMINATOR,
    ELECTRA_SMALL_DISCRIMINATOR,
    ROBERTA_BASE,
    XLM_ROBERTA_LARGE,
)
from tests.parity.meta_totals import hf_total
from tfcli.checkpoints import spec_from_config
from tfcli.spec.counts import components, total_parameters
from tfcli.spec.model import Spec
from tfcli.spec.load import load_spec

CASES = {  # (config, class) -> transformers' and tfcli's total
    "distilbert-base-uncased": (DISTILBERT_BASE_UNCASED, "DistilBertModel", 66_362_880),
    "roberta-base": (ROBERTA_BASE, "RobertaModel", 124_645_632),
    "xlm-roberta-large": (XLM_ROBERTA_LARGE, "XLMRobertaModel", 559_890_432),
    "electra-base-discriminator": (ELECTRA_BASE_DISCRIMINATOR, "ElectraModel", 108_891_648),
    "electra-small-discriminator": (ELECTRA_SMALL_DISCRIMINATOR, "ElectraModel", 13_483_008),
    "albert-base-v2": (ALBERT_BASE_V2, "AlbertModel", 11_683_584),
}


# the published configs' own classes, and classification heads on them (2 labels)
HEAD_CASES = {
    "distilbert-base-uncased masked LM": (DISTILBERT_BASE_UNCASED, "DistilBertForMaskedLM",
                                          66_985_530),
    "roberta-base masked LM": (ROBERTA_BASE, "RobertaForMaskedLM", 124_697_433),
    "xlm-roberta-large masked LM": (XLM_ROBERTA_LARGE, "XLMRobertaForMaskedLM", 560_142_482),
    # AlbertModel less its pooler, plus the head on 128-wide embeddings
    "albert-base-v2 masked LM": (ALBERT_BASE_V2, "AlbertForMaskedLM", 11_221_680),
    "roberta-base classifier": (ROBERTA_BASE, "RobertaForSequenceClassification", 124_647_170),
    "distilbert-base-uncased classifier": (DISTILBERT_BASE_UNCASED,
                                           "DistilBertForSequenceClassification", 66_955_010),
    "electra-base-discriminator classifier": (ELECTRA_BASE_DISCRIMINATOR,
                                              "ElectraForSequenceClassification", 109_483_778),
    "albert-base-v2 classifier": (ALBERT_BASE_V2, "AlbertForSequenceClassification",
                                  11_685_122),
    "electra-base-discriminator": (ELECTRA_BASE_DISCRIMINATOR, "ElectraForPreTraining",
                                   109_483_009),
    "electra-small-discriminator": (ELECTRA_SMALL_DISCRIMINATOR, "ElectraForPreTraining",
                                    13_549_057),
}


@pytest.mark.parametrize("case", sorted(CASES) + sorted(HEAD_CASES))
def test_encoder_totals_match_transformers(case: str) -> None:
    config, name, expected = CASES.get(case) or HEAD_CASES[case]
    config = config | {"architectures": [name]}
    assert hf_total(config) == expected
    assert total_parameters(spec_from_config(config, "x")) == expected


def _spec(config: dict[str, object], name: str) -> Spec:
    return spec_from_config(config | {"architectures": [name]}, "x")


def test_electra_base_is_bert_base_less_its_pooler() -> None:
    bert = total_parameters(load_spec("bert-base"))  # BertModel with its pooler: 109,482,240
    assert bert - 768 * 768 - 768 == CASES["electra-base-discriminator"][2]
    assert _spec(ELECTRA_BASE_DISCRIMINATOR, "ElectraModel").embedding_dim is None


def test_roberta_base_position_table_has_514_rows_for_512_tokens() -> None:
    spec = _spec(ROBERTA_BASE, "RobertaModel")
    assert (spec.max_seq_len, spec.position_offset) == (512, 2)
    position = next(c for c in components(spec) if c.path == "position_embedding")
    assert position.shape == (514, 768)


def test_albert_counts_its_one_block_once() -> None:
    spec = _spec(ALBERT_BASE_V2, "AlbertModel")
    block = [c for c in components(spec) if c.path.startswith("encoder.blocks.")]
    assert block and all(c.repeat == 1 and c.path.startswith("encoder.blocks.0.") for c in block)
    assert all("shared by all 12 blocks" in c.note for c in block)
    # 12 separate blocks would add 11 more of them
    per_block = sum(c.count for c in block)
    assert per_block == 7_087_872
    project = [c.shape for c in components(spec) if c.path.startswith("embedding_project")]
    assert project == [(128, 768), (768,)]
