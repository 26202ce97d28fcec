"""Phi-3 against transformers: small random Phi3ForCausalLM models saved, loaded through tfcli
(fused qkv_proj and gate_up_proj cut at the spec's widths), compared logit by logit.

Every variant the family uses is on: grouped-query attention (qkv_proj's q, k, v of unequal
widths), a sliding window, partial rotary (Phi-4-mini), tied embeddings, and LongRoPE with short and long factor
lists from an original context of 16, which the 40-token inputs pass (so the long factors and
the attention factor sqrt(1 + ln(64/16) / ln 16) are what is compared). The inputs are longer
than every window. Checked: float32 logits (rtol = atol = 1e-4) on a batch with one row
right-padded and on one left-padded (positions over real tokens); float64 (rtol 1e-10) with
transformers' float32 islands (RMSNorm, the RoPE table) swapped for float64 formulas; greedy
tokens equal to `model.generate(do_sample=False)` for each prompt alone and for a left-padded
batch; `tfcli generate --check-cache`; the decode layout of the loaded weights.

Most prompts are longer than the original context; one starts within it and crosses it while
generating, where transformers' Phi-3 re-encodes the whole sequence with the long factors, as
tfcli's generate does (engine.generate.rope_refresh_slot).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.parity.greedy import hf_greedy, tfcli_greedy
from tests.parity.saved_models import assert_counts_match, save_random
from tests.parity.test_hf_parity import F32, F64, _rms_norm_f64
from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.engine.layout import FUSED_GATE_UP, FUSED_QKV, fused_projection
from tfcli.engine.model import ModelInput, forward

if TYPE_CHECKING:
    import torch
    from transformers import Phi3Config, PreTrainedModel

VOCAB, LENGTH, NEW_TOKENS, ORIGINAL = 96, 40, 12, 16
SMALL = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
         "num_hidden_layers": 2, "intermediate_size": 96, "vocab_size": VOCAB,
         "max_position_embeddings": 64, "pad_token_id": 0, "bos_token_id": 1,
         "eos_token_id": 2}
LONGROPE = {"type": "longrope",  # the spelling of the published 128k configs
            "short_factor": [1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0],
            "long_factor": [1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0]}
PROMPTS = [[5, 17, 33, 2, 80, 7, 9, 11, 3, 60, 44, 21, 8, 19, 70, 31, 6, 2],
           [9, 1, 4, 50, 61, 12, 33, 40, 2, 7, 8, 90, 13, 14, 15, 16, 17, 18, 19, 20]]


def _mini_4k() -> Phi3Config:
    """Phi-3-mini-4k's recipe: plain RoPE, a sliding window (2047 of 4096 there); here also a
    head width that hidden / heads does not give."""
    from transformers import Phi3Config
    return Phi3Config(**SMALL, head_dim=8, sliding_window=7)


def _long() -> Phi3Config:
    """Phi-3-mini-128k / Phi-3.5-mini's recipe: LongRoPE from a short original context."""
    from transformers import Phi3Config
    return Phi3Config(**SMALL, original_max_position_embeddings=ORIGINAL, sliding_window=12,
                      rope_scaling=LONGROPE)


def _phi4_mini() -> Phi3Config:
    """Phi-4-mini's recipe: tied embeddings, partial rotary (3/4 of each head: 12 of 16
    dimensions, so 6 LongRoPE factors), LongRoPE; here with one key/value head (MQA)."""
    from transformers import Phi3Config
    rope = {"type": "longrope", "short_factor": LONGROPE["short_factor"][:6],
            "long_factor": LONGROPE["long_factor"][:6]}
    return Phi3Config(**SMALL | {"num_key_value_heads": 1}, tie_word_embeddings=True,
                      partial_rotary_factor=0.75, original_max_position_embeddings=ORIGINAL,
                      rope_scaling=rope, sliding_window=9)


CASES: dict[str, Callable[[], Phi3Config]] = {"mini-4k": _mini_4k, "longrope": _long,
                                              "phi4-mini": _phi4_mini}


def _build(name: str, path: Path, std: float | None = None) -> PreTrainedModel:
    """The case's model with non-trivial norm weights (ones would hide a misplaced norm), saved
    as safetensors. `std` redraws the matrices (generation: logits far from ties)."""
    from transformers import Phi3ForCausalLM
    return save_random(lambda: Phi3ForCausalLM(CASES[name]()), path, std)


@pytest.fixture(scope="module", params=list(CASES))
def saved(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[PreTrainedModel, Path]:
    path = tmp_path_factory.mktemp(request.param)
    return _build(request.param, path), path


def _inputs(left: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(tokens, mask, positions): the second row padded by 9 at the right, or the left."""
    tokens = np.random.default_rng(1).integers(3, VOCAB, size=(2, LENGTH))
    mask = np.ones_like(tokens)
    if not left:
        mask[1, -9:] = 0
        return tokens, mask, None
    mask[1, :9] = 0
    return tokens, mask, np.maximum(np.cumsum(mask, axis=1) - 1, 0)


def _hf_logits(model: PreTrainedModel, tokens: np.ndarray, mask: np.ndarray,
               positions: np.ndarray | None) -> np.ndarray:
    import torch
    extra = {} if positions is None else {"position_ids": torch.from_numpy(positions)}
    with torch.no_grad():
        return model(input_ids=torch.from_numpy(tokens), attention_mask=torch.from_numpy(mask),
                     **extra).logits.numpy()


def _compare(model: PreTrainedModel, path: Path, dtype: type, tolerance: dict[str, float],
             left: bool = False) -> None:
    tokens, mask, positions = _inputs(left)
    want = _hf_logits(model, tokens, mask, positions)
    spec = spec_from_config_dir(path)
    got = forward(spec, load_weights(path, spec, dtype=dtype),
                  ModelInput(tokens, attention_mask=mask, positions=positions)).logits
    assert got.dtype == np.dtype(dtype)
    real = mask.astype(bool)  # padded positions are unspecified
    np.testing.assert_allclose(got[real], want[real], **tolerance)


def test_the_cases_switch_their_variants_on(saved: tuple[PreTrainedModel, Path]) -> None:
    spec = spec_from_config_dir(saved[1])
    assert spec.kv_heads < spec.n_heads and spec.sliding_window is not None
    assert spec.sliding_window < LENGTH
    if spec.tie_embeddings:
        assert spec.rotary_width == 12 < spec.head_dim and spec.kv_heads == 1
    if spec.rope_scaling is not None:
        assert spec.rope_scaling.type == "longrope"
        assert spec.rope_scaling.original_max_seq_len == ORIGINAL < LENGTH


def test_float32_logits_match_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    _compare(*saved, np.float32, F32)


def test_left_padded_batch_matches_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    _compare(*saved, np.float32, F32, left=True)


def _rope_f64(self: torch.nn.Module, x: torch.Tensor, position_ids: torch.Tensor) -> tuple:
    """transformers' Phi-3 RoPE table (plain or LongRoPE) evaluated in float64."""
    import torch
    config, params = self.config, self.config.rope_parameters
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    dim = int(head_dim * params.get("partial_rotary_factor", 1.0))
    inv_freq = params["rope_theta"] ** -(torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    factor = 1.0
    if params["rope_type"] == "longrope":
        original = params["original_max_position_embeddings"]
        key = "long_factor" if int(position_ids.max()) + 1 > original else "short_factor"
        inv_freq = inv_freq / torch.tensor(params[key], dtype=torch.float64)
        ratio = config.max_position_embeddings / original
        factor = float(np.sqrt(1 + np.log(ratio) / np.log(original)))
    angles = position_ids[..., None].double() * inv_freq
    angles = torch.cat((angles, angles), dim=-1)
    return (angles.cos() * factor).to(x.dtype), (angles.sin() * factor).to(x.dtype)


def test_float64_logits_match_transformers(saved: tuple[PreTrainedModel, Path],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers.models.phi3 import modeling_phi3 as phi3
    model, path = saved
    monkeypatch.setattr(phi3.Phi3RMSNorm, "forward", _rms_norm_f64)
    monkeypatch.setattr(phi3.Phi3RotaryEmbedding, "forward", _rope_f64)
    model.double().set_attn_implementation("sdpa")  # eager's float64 masks overflow to NaN
    try:
        _compare(model, path, np.float64, F64)
    finally:
        model.float().set_attn_implementation("eager")


def test_parameter_count_matches_transformers(saved: tuple[PreTrainedModel, Path]) -> None:
    assert_counts_match(*saved)


def test_loaded_checkpoints_are_laid_out_for_decoding(saved: tuple[PreTrainedModel, Path]) -> None:
    """The split qkv_proj and gate_up_proj are fused again for decode steps (one product each)."""
    path = saved[1]
    spec = spec_from_config_dir(path)
    for block in load_weights(path, spec).decoder.blocks:
        assert fused_projection(block.attn, *FUSED_QKV) is not None
        assert fused_projection(block.ffn, *FUSED_GATE_UP) is not None


@pytest.mark.parametrize("name", list(CASES))
def test_greedy_tokens_match_transformers(name: str, tmp_path: Path) -> None:
    from transformers import Phi3ForCausalLM
    _build(name, tmp_path, std=0.2)
    fresh = Phi3ForCausalLM.from_pretrained(tmp_path, attn_implementation="eager").eval()
    expected = [hf_greedy(fresh, p, NEW_TOKENS) for p in PROMPTS]
    assert [tfcli_greedy(tmp_path, [p], NEW_TOKENS)[0] for p in PROMPTS] == expected
    assert tfcli_greedy(tmp_path, PROMPTS, NEW_TOKENS) == expected  # one left-padded batch
    assert tfcli_greedy(tmp_path, PROMPTS[:1], NEW_TOKENS, use_cache=False) == expected[:1]


@pytest.mark.parametrize("name", ["longrope", "phi4-mini"])
def test_greedy_tokens_match_across_the_original_context(name: str, tmp_path: Path) -> None:
    """A 10-token prompt and 12 new tokens: the long factors take over at position 16."""
    from transformers import Phi3ForCausalLM
    _build(name, tmp_path, std=0.2)
    fresh = Phi3ForCausalLM.from_pretrained(tmp_path, attn_implementation="eager").eval()
    prompt = PROMPTS[0][:10]
    expected = hf_greedy(fresh, prompt, NEW_TOKENS)
    assert tfcli_greedy(tmp_path, [prompt], NEW_TOKENS) == [expected]
    assert tfcli_greedy(tmp_path, [prompt], NEW_TOKENS, use_cache=False) == [expected]


@pytest.mark.parametrize("prompt", [PROMPTS[1], PROMPTS[1][:6]], ids=["past", "crossing"])
def test_check_cache_passes(saved: tuple[PreTrainedModel, Path], invoke,  # noqa: ANN001
                            prompt: list[int]) -> None:
    result = invoke("generate", str(saved[1]), "--tokens", ",".join(map(str, prompt)),
                    "--max-new-tokens", "16", "--check-cache", "-f", "json")
    assert result.exit_code == 0, result.output
    check = json.loads(result.stdout)["check"]
    assert check["ok"] and check["identical_tokens"], check
