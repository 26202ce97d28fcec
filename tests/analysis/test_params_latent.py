"""`tfcli params` figures for multi-head latent attention and DeepSeek routing: the latent KV
cache beside full multi-head K/V (issue 15, acceptance 3: DeepSeek-V3 at 32,768 tokens in
bfloat16), equal to what engine.cache.KVCache allocates; the router_bias buffer's own row,
outside every count; mixed dense / MoE stacks counted per kind."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tfcli.analysis.params_report import build_params_report
from tfcli.engine.cache import KVCache
from tfcli.spec.counts import ROUTER_BIAS_NOTE, kv_cache_bytes, total_parameters
from tfcli.sources import load_spec

FIXTURE = Path(__file__).parents[1] / "fixtures" / "tiny-mla.yaml"
CONTEXT = 32_768
LATENT = (512 + 64) * 2  # kv_lora_rank + qk_rope_head_dim values, 2 bytes each
EXPANDED = 128 * (192 + 128) * 2  # every head's key (nope 128 + rope 64) and value (128)


def test_deepseek_v3_latent_cache_beside_full_multi_head_kv() -> None:
    kv = build_params_report(load_spec("deepseek-v3"), context=CONTEXT,
                             kv_dtype="bfloat16").kv_cache
    assert (kv.per_layer_token_bytes, kv.expanded_per_layer_token_bytes) == (1_152, 81_920)
    assert (LATENT, EXPANDED) == (1_152, 81_920)
    assert kv.total_bytes == 61 * CONTEXT * 1_152 == 2_302_672_896
    assert kv.expanded_total_bytes == 61 * CONTEXT * 81_920
    assert kv.latent and abs(kv.expanded_ratio - 81_920 / 1_152) < 1e-12


def test_the_engine_allocates_what_the_formula_says() -> None:
    """One layer at 32,768 tokens (37.7 MB; 61 layers would be 2.3 GB): float16 has
    bfloat16's two bytes. The cache does not depend on d_model or the FFN."""
    v3 = load_spec("deepseek-v3")
    for spec in (v3.with_layers(1), v3.replace(d_model=64, d_ff=32).with_layers(1)):
        cache = KVCache(spec, batch=1, max_len=CONTEXT, dtype=np.float16)
        assert cache.nbytes == kv_cache_bytes(spec, CONTEXT, 1, "bfloat16") == CONTEXT * LATENT
        assert (cache.k[0].shape, cache.v[0].shape) == ((1, 1, CONTEXT, 512), (1, 1, CONTEXT, 64))
    assert kv_cache_bytes(load_spec("deepseek-v3"), CONTEXT, 1, "bfloat16") == \
        61 * CONTEXT * LATENT


def test_without_latent_attention_no_expanded_figures() -> None:
    kv = build_params_report(load_spec("mixtral-8x7b")).kv_cache
    assert not kv.latent and kv.expanded_total_bytes is None
    assert kv.per_layer_token_bytes == 2 * 8 * 128 * 4  # K and V of 8 heads of 128, float32


def test_router_bias_has_a_row_of_its_own_outside_every_count() -> None:
    spec = load_spec(str(FIXTURE))
    report = build_params_report(spec)
    rows = {r.name: r for r in report.rows}
    bias, router = rows["decoder.block.router.bias"], rows["decoder.block.router"]
    assert (bias.count, bias.per_block, bias.buffer_values) == (0, 0, 8 * 2)
    assert bias.note == ROUTER_BIAS_NOTE and bias.shapes == ((8,),)
    assert router.shapes == ((32, 8),) and router.count == 2 * 32 * 8
    subtotal = report.block_subtotals["decoder"]
    block_rows = sum(r.count for r in report.rows if r.stack == "decoder")
    assert subtotal.total == block_rows == report.total - 2 * 100 * 32 - 32
    assert report.total == total_parameters(spec) == 53_720


def test_mixed_stack_rows_repeat_over_their_own_blocks() -> None:
    report = build_params_report(load_spec(str(FIXTURE)))  # block 0 dense, blocks 1-2 MoE
    rows = {r.name: r for r in report.rows}
    up, experts = rows["decoder.block.ffn.up"], rows["decoder.block.experts.up"]
    assert (up.kind, up.blocks, up.per_block) == ("dense", 1, 32 * 64)
    assert (experts.kind, experts.blocks, experts.per_block) == ("MoE", 2, 8 * 32 * 16)
    assert rows["decoder.block.attn.kv_b"].kind == ""  # every block
    assert report.block_subtotals["decoder"].per_block is None  # dense and MoE blocks differ
    assert build_params_report(load_spec("mixtral-8x7b")).block_subtotals["decoder"].per_block


def test_active_per_token_says_what_it_holds() -> None:
    report = build_params_report(load_spec("deepseek-v3"))
    assert report.active_detail == ("MoE: 8 of 256 routed experts per MoE block, the shared "
                                    "experts, the router, the dense blocks, attention and "
                                    "embeddings")
    per_expert = 3 * 7168 * 2048
    assert report.active == report.total - (256 - 8) * per_expert * 58
    assert build_params_report(load_spec("gpt2")).active_detail == "dense: all"
