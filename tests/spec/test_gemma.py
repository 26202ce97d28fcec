"""The Gemma fields (scale_embeddings, norm_unit_offset, attn_logit_softcap, final_logit_softcap,
layer_pattern, rope_local_theta): defaults that change nothing, and bad combinations refused
with one SpecConsistencyError naming the field (through the CLI: exit 2, no traceback)."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import VALID_SPEC
from tfcli.core.errors import SpecConsistencyError
from tfcli.spec.model import Spec
from tfcli.spec.load import parse_spec_text

ROPE = VALID_SPEC + "positions: rope\nnorm: rmsnorm\n"
HYBRID = ROPE + "sliding_window: 8\nlayer_pattern: [local, global]\n"


def test_defaults_change_nothing() -> None:
    spec = parse_spec_text(VALID_SPEC)
    assert (spec.scale_embeddings, spec.norm_unit_offset) == (False, False)
    assert (spec.attn_logit_softcap, spec.final_logit_softcap) == (None, None)
    assert (spec.layer_pattern, spec.rope_local_theta) == (None, None)
    assert spec.layer_kinds == ("global", "global")


def test_a_gemma_spec_is_accepted() -> None:
    spec = parse_spec_text(HYBRID + "rope_local_theta: 10000\nattn_logit_softcap: 50.0\n"
                           "final_logit_softcap: 30.0\nscale_embeddings: true\n"
                           "norm_unit_offset: true\n")
    assert spec.layer_kinds == ("local", "global")
    assert (spec.rope_local_theta, spec.attn_logit_softcap) == (10000.0, 50.0)


BAD = [  # (YAML, field, message part)
    (ROPE + "layer_pattern: [local, global]\n", "layer_pattern", "no sliding_window"),
    (ROPE + "sliding_window: 8\nlayer_pattern: [global]\n", "sliding_window", "no local layer"),
    (ROPE + "sliding_window: 8\nlayer_pattern: []\n", "layer_pattern", "at least 1"),
    (ROPE + "sliding_window: 8\nlayer_pattern: [local, sliding]\n", "layer_pattern.1",
     "must be one of 'global' or 'local' (got 'sliding')"),
    (ROPE + "rope_local_theta: 100\n", "rope_local_theta", "layer_pattern with local layers"),
    (HYBRID.replace("positions: rope", "positions: learned") + "rope_local_theta: 100\n",
     "rope_local_theta", "needs positions: rope"),
    (VALID_SPEC + "family: encoder-decoder\nlayer_pattern: [global]\n", "layer_pattern",
     "does not apply to family 'encoder-decoder'"),
    (ROPE + "attn_logit_softcap: 0\n", "attn_logit_softcap", "greater than 0"),
    (ROPE + "final_logit_softcap: -30\n", "final_logit_softcap", "greater than 0"),
    (VALID_SPEC + "family: encoder\nlm_head: false\nfinal_logit_softcap: 30.0\n",
     "final_logit_softcap", "needs lm_head"),
    (VALID_SPEC + "norm: none\nnorm_unit_offset: true\n", "norm_unit_offset", "got 'none'"),
    (VALID_SPEC + "norm: layernorm_noaffine\nnorm_unit_offset: true\n", "norm_unit_offset",
     "with a weight"),
]


@pytest.mark.parametrize(("text", "field", "message"), BAD)
def test_bad_values_name_the_field(invoke, write_spec, text: str, field: str,
                                   message: str) -> None:
    path = write_spec(_dedup(text))
    result = invoke("params", str(path))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"'{field}'" in result.stderr and message in result.stderr


@pytest.mark.parametrize(("text", "field"), [(t, f) for t, f, _ in BAD if "greater" not in _
                                             and "at least" not in _ and "one of" not in _])
def test_consistency_errors_are_one_spec_consistency_error(text: str, field: str) -> None:
    with pytest.raises(SpecConsistencyError) as info:
        Spec.model_validate(yaml.safe_load(_dedup(text)))  # built directly, not from a file
    assert info.value.field == field


def _dedup(text: str) -> str:
    """The last value of each top-level key (VALID_SPEC's family is overridden by a later one)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key = line.split(":", 1)[0]
        fields[key] = line
    return "\n".join(fields.values()) + "\n"
