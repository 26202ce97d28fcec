"""What `params` names on the published configs and bundled specs (tests/parity/totals_table.py
checks their totals): the arrays each wiring adds, their shapes, and the one-block and
position-table cases whose counts a total alone would not explain."""

from __future__ import annotations

import pytest

from tests.parity.encoder_configs import ALBERT_BASE_V2, ELECTRA_BASE_DISCRIMINATOR, ROBERTA_BASE
from tests.parity.published_configs import LLAMA_3_8B, PHI3, WIRE
from tfcli.analysis.params_report import build_params_report
from tfcli.checkpoints import spec_from_config
from tfcli.spec.counts import POSITION, components, kv_cache_bytes, total_parameters
from tfcli.sources import load_spec
from tfcli.spec.model import Spec


def _spec(config: dict[str, object], name: str) -> Spec:
    return spec_from_config(config | {"architectures": [name]}, "x")


def test_bart_each_stack_counts_its_own_position_table_of_1026_rows() -> None:
    shapes = {c.path: (c.shape, c.count) for c in components(load_spec("bart-base"))}
    for stack in ("encoder", "decoder"):
        assert shapes[f"{stack}.position_embedding"] == ((1026, 768), 1026 * 768)
        assert shapes[f"{stack}.embedding_norm.scale"] == ((768,), 768)
    assert shapes["final_logits_bias"] == ((1, 50265), 0)  # a buffer
    assert "position_embedding" not in shapes and "embedding_norm.scale" not in shapes


def test_deberta_v3_base_relative_table_is_2_x_256_rows_normed_and_no_position_table() -> None:
    spec = load_spec("deberta-v3-base")
    shapes = {c.path: c.shape for c in components(spec)}
    assert shapes["encoder.relative_embedding"] == (512, 768)
    assert shapes["encoder.relative_embedding_norm.scale"] == (768,)
    assert "position_embedding" not in shapes and "token_type_embedding" not in shapes
    assert not any(".wpos_" in path for path in shapes)  # share_att_key: no own projections
    assert spec.scale == (64 * 3) ** -0.5


def test_electra_base_is_bert_base_less_its_pooler() -> None:
    bert = total_parameters(load_spec("bert-base"))  # BertModel with its pooler: 109,482,240
    assert bert - 768 * 768 - 768 == 108_891_648  # ElectraModel's count
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


def test_modernbert_published_recipe_reads_as_documented() -> None:
    spec = load_spec("modernbert-base")
    assert spec.layer_kinds[:6] == ("global", "local", "local") * 2
    assert spec.local_layers == 14 and spec.sliding_window == 65  # |i - j| <= 128 // 2
    assert (spec.rope_theta, spec.rope_local_theta) == (160000.0, 10000.0)
    assert (spec.head, spec.head_bias, spec.lm_head_bias, spec.tie_embeddings) == (
        "masked_lm", False, True, True)


def test_gemma_params_name_the_new_components() -> None:
    """Gemma 2 / 3: four norms per block (sandwich); Gemma 3: q/k norm weights of d_head."""
    gemma2 = {c.path: c.shape for c in components(load_spec("gemma-2-9b"))}
    for norm in ("attn_norm", "attn_post_norm", "ffn_norm", "ffn_post_norm"):
        assert gemma2[f"decoder.blocks.*.{norm}.scale"] == (3584,)
    gemma3 = {c.path: c.shape for c in components(load_spec("gemma-3-1b"))}
    assert gemma3["decoder.blocks.*.attn.q_norm.scale"] == (256,)
    assert gemma3["decoder.blocks.*.attn.k_norm.scale"] == (256,)
    gemma1 = {c.path for c in components(load_spec("gemma-2b"))}
    assert "decoder.blocks.*.attn_post_norm.scale" not in gemma1


def test_gemma_2_9b_hybrid_kv_cache_at_8192_tokens() -> None:
    spec = load_spec("gemma-2-9b")
    kv = build_params_report(spec, context=8192).kv_cache
    per_layer_token = 2 * 8 * 256 * 4  # K and V of 8 heads of 256, float32
    assert (kv.window, kv.local_layers, kv.layers) == (4096, 21, 42)
    assert kv.window_bytes == 21 * 4096 * per_layer_token + 21 * 8192 * per_layer_token
    assert kv.total_bytes == kv_cache_bytes(spec, 8192) == 42 * 8192 * per_layer_token
    # Gemma 3 1B at its full 32,768 tokens: 22 local layers of 512 tokens, 4 global
    gemma3 = build_params_report(load_spec("gemma-3-1b")).kv_cache
    assert (gemma3.local_layers, gemma3.layers, gemma3.context) == (22, 26, 32768)
    assert gemma3.window_bytes == (22 * 512 + 4 * 32768) * 2 * 256 * 4


def test_qwen_params_name_the_new_components() -> None:
    """Qwen2.5: q/k/v biases and no o bias; Qwen3: q/k norm weights of d_head, no biases."""
    qwen2 = {c.path: c.shape for c in components(load_spec("qwen2.5-7b"))}
    assert qwen2["decoder.blocks.*.attn.bq"] == (3584,)
    assert qwen2["decoder.blocks.*.attn.bk"] == qwen2["decoder.blocks.*.attn.bv"] == (512,)
    assert "decoder.blocks.*.attn.bo" not in qwen2
    qwen3 = {c.path: c.shape for c in components(load_spec("qwen3-8b"))}
    assert qwen3["decoder.blocks.*.attn.q_norm.scale"] == (128,)
    assert qwen3["decoder.blocks.*.attn.k_norm.scale"] == (128,)
    assert not [p for p in qwen3 if p.split(".")[-1] in ("bq", "bk", "bv", "bo")]


def test_params_name_the_components_of_each_parallel_wiring() -> None:
    """Pythia: two norms per block and biases everywhere; GPT-J: one norm, the head's bias."""
    pythia = {c.path: c.shape for c in components(load_spec("pythia-1.4b"))}
    assert pythia["decoder.blocks.*.attn_norm.scale"] == pythia["decoder.blocks.*.ffn_norm.scale"]
    assert pythia["decoder.blocks.*.attn.bq"] == (2048,)
    gptj = {c.path: c.shape for c in components(load_spec("gpt-j-6b"))}
    assert "decoder.blocks.*.ffn_norm.scale" not in gptj
    assert gptj["lm_head_bias"] == (50400,)
    assert not [p for p in gptj if p.split(".")[-1] in ("bq", "bk", "bv", "bo")]


def test_olmo2_reads_its_wiring_and_names_the_new_components() -> None:
    spec = load_spec("olmo-2-7b")
    assert spec.norm_placement == "sublayer_post" and spec.qk_norm == "full"
    assert not spec.attention_bias and not spec.ffn_bias and spec.final_norm
    shapes = {c.path: c.shape for c in components(spec)}
    for path in ("attn_post_norm.scale", "ffn_post_norm.scale", "attn.q_norm.scale",
                 "attn.k_norm.scale"):
        assert shapes[f"decoder.blocks.*.{path}"] == (4096,)
    assert "decoder.blocks.*.attn_norm.scale" not in shapes
    assert "decoder.blocks.*.ffn_norm.scale" not in shapes


@pytest.mark.parametrize(("name", "wiring", "kv_heads", "norms"), [
    ("Falcon-7B", "one_norm", 1, ("attn_norm",)),
    ("Falcon-40B", "two_norms", 8, ("attn_norm", "ffn_norm")),
    ("Falcon-11B", "one_norm", 8, ("attn_norm",)),
    ("Falcon-sequential", "off", 32, ("attn_norm", "ffn_norm")),
])
def test_falcon_reads_its_wiring(name: str, wiring: str, kv_heads: int,
                                 norms: tuple[str, ...]) -> None:
    spec = spec_from_config(WIRE[name], source=name)
    assert spec.parallel_residual == wiring and spec.kv_heads == kv_heads
    assert spec.norm == "layernorm" and spec.activation == "gelu" and spec.positions == "rope"
    found = tuple(c.path.split(".")[3] for c in components(spec)
                  if c.path.startswith("decoder.blocks.*.") and c.path.endswith("norm.scale"))
    assert found == norms


def test_phi3_params_name_the_fused_projections_by_their_engine_paths() -> None:
    """The checkpoint's fused tensors are counted as the engine's separate q, k, v and gate, up
    arrays (Phi-3-medium: k and v a quarter of q's width)."""
    spec = spec_from_config(PHI3["Phi-3-medium-4k-instruct"], source="x")
    shapes = {c.path: c.shape for c in components(spec)}
    assert shapes["decoder.blocks.*.attn.wq"] == (5120, 5120)
    assert shapes["decoder.blocks.*.attn.wk"] == shapes["decoder.blocks.*.attn.wv"] == (5120, 1280)
    assert shapes["decoder.blocks.*.ffn.w_gate"] == shapes["decoder.blocks.*.ffn.w_up"] == (5120, 17920)
    assert not [p for p in shapes if p.split(".")[-1] in ("bq", "bk", "bv", "bo")]


def test_the_reward_model_has_no_lm_head_and_one_score_row() -> None:
    config = LLAMA_3_8B | {"architectures": ["LlamaForSequenceClassification"], "num_labels": 1}
    spec = spec_from_config(config, "x")
    head = [(c.name, c.shape, c.count) for c in components(spec) if c.group == "head"]
    assert head == [("head.classifier.weight", (4096, 1), 4096)]
    # the causal LM it was fine-tuned from: its (4096, 128256) head replaced by that row
    lm = total_parameters(spec_from_config(LLAMA_3_8B, "x"))
    assert lm == 8_030_261_248 == 7_504_928_768 - 4096 + 4096 * 128256


def test_umt5_counts_a_relative_table_per_block() -> None:
    """16 blocks x (32 buckets x 6 heads) in UMT5-small; mT5-small's 2 stacks x 1."""
    def tables(name: str) -> int:
        return sum(c.count for c in components(load_spec(name)) if c.group == POSITION)
    assert (tables("umt5-small"), tables("mt5-small")) == (16 * 32 * 6, 2 * 32 * 6)
