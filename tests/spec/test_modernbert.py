"""The spec fields ModernBERT added or widened: norm layernorm_nobias, first_attn_norm,
classifier_norm, classifier_pooling, head_bias, and sliding_window / layer_pattern on family
encoder (a bidirectional window) - what they derive and count, and each refused combination one
SpecConsistencyError naming the field (through the CLI: exit 2, the field named)."""

from __future__ import annotations

import pytest

from tests.engine.engine_specs import BASE, VARIANTS, assert_refused, make_spec
from tfcli.spec.counts import components, total_parameters
from tfcli.spec.model import Spec


def _headed(variant: str, **changes: object) -> Spec:
    """make_spec with a `head` in place of the variant's lm_head (derived from it)."""
    data = BASE | VARIANTS[variant] | {"name": variant} | changes
    data.pop("lm_head", None)
    return Spec(**data)


def test_an_encoder_window_and_pattern_are_accepted_and_counted_per_layer() -> None:
    spec = make_spec("modernbert", n_layers=5)
    assert spec.layer_kinds == ("global", "local", "global", "local", "global")
    assert spec.local_layers == 2 and spec.sliding_window == 3
    assert spec.final_norm and spec.head == "none"


def test_layernorm_nobias_counts_a_scale_only() -> None:
    with_bias, without = make_spec("modernbert", norm="layernorm"), make_spec("modernbert")
    norms = [c for c in components(without) if c.group == "norm"]
    assert norms and all(c.name.endswith(".scale") for c in norms)
    # embedding norm, one block-1 attn_norm, two ffn_norms, the final norm: 5 biases of d
    assert total_parameters(with_bias) - total_parameters(without) == 5 * 32


def test_first_attn_norm_false_drops_block_0s_norm_only() -> None:
    spec, normed = make_spec("modernbert"), make_spec("modernbert", first_attn_norm=True)
    rows = {c.path: c.repeat for c in components(spec)}
    assert rows["encoder.blocks.*.attn_norm.scale"] == 1  # block 1's; block 0 has none
    assert total_parameters(normed) - total_parameters(spec) == 32


def test_head_fields_derive() -> None:
    mlm = _headed("modernbert", head="masked_lm", head_activation="gelu")
    assert mlm.head_bias is False and mlm.lm_head_bias  # `bias` false; the decoder's own bias
    seq = _headed("modernbert", head="sequence_classification",
                    classifier_dense=True, classifier_norm=True, head_activation="gelu",
                    head_bias=True, classifier_pooling="mean")
    names = [c.name for c in components(seq) if c.group == "head"]
    assert names == ["head.dense.weight", "head.dense.bias", "head.norm.scale",
                     "head.classifier.weight", "head.classifier.bias"]


BAD = [  # (variant, changes, field, message part)
    ("t5", {"sliding_window": 4}, "sliding_window", "does not apply to family 'encoder-decoder'"),
    ("modernbert", {"norm_placement": "post"}, "first_attn_norm", "needs norm_placement: pre"),
    ("modernbert", {"embedding_norm": False}, "first_attn_norm", "embedding_norm: true"),
    ("albert", {"first_attn_norm": False, "norm_placement": "pre"}, "first_attn_norm",
     "no shared_layers"),
    ("modernbert", {"layer_pattern": ["local"], "sliding_window": None}, "layer_pattern",
     "no sliding_window"),
    ("bert", {"head": "token_classification", "classifier_norm": True},
     "classifier_norm", "needs classifier_dense"),
    ("bert", {"head": "token_classification", "classifier_pooling": "mean"},
     "classifier_pooling", "needs head sequence_classification"),
    ("bert", {"head": "sequence_classification", "classifier_pooling": "mean",
              "pooler": True}, "classifier_pooling", "without a pooler"),
    ("gpt", {"head": "sequence_classification", "classifier_pooling": "mean"},
     "classifier_pooling", "family 'encoder'"),
    ("bert", {"head_bias": True}, "head_bias", "does not apply to head 'none'"),
]


@pytest.mark.parametrize(("variant", "changes", "field", "message"), BAD)
def test_bad_combinations_name_the_field(variant: str, changes: dict, field: str,
                                         message: str) -> None:
    build = _headed if "head" in changes else make_spec
    assert_refused(lambda: build(variant, **changes), field, message)


def test_a_bad_field_in_yaml_names_it_through_the_cli(invoke, write_spec) -> None:  # noqa: ANN001
    path = write_spec("name: x\nfamily: encoder\nvocab_size: 50\nmax_seq_len: 16\nd_model: 16\n"
                      "n_heads: 2\nd_ff: 32\nn_layers: 2\nlm_head: false\n"
                      "first_attn_norm: false\n")
    result = invoke("params", str(path))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "'first_attn_norm'" in result.stderr and "needs norm_placement: pre" in result.stderr
