"""Phi-3 (model_type phi3) at full size against transformers on the meta device, from the
published config.json values (written out below, as the checkpoints ship them; the keys that
shape the model).

Three checks per model: tfcli's total from the imported config equals transformers'
`num_parameters()` of the class in `architectures` built on the meta device (and the issue's
figure where it quotes one); import-config reproduces the bundled spec field for field; and
that spec round-trips through YAML. The long-context configs carry LongRoPE factor lists of
d_head / 2 = 48 values each; their values change no count, so they are written as lists of the
right length here (the real ones are read by the parity tests' small models).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parity.meta_totals import hf_total
from tfcli.checkpoints import spec_from_config
from tfcli.checkpoints.export import spec_to_yaml
from tfcli.spec.counts import components, total_parameters
from tfcli.spec.load import load_spec

IDENTITY = ("name", "description", "source")
MINI = {
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "attention_bias": False,
    "attention_dropout": 0.0, "bos_token_id": 1, "embd_pdrop": 0.0, "eos_token_id": 32000,
    "hidden_act": "silu", "hidden_size": 3072, "initializer_range": 0.02,
    "intermediate_size": 8192, "max_position_embeddings": 4096, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "original_max_position_embeddings": 4096,
    "pad_token_id": 32000, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05, "rope_scaling": None,
    "rope_theta": 10000.0, "sliding_window": 2047, "tie_word_embeddings": False,
    "use_cache": True, "vocab_size": 32064,
}
LONGROPE = {"type": "longrope", "short_factor": [1.0] * 48, "long_factor": [1.5] * 48}
# name -> (config, issue's total or None, bundled spec or None)
CONFIGS: dict[str, tuple[dict[str, object], int | None, str | None]] = {
    "Phi-3-mini-4k-instruct": (MINI, 3_821_079_552, "phi-3-mini"),
    "Phi-3-mini-128k-instruct": (MINI | {
        "max_position_embeddings": 131072, "rope_scaling": LONGROPE, "sliding_window": 262144,
    }, 3_821_079_552, None),
    "Phi-3.5-mini-instruct": (MINI | {
        "max_position_embeddings": 131072, "rope_scaling": LONGROPE, "sliding_window": 262144,
    }, 3_821_079_552, None),  # the 128k recipe with retrained factor lists
    "Phi-4-mini-instruct": (MINI | {  # partial rotary: 96 of each 128-wide head; tied head
        "bos_token_id": 199999, "eos_token_id": 199999, "full_attn_mod": 1,
        "interpolate_factor": 1, "lm_head_bias": False, "max_position_embeddings": 131072,
        "mlp_bias": False, "num_attention_heads": 24, "num_key_value_heads": 8,
        "pad_token_id": 199999, "partial_rotary_factor": 0.75, "rope_scaling": LONGROPE,
        "sliding_window": 262144, "tie_word_embeddings": True, "vocab_size": 200064,
    }, None, None),
    "phi-4": (MINI | {  # Phi-4 (14B) is a phi3 too: GQA, RoPE theta 250000, no window
        "bos_token_id": 100257, "eos_token_id": 100265, "hidden_size": 5120,
        "intermediate_size": 17920, "max_position_embeddings": 16384, "num_attention_heads": 40,
        "num_hidden_layers": 40, "num_key_value_heads": 10,
        "original_max_position_embeddings": 16384, "pad_token_id": 100349, "rope_theta": 250000,
        "sliding_window": None, "vocab_size": 100352,
    }, None, None),
    "Phi-3-medium-4k-instruct": (MINI | {  # grouped-query: qkv_proj is 5120 + 2 * 1280 wide
        "hidden_size": 5120, "intermediate_size": 17920, "num_attention_heads": 40,
        "num_hidden_layers": 40, "num_key_value_heads": 10,
    }, None, None),
}



@pytest.mark.parametrize("name", list(CONFIGS))
def test_total_equals_transformers_on_meta_device(name: str) -> None:
    config, published, _ = CONFIGS[name]
    total = total_parameters(spec_from_config(config, source=name))
    assert total == hf_total(config)
    assert published is None or total == published


def test_long_context_configs_read_longrope() -> None:
    """The 128k window (262144) is past the context: no window; LongRoPE's factor is the
    context ratio 131072 / 4096, from the top-level original_max_position_embeddings."""
    spec = spec_from_config(CONFIGS["Phi-3-mini-128k-instruct"][0], source="x")
    assert spec.sliding_window is None and spec.rope_scaling is not None
    scaling = spec.rope_scaling
    assert (scaling.type, scaling.factor, scaling.original_max_seq_len) == ("longrope", 32.0, 4096)
    assert scaling.short_factor == [1.0] * 48 and scaling.long_factor == [1.5] * 48


def test_partial_rotary_factor_reads_as_rotary_dim() -> None:
    """Phi-4-mini: int(128 * 0.75) = 96 rotated dimensions, 48 LongRoPE factors for them."""
    spec = spec_from_config(CONFIGS["Phi-4-mini-instruct"][0], source="x")
    assert (spec.head_dim, spec.rotary_width, spec.tie_embeddings) == (128, 96, True)


def test_import_reproduces_the_bundled_spec() -> None:
    config, published, bundled = CONFIGS["Phi-3-mini-4k-instruct"]
    imported = spec_from_config(config, source="x").model_dump()
    expected = load_spec(str(bundled)).model_dump()
    assert {k: v for k, v in imported.items() if k not in IDENTITY} == \
        {k: v for k, v in expected.items() if k not in IDENTITY}
    assert total_parameters(load_spec(str(bundled))) == published


def test_bundled_spec_round_trips_through_yaml(tmp_path: Path) -> None:
    spec = load_spec("phi-3-mini")
    file = tmp_path / "phi-3-mini.yaml"
    file.write_text(spec_to_yaml(spec))
    assert load_spec(str(file)) == spec


def test_params_name_the_fused_projections_by_their_engine_paths() -> None:
    """The checkpoint's fused tensors are counted as the engine's separate q, k, v and gate, up
    arrays (Phi-3-medium: k and v a quarter of q's width)."""
    spec = spec_from_config(CONFIGS["Phi-3-medium-4k-instruct"][0], source="x")
    shapes = {c.path: c.shape for c in components(spec)}
    assert shapes["decoder.blocks.*.attn.wq"] == (5120, 5120)
    assert shapes["decoder.blocks.*.attn.wk"] == shapes["decoder.blocks.*.attn.wv"] == (5120, 1280)
    assert shapes["decoder.blocks.*.ffn.w_gate"] == shapes["decoder.blocks.*.ffn.w_up"] == (5120, 17920)
    assert not [p for p in shapes if p.split(".")[-1] in ("bq", "bk", "bv", "bo")]
