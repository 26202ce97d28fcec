"""How the checkpoint readers read published configs beyond what a total shows (the totals are
tests/parity/test_totals.py): newer spellings of the same config, RoPE scaling defaults, notes
for what is read but not built, keys a reader ignores as transformers does, and import-config of
each DeBERTa class through the CLI."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.parity.encoder_configs import DEBERTA_V3_BASE
from tests.parity.meta_totals import hf_total
from tests.parity.published_configs import DEEPSEEK_V2_LITE, DEEPSEEK_V3, GEMMA, LLAMA_3X, PHI3
from tfcli.analysis.params_report import build_params_report
from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.heads import ARCHITECTURES
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import total_parameters
from tfcli.spec.load import parse_spec_text
from tfcli.sources import load_spec

IDENTITY = {"name", "description", "source"}


def test_gemma3_newer_config_spellings_import_alike() -> None:
    """transformers 5's nested rope_parameters and a full layer_types list give the same spec
    as the published Gemma 3 keys."""
    config, bundled = GEMMA["Gemma-3-1B"], "gemma-3-1b"
    newer = {k: v for k, v in config.items()
             if k not in ("rope_theta", "rope_local_base_freq", "rope_scaling",
                          "sliding_window_pattern")}
    newer |= {"rope_parameters": {
        "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
        "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 4
        + ["sliding_attention"] * 2}
    assert spec_from_config(newer, "x").model_dump(exclude=IDENTITY) == \
        load_spec(bundled).model_dump(exclude=IDENTITY)


def test_llama_dynamic_extends_the_context_by_its_factor() -> None:
    """dynamic NTK reads its original length from max_position_embeddings and grows the base
    past it: the spec keeps that length in rope_scaling and allows factor times as many tokens."""
    config = LLAMA_3X["llama-3.2-1b"] | {"max_position_embeddings": 4096,
                                         "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}
    spec = spec_from_config(config, source="x")
    assert spec.max_seq_len == 8192 and spec.rope_scaling is not None
    assert (spec.rope_scaling.type, spec.rope_scaling.original_max_seq_len) == ("dynamic", 4096)


def test_llama_longrope_factor_defaults_to_the_context_ratio() -> None:
    config = LLAMA_3X["llama-3.2-1b"]
    rope = {"rope_type": "longrope", "original_max_position_embeddings": 4096,
            "short_factor": [1.0] * 32, "long_factor": [2.0] * 32}
    spec = spec_from_config(config | {"rope_scaling": rope}, source="x")
    assert spec.rope_scaling is not None and spec.rope_scaling.factor == 131072 / 4096
    bad = rope | {"long_factor": [2.0] * 31 + ["x"]}
    with pytest.raises(BadInputError, match="rope_scaling.long_factor"):
        spec_from_config(config | {"rope_scaling": bad}, source="x")


def test_phi3_long_context_configs_read_longrope() -> None:
    """The 128k window (262144) is past the context: no window; LongRoPE's factor is the
    context ratio 131072 / 4096, from the top-level original_max_position_embeddings."""
    spec = spec_from_config(PHI3["Phi-3-mini-128k-instruct"], source="x")
    assert spec.sliding_window is None and spec.rope_scaling is not None
    scaling = spec.rope_scaling
    assert (scaling.type, scaling.factor, scaling.original_max_seq_len) == ("longrope", 32.0, 4096)
    assert scaling.short_factor == [1.0] * 48 and scaling.long_factor == [1.5] * 48


def test_the_multi_token_prediction_layer_is_said_to_be_left_out() -> None:
    """transformers builds 61 blocks and ignores the stored layer 61; both specs say so, and
    `tfcli params` shows it among its notes."""
    imported = spec_from_config(DEEPSEEK_V3, source="DeepSeek-V3")
    bundled = load_spec("deepseek-v3")
    for spec, said in ((imported, "1 multi-token-prediction layer(s) (num_nextn_predict_layers) "
                        "not built or counted"),
                       (bundled, "the multi-token-prediction layer 61 is not counted")):
        assert said in spec.description
        assert any(said in note for note in build_params_report(spec).notes)
    assert "multi-token" not in spec_from_config(DEEPSEEK_V2_LITE, source="x").description


def test_what_the_deepseek_v2_router_does_not_read_is_not_read() -> None:
    """DeepseekV2TopkRouter always scores by softmax and never renormalises: a config saying
    otherwise gives the same spec, with a note for scoring_func."""
    spec = spec_from_config(DEEPSEEK_V2_LITE | {"scoring_func": "sigmoid", "norm_topk_prob": True,
                                                "moe_layer_freq": 3}, source="x")
    assert (spec.router_scoring, spec.norm_topk_prob) == ("softmax", False)
    assert spec.moe_layer_count(27) == 26  # every block past the first, whatever the frequency
    assert "scoring_func 'sigmoid' ignored" in spec.description


def test_deepseek_v3_flags_typed_bool_or_none_read_null_as_false() -> None:
    """DeepseekV3Config types rope_interleave and norm_topk_prob `bool | None`; the modeling
    code's `if` reads null as false: rotate_half RoPE, no renormalisation."""
    spec = spec_from_config(DEEPSEEK_V3 | {"rope_interleave": None, "norm_topk_prob": None},
                            source="x")
    assert (spec.rope_pairing, spec.norm_topk_prob) == ("half", False)


@pytest.mark.parametrize("name", list(ARCHITECTURES["deberta-v2"]))
def test_import_config_of_each_deberta_class_writes_a_spec_of_its_count(
        invoke: Callable[..., object], tmp_path: Path, name: str) -> None:
    config = DEBERTA_V3_BASE | {"architectures": [name]}
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = invoke("import-config", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert total_parameters(parse_spec_text(result.stdout)) == hf_total(config)
