"""The output head of a Spec (`head` and its fields): what each kind needs, and what it derives.

A head kind is structure, not a model class: `lm` (vocabulary logits), `masked_lm` (BERT's
transform - dense, head_activation, norm - then vocabulary logits with a bias of their own, tied
or not), `sequence_classification` (num_labels scores per sequence: from the pooler when the spec
has one, else the last real token of a decoder or the first token of an encoder),
`token_classification` (num_labels scores per token; question answering is this with 2 labels,
start and end) and `none`. Families map their classes onto these kinds as data
(tfcli/checkpoints/heads.py). Kept apart from tfcli/spec/model.py, which calls resolve_head first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from tfcli.core.errors import SpecConsistencyError

if TYPE_CHECKING:
    from tfcli.spec.model import Spec

HeadKind = Literal["lm", "masked_lm", "sequence_classification", "token_classification", "none"]
PoolerActivation = Literal["tanh", "relu", "gelu", "gelu_tanh", "silu"]
ClassifierPooling = Literal["first", "mean"]
VOCAB_HEADS = ("lm", "masked_lm")  # heads with vocabulary logits (lm_head)
CLASSIFIERS = ("sequence_classification", "token_classification")
DEFAULT_LABELS = 2  # transformers' PretrainedConfig default (id2label of two classes)
MAX_LABELS = 2**20  # a (d_model, num_labels) classifier; beyond, a typo, not a label set


def _set(spec: Spec, field: str, value: object) -> None:
    # the model is frozen; derived fields are set once, during validation
    object.__setattr__(spec, field, value)


def resolve_head(spec: Spec) -> None:
    """Derive `head` from lm_head (old specs) or lm_head from `head`, and the head's own fields;
    SpecConsistencyError for a field the head does not use or a contradiction."""
    given = spec.model_fields_set
    if spec.head is None:
        _set(spec, "head", "lm" if spec.lm_head else "none")
    elif "lm_head" in given and spec.lm_head != (spec.head in VOCAB_HEADS):
        raise SpecConsistencyError("lm_head", f"is {str(spec.lm_head).lower()} but head is "
                                   f"{spec.head!r}")
    else:
        _set(spec, "lm_head", spec.head in VOCAB_HEADS)
    if spec.head == "masked_lm" and "lm_head_bias" not in given:
        _set(spec, "lm_head_bias", True)  # BERT's decoder bias, tied embedding or not
    _check_fields(spec)
    if spec.head in CLASSIFIERS:
        _fill(spec, "num_labels", DEFAULT_LABELS)
        _fill(spec, "classifier_bias", not (spec.head == "sequence_classification"
                                            and spec.family == "decoder"))
    if spec.head == "masked_lm" or spec.classifier_dense:
        _fill(spec, "head_activation", spec.activation)
        _fill(spec, "head_bias", spec.bias)
        if spec.head_activation in ("swiglu", "geglu", "geglu_tanh", "swiglu_clamped"):
            raise SpecConsistencyError("head_activation", f"must be a plain activation for the "
                                       f"head's dense (got {spec.head_activation!r})")


def _fill(spec: Spec, field: str, value: object) -> None:
    if getattr(spec, field) is None:
        _set(spec, field, value)


def _check_fields(spec: Spec) -> None:
    uses = {"num_labels": spec.head in CLASSIFIERS, "classifier_bias": spec.head in CLASSIFIERS,
            "head_activation": spec.head == "masked_lm" or spec.classifier_dense,
            "head_bias": spec.head == "masked_lm" or spec.classifier_dense,
            "pad_token_id": spec.head == "sequence_classification"}
    for field, used in uses.items():
        if getattr(spec, field) is not None and not used:
            raise SpecConsistencyError(field, f"does not apply to head {spec.head!r}")
    if spec.num_labels is not None and spec.num_labels > MAX_LABELS:
        raise SpecConsistencyError("num_labels", f"must be at most {MAX_LABELS:,} "
                                   f"(got {spec.num_labels:,})")
    if spec.pad_token_id is not None and spec.pad_token_id >= spec.vocab_size:
        raise SpecConsistencyError("pad_token_id", f"{spec.pad_token_id:,} lies outside the "
                                   f"vocabulary [0, {spec.vocab_size:,})")
    if spec.classifier_dense and spec.head not in CLASSIFIERS:
        raise SpecConsistencyError("classifier_dense", f"does not apply to head {spec.head!r}")
    if spec.classifier_norm and not spec.classifier_dense:
        raise SpecConsistencyError("classifier_norm", "needs classifier_dense: true (the norm "
                                   "follows its activation)")
    if spec.classifier_norm and spec.norm == "none":
        raise SpecConsistencyError("classifier_norm", "needs a norm (norm is 'none')")
    if spec.classifier_pooling != "first" and (
            spec.head != "sequence_classification" or spec.family != "encoder" or spec.pooler):
        raise SpecConsistencyError("classifier_pooling", f"{spec.classifier_pooling!r} needs "
                                   "head sequence_classification on family 'encoder' without a "
                                   "pooler")
    if spec.pooler_activation != "tanh" and not spec.pooler:
        raise SpecConsistencyError("pooler_activation", "needs pooler: true")
    if spec.head == "sequence_classification" and spec.family == "encoder-decoder":
        raise SpecConsistencyError("head", "sequence_classification is not built for family "
                                   "'encoder-decoder'")
