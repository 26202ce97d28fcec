"""Exact parameter totals for every bundled spec, and the lesson's per-block figures."""

from __future__ import annotations

import tracemalloc

import pytest

from tfcli.core.errors import BadInputError
from tfcli.spec.counts import components, kv_cache_bytes, total_parameters
from tfcli.analysis.params_report import build_params_report
from tfcli.spec.model import Spec
from tfcli.spec.load import bundled_spec_names
from tfcli.sources import load_spec

# Reference totals (tied weights counted once). Sources: each spec file's `source`; the Hugging
# Face meta-device counts in tests/parity confirm them independently.
REFERENCE_TOTALS = {
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
    "bert-base": 109_482_240,
    # the encoder bodies (RobertaModel, ...): transformers' meta-device counts in
    # tests/parity/test_totals.py (rows in tests/parity/totals_table.py)
    "roberta-base": 124_645_632,
    "xlm-roberta-large": 559_890_432,
    "distilbert-base-uncased": 66_362_880,
    "electra-small-discriminator": 13_483_008,
    "albert-base-v2": 11_683_584,  # one shared block, counted once
    "modernbert-base": 149_655_232,  # ModernBertForMaskedLM (tests/parity/test_totals.py)
    "deberta-v3-base": 183_831_552,  # DebertaV2Model: tests/parity/test_totals.py
    "llama-2-7b": 6_738_415_616,
    "llama-2-70b": 68_976_648_192,
    "llama-3-8b": 8_030_261_248,
    "llama-3.1-8b": 8_030_261_248,
    "llama-3.2-1b": 1_235_814_400,
    "mistral-7b": 7_241_732_096,
    "mixtral-8x7b": 46_702_792_704,
    "qwen2.5-7b": 7_615_616_512,
    "qwen3-8b": 8_190_735_360,
    "granite-3.3-8b": 8_170_864_640,  # GraniteForCausalLM: tests/parity/test_totals.py
    "granite-3.1-3b-a800m": 3_298_793_472,  # GraniteMoeForCausalLM: tests/parity/test_totals.py
    "glm-4.5-air": 106_852_245_504,  # Glm4MoeForCausalLM: tests/parity/test_totals.py
    "glm-4-9b": 9_399_951_360,  # GlmForCausalLM: tests/parity/test_totals.py
    "command-r7b": 8_028_033_024,  # Cohere2ForCausalLM: tests/parity/test_totals.py
    "starcoder2-3b": 3_030_371_328,  # Starcoder2ForCausalLM: tests/parity/test_totals.py
    "smollm3-3b": 3_075_098_624,  # SmolLM3ForCausalLM: tests/parity/test_totals.py
    "olmoe-1b-7b": 6_919_161_856,  # OlmoeForCausalLM: tests/parity/test_totals.py
    "gpt-oss-20b": 20_914_757_184,  # GptOssForCausalLM: tests/parity/test_totals.py
    "gpt-oss-120b": 116_829_156_672,
    "llama-4-scout": 107_769_861_120,  # Llama4ForCausalLM: tests/parity/test_totals.py
    "ernie-4.5-21b-a3b": 21_825_437_888,  # Ernie4_5_MoeForCausalLM: tests/parity/test_totals.py
    "qwen1.5-moe-a2.7b": 14_315_784_192,
    "qwen3-30b-a3b": 30_532_122_624,
    "deepseek-v2-lite": 15_706_484_224,
    "deepseek-v3": 671_026_404_352,  # 61 blocks: the multi-token-prediction layer not counted
    "gemma-2b": 2_506_172_416,
    "gemma-2-9b": 9_241_705_984,
    "gemma-3-1b": 999_885_952,
    "pythia-1.4b": 1_414_647_808,
    "gpt-j-6b": 6_050_882_784,
    "phi-2": 2_779_683_840,
    "stablelm-2-1.6b": 1_644_515_328,
    "olmo-2-7b": 7_298_617_344,
    "falcon-7b": 6_921_720_704,
    "phi-3-mini": 3_821_079_552,
    "t5-small": 60_506_624,
    "mt5-small": 300_176_768,  # untied head, as the published checkpoint loads
    "umt5-small": 306_601_984,  # one relative-position table per block
    "bart-base": 139_420_416,  # tied head; final_logits_bias a buffer, counted 0
    "transformer-base": 63_082_496,  # derivation in the spec's comment
    "lesson-tiny": 4 * 3_152 + 256 * 16,  # 4 blocks + byte-level token embedding (tied head)
}


def test_every_bundled_spec_has_a_reference_total() -> None:
    assert sorted(REFERENCE_TOTALS) == bundled_spec_names()


@pytest.mark.parametrize("name", sorted(REFERENCE_TOTALS))
def test_exact_total(name: str) -> None:
    assert total_parameters(load_spec(name)) == REFERENCE_TOTALS[name]


def test_lesson_tiny_per_block_split() -> None:
    report = build_params_report(load_spec("lesson-tiny"))
    per_block = report.block_subtotals["decoder"]
    assert per_block == (3_152, 4, 4 * 3_152)
    ffn = sum(r.per_block for r in report.rows if r.stack and r.group == "ffn")
    attention = sum(r.per_block for r in report.rows if r.stack and r.group == "attention")
    assert (ffn, attention) == (2_128, 1_024)


def test_mixtral_active_parameters() -> None:
    report = build_params_report(load_spec("mixtral-8x7b"))
    per_expert = 3 * 4096 * 14336
    assert report.active == report.total - 6 * per_expert * 32 == 12_879_925_248


def test_tied_head_counted_once_untied_counted() -> None:
    tied = load_spec("gpt2")
    untied = tied.replace(tie_embeddings=False)
    assert total_parameters(untied) - total_parameters(tied) == 50257 * 768
    head = [c for c in components(tied) if c.name == "lm_head"][0]
    assert head.tied and head.count == 0


def test_gqa_shrinks_k_and_v_only() -> None:
    spec = load_spec("llama-3-8b")
    mha = spec.replace(n_kv_heads=32)
    assert total_parameters(mha) - total_parameters(spec) == 2 * 32 * 4096 * (4096 - 1024)


def test_twelve_l_d_squared_estimate_is_close_for_large_dense_models() -> None:
    report = build_params_report(load_spec("llama-2-7b"))
    # 12·L·d² ignores the SwiGLU width (3 x 11008 vs 2 x 4d) and the embeddings.
    assert report.estimate_12ld2 == 12 * 32 * 4096**2
    assert abs(report.estimate_rel_error) < 0.05


def test_kv_cache_bytes_llama2() -> None:
    spec = load_spec("llama-2-7b")
    # 2 (K and V) x 32 layers x 4096 x 2 bytes = 512 KiB per token in bfloat16.
    assert kv_cache_bytes(spec, context=4096, batch=1, dtype="bfloat16") == 4096 * 524_288
    report = build_params_report(spec, context=1000, batch=3, kv_dtype="int8")
    assert report.kv_cache.total_bytes == 3 * 1000 * 2 * 32 * 4096


def test_sliding_window_kv_cache_holds_only_the_window() -> None:
    spec = load_spec("mistral-7b")  # 8 KV heads x 128 x 32 layers x 2 (K, V) x 4 bytes
    per_token = 2 * 8 * 128 * 32 * 4
    kv = build_params_report(spec, context=32768, batch=2).kv_cache
    assert (kv.total_bytes, kv.window, kv.window_bytes) == \
        (2 * 32768 * per_token, 4096, 2 * 4096 * per_token)
    short = build_params_report(spec, context=4096).kv_cache  # the window hides nothing yet
    assert (short.total_bytes, short.window, short.window_bytes) == (4096 * per_token, None, None)
    assert build_params_report(load_spec("llama-2-7b")).kv_cache.window_bytes is None


def test_encoder_has_no_kv_cache() -> None:
    assert build_params_report(load_spec("bert-base")).kv_cache.total_bytes == 0


def test_memory_by_dtype() -> None:
    report = build_params_report(load_spec("gpt2"))
    assert report.memory_bytes == {
        "float32": 4 * 124_439_808, "bfloat16": 2 * 124_439_808,
        "int8": 124_439_808, "int4": 62_219_904,
    }


def test_int4_memory_rounds_up_to_whole_bytes() -> None:
    spec = Spec(name="odd", family="decoder", vocab_size=7, max_seq_len=8, d_model=3,
                n_heads=1, d_ff=5, n_layers=1)
    report = build_params_report(spec)
    assert report.total % 2 == 1
    assert report.memory_bytes["int4"] == (report.total + 1) // 2


def test_a_context_beyond_max_seq_len_is_noted() -> None:
    spec = load_spec("llama-2-7b")  # RoPE: a longer cache is a what-if, noted
    assert not any("beyond" in n for n in build_params_report(spec).notes)
    notes = build_params_report(spec, context=8192).notes
    assert any("8,192 tokens, beyond llama-2-7b's max_seq_len 4,096" in n for n in notes)


def test_a_context_past_learned_positions_is_refused() -> None:
    """gpt2 has no position row past 1,024: refused as trace / perf / memory refuse it."""
    with pytest.raises(BadInputError, match="--seq-len 1025 exceeds max_seq_len 1024 of gpt2"):
        build_params_report(load_spec("gpt2"), context=1025)


def test_counting_is_analytic_for_a_trillion_parameters() -> None:
    spec = Spec(name="huge", family="decoder", vocab_size=256_000, max_seq_len=8192,
                d_model=32_768, n_heads=256, n_layers=120, d_ff=131_072, activation="swiglu",
                norm="rmsnorm", positions="rope", bias=False, tie_embeddings=False)
    tracemalloc.start()
    report = build_params_report(spec)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert report.total > 10**12
    assert peak < 5_000_000  # bytes: nothing the size of a weight array was allocated
