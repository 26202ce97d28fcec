"""One name per weight: the params components, the engine's Weights paths, the checkpoint name
tables and the trace rows name each tensor by the same path (`decoder.blocks.3.attn.wq`; a
params component writes every block / expert index as `*`).

Compared path by path and shape by shape, never by totals: a component counted under the wrong
name, or a weight with the right size and the wrong shape, fails here. Bundled specs are scaled
down (2 blocks, d_model 32, a 64-token vocabulary) keeping every switch, hence the same
component list; the test checks that too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.engine.engine_specs import VARIANTS, make_spec
from tests.checkpoints.test_configs import GPT2_CONFIG, D, gpt2_tensors, write_model
from tfcli.analysis.params_report import build_params_report
from tfcli.analysis.trace.build import MAX_LISTED_BLOCKS, build_trace
from tfcli.analysis.trace.rows import expand_rows
from tfcli.checkpoints import load_weights, spec_from_config_dir
from tfcli.checkpoints.families import FAMILIES, TABLES
from tfcli.engine.init import init_weights
from tfcli.engine.weights import named_arrays
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import EVERY, Component, block_indices, components
from tfcli.spec.model import Spec
from tfcli.spec.load import bundled_spec_names
from tfcli.sources import load_spec

BUNDLED = bundled_spec_names()
# the checkpoint family (names.TABLES key) of each bundled spec that has one
FAMILY_TABLES = {"gpt2": "gpt2", "gpt2-medium": "gpt2", "bert-base": "bert", "llama-2-7b": "llama",
                 "llama-2-70b": "llama", "llama-3-8b": "llama", "llama-3.1-8b": "llama",
                 "llama-3.2-1b": "llama", "mistral-7b": "mistral",
                 "mixtral-8x7b": "mixtral", "t5-small": "t5",
                 "mt5-small": "mt5", "umt5-small": "umt5", "bart-base": "bart",
                 "pythia-1.4b": "gpt_neox", "gpt-j-6b": "gptj", "phi-2": "phi",
                 "stablelm-2-1.6b": "stablelm",
                 "gemma-2b": "gemma", "gemma-2-9b": "gemma2", "gemma-3-1b": "gemma3_text",
                 "qwen2.5-7b": "qwen2", "qwen3-8b": "qwen3", "olmo-2-7b": "olmo2", "granite-3.3-8b": "granite", "granite-3.1-3b-a800m": "granitemoe",
                 "gpt-oss-20b": "gpt_oss", "olmoe-1b-7b": "olmoe", "llama-4-scout": "llama4_text",
                 "ernie-4.5-21b-a3b": "ernie4_5_moe",
                 "starcoder2-3b": "starcoder2", "command-r7b": "cohere2",
                 "glm-4-9b": "glm", "glm-4.5-air": "glm4_moe",
                 "qwen1.5-moe-a2.7b": "qwen2_moe", "qwen3-30b-a3b": "qwen3_moe",
                 "falcon-7b": "falcon", "phi-3-mini": "phi3",
                 "roberta-base": "roberta", "xlm-roberta-large": "xlm-roberta",
                 "distilbert-base-uncased": "distilbert",
                 "electra-small-discriminator": "electra", "albert-base-v2": "albert",
                 "modernbert-base": "modernbert",
                 "deberta-v3-base": "deberta-v2",
                 "deepseek-v2-lite": "deepseek_v2", "deepseek-v3": "deepseek_v3"}


def small(spec: Spec) -> Spec:
    """`spec` at test size with the same switches: 2 blocks per stack, d_model 32, 4 heads
    (grouped-query stays grouped, MQA stays MQA), a 64-token vocabulary."""
    changes: dict[str, object] = dict(vocab_size=64, max_seq_len=16, d_model=32, n_heads=4,
                                      d_ff=48, n_layers=2)
    if spec.latent_attention:  # MLA derives d_head and rotary_dim from its own widths
        changes |= {"kv_lora_rank": 12, "qk_nope_head_dim": 6, "qk_rope_head_dim": 4,
                    "v_head_dim": 5}
        changes |= {"q_lora_rank": 20} if spec.q_lora_rank is not None else {}
    else:
        if spec.kv_heads != spec.n_heads:
            changes["n_kv_heads"] = 1 if spec.kv_heads == 1 else 2
        if spec.d_head is not None and spec.d_head != spec.d_model // spec.n_heads:
            changes["d_head"] = 6  # an explicit width that d_model / n_heads would not give
        if spec.positions == "rope" and spec.rotary_width < spec.head_dim:
            changes["rotary_dim"] = 2  # partial rotary stays partial
    if spec.sliding_window is not None:
        changes["sliding_window"] = 4
    if spec.position_buckets is not None:  # DeBERTa's 256 log buckets: 4, within 16 positions
        changes["position_buckets"] = 4
    if spec.family == "encoder-decoder":
        changes |= {"n_encoder_layers": 2, "n_decoder_layers": 3}  # unequal: stacks kept apart
    if spec.n_experts > 8:  # Qwen MoE's 60 / 128 experts: 4, two routed (DeepSeek's groups: 2)
        changes |= {"n_experts": 4, "experts_per_token": 2}
        changes |= {"expert_groups": 2, "topk_groups": 1} if spec.group_limited else {}
    if spec.dense_layers:  # DeepSeek's first_k_dense_replace: block 0 dense
        changes["dense_layers"] = [0]
    if spec.nope_layers:  # Command R7B's global layers: block 1 without RoPE
        changes["nope_layers"] = [1]
    if spec.n_experts:  # experts and shared experts keep widths of their own
        changes |= {"expert_d_ff": 16} if spec.expert_d_ff is not None else {}
        changes |= {"shared_expert_d_ff": 24} if spec.shared_expert_d_ff is not None else {}
    return spec.replace(**changes)


def _cases() -> list[tuple[str, Spec]]:
    bundled = [(name, small(load_spec(name))) for name in BUNDLED]
    return bundled + [(f"engine:{v}", make_spec(v)) for v in VARIANTS]


CASES = _cases()
IDS = [name for name, _ in CASES]


def _layers(spec: Spec, path: str) -> int:
    return spec.encoder_layers if path.startswith("encoder.") else spec.decoder_layers


def concrete(pattern: str, spec: Spec) -> list[str]:
    """`decoder.blocks.*.ffn.experts.*.w_up` -> every block's every expert's path."""
    if f".{EVERY}" not in pattern:
        return [pattern]
    head, tail = pattern.split(f".{EVERY}", 1)
    indices = range(spec.n_experts) if head.endswith(".experts") else block_indices(spec, pattern)
    return [p for i in indices for p in concrete(f"{head}.{i}{tail}", spec)]


def engine_shapes(spec: Spec) -> dict[str, tuple[int, ...]]:
    """Weights path -> shape of every array init_weights allocates for `spec`."""
    return {path: tuple(a.shape) for path, a in named_arrays(init_weights(spec, seed=0))}


def component_shapes(comps: list[Component], spec: Spec) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for c in comps:
        if c.tied:
            continue
        paths = concrete(c.path, spec)
        assert len(paths) == c.repeat, f"{c.name}: {c.path} names {len(paths)} arrays, repeat {c.repeat}"
        for path in paths:
            assert path not in out, f"{path} counted twice"
            out[path] = c.shape
    return out


# --- params components == the engine's arrays ----------------------------------------------------


@pytest.mark.parametrize(("name", "spec"), CASES, ids=IDS)
def test_params_components_are_the_engine_arrays(name: str, spec: Spec) -> None:
    counted, allocated = component_shapes(components(spec), spec), engine_shapes(spec)
    assert sorted(counted) == sorted(allocated), (
        f"only counted: {sorted(set(counted) - set(allocated))}; "
        f"only allocated: {sorted(set(allocated) - set(counted))}")
    wrong = {p: (counted[p], allocated[p]) for p in counted if counted[p] != allocated[p]}
    assert not wrong, f"(counted, allocated) shapes differ: {wrong}"


# the Weights field each display name stands for: same-shaped arrays (wk and wv, w_up and
# w_gate) swapped between components would pass the comparison above, not this one
FIELDS = {"q.weight": "wq", "k.weight": "wk", "v.weight": "wv", "o.weight": "wo",
          "q.bias": "bq", "k.bias": "bk", "v.bias": "bv", "o.bias": "bo",
          "up.weight": "w_up", "gate.weight": "w_gate", "down.weight": "w_down",
          "up.bias": "b_up", "gate.bias": "b_gate", "down.bias": "b_down",
          "router.weight": "router", "pooler.weight": "pooler_w", "pooler.bias": "pooler_b",
          "lm_head.bias": "lm_head_bias", "router.bias": "router_bias",
          "router.logits_bias": "router_b",
          "q_a.weight": "wq_a", "q_a.bias": "bq_a", "q_b.weight": "wq_b",
          "kv_a.weight": "wkv_a", "kv_a.bias": "bkv_a", "kv_b.weight": "wkv_b",
          "pos_k.weight": "wpos_k", "pos_k.bias": "bpos_k", "pos_q.weight": "wpos_q",
          "pos_q.bias": "bpos_q"}
FIELDS |= {"transform.weight": "head_dense", "transform.bias": "head_dense_bias"}  # masked_lm


@pytest.mark.parametrize(("name", "spec"), CASES, ids=IDS)
def test_each_component_names_its_own_field(name: str, spec: Spec) -> None:
    for c in components(spec):
        suffix = ".".join(c.name.split(".")[-2:])
        field = FIELDS.get(suffix, c.name.split(".")[-1])  # scale, bias of a norm: the same word
        if c.name.startswith("embed.") and c.group == "embedding":
            field = {"token": "token_embedding", "position": "position_embedding",
                     "token_type": "token_type_embedding", "project.weight": "embedding_project",
                     "project.bias": "embedding_project_bias"}[c.name.split(".", 1)[1]]
        if c.tied:
            field = "token_embedding"
        assert c.path.split(".")[-1] == field, (c.name, c.path)


@pytest.mark.parametrize(("name", "spec"), CASES, ids=IDS)
def test_a_tied_component_names_the_array_it_shares(name: str, spec: Spec) -> None:
    allocated = engine_shapes(spec)
    for c in components(spec):
        if c.tied:  # the head reads the embedding transposed: (d, V) of a (V, d) table
            assert c.path == "token_embedding" and allocated[c.path] == c.shape[::-1]
            assert "lm_head" not in allocated


@pytest.mark.parametrize("name", BUNDLED)
def test_scaled_down_specs_keep_the_component_list(name: str) -> None:
    full, reduced = load_spec(name), small(load_spec(name))
    def listed(spec: Spec) -> list[tuple[str, str, str, int, bool]]:
        return [(c.name, c.path, c.group, len(c.shape), c.tied) for c in components(spec)]
    assert listed(full) == listed(reduced)


def test_params_json_rows_carry_one_path_per_shape() -> None:
    report = json.loads(json.dumps(build_params_report(small(load_spec("t5-small"))).to_dict()))
    rows = {r["name"]: r for r in report["components"]}
    assert rows["decoder.block.cross_attn.q"]["paths"] == ["decoder.blocks.*.cross_attn.wq"]
    assert rows["embed.token"]["paths"] == ["token_embedding"]
    assert all(len(r["paths"]) == len(r["shapes"]) for r in report["components"])
    gpt2 = build_params_report(load_spec("gpt2")).to_dict()["components"]
    q = next(r for r in gpt2 if r["name"] == "decoder.block.attn.q")
    assert q["paths"] == ["decoder.blocks.*.attn.wq", "decoder.blocks.*.attn.bq"]
    assert q["shapes"] == [[768, 768], [768]]


# --- checkpoint name tables use the same paths --------------------------------------------------


def table_paths(table_key: str, spec: Spec) -> set[str]:
    """Every Weights path the family's rules (those that apply to `spec`) write to."""
    counts = {"i": max(spec.encoder_layers, spec.decoder_layers), "e": max(1, spec.n_experts)}
    out = set()
    for rule in TABLES[table_key].rules:
        if not rule.when(spec):
            continue
        for i in range(counts["i"]):
            for e in range(counts["e"]):
                out |= {p.format(i=i, e=e) for p in rule.ours}
    return out


@pytest.mark.parametrize("name", sorted(FAMILY_TABLES))
def test_checkpoint_tables_fill_every_engine_path(name: str) -> None:
    """Every array the spec has is written by a rule of its family's table, by the same path
    (rules of variants the spec lacks, a bias or a dense FFN, name paths it does not have)."""
    spec = small(load_spec(name))
    allocated = set(engine_shapes(spec))
    assert allocated <= table_paths(FAMILY_TABLES[name], spec), \
        sorted(allocated - table_paths(FAMILY_TABLES[name], spec))


def test_every_checkpoint_family_table_is_checked() -> None:
    """Each family's table is checked on a bundled spec, or is a checked family's own table
    (SmolLM3 reads LLaMA's names: FAMILIES row, no table of its own)."""
    assert set(FAMILY_TABLES) <= set(BUNDLED)
    checked = {id(FAMILIES[kind].table) for kind in FAMILY_TABLES.values()}
    assert {kind for kind, family in FAMILIES.items() if id(family.table) not in checked} == set()


# --- trace rows name the arrays they own --------------------------------------------------------


def _owned_sizes(spec: Spec, rows: list) -> dict[str, int]:
    sizes = {path: int(np.prod(shape)) for path, shape in engine_shapes(spec).items()}
    # a buffer (router_bias) is owned by its row and counted 0, as params counts it
    sizes |= {p: 0 for c in components(spec) if c.buffer for p in concrete(c.path, spec)}
    seen: dict[str, int] = {}
    for row in rows:
        named = [p for w in row.weights for p in concrete(w, spec)]
        for path in named:
            assert path not in seen, f"{path} owned by two rows"
            seen[path] = sizes[path]
        assert row.params == sum(sizes[p] for p in named), (row.path, row.op, row.weights)
    return seen


@pytest.mark.parametrize(("name", "spec"), CASES, ids=IDS)
def test_trace_rows_own_exactly_the_arrays_they_name(name: str, spec: Spec) -> None:
    lengths = {"src_len": 5, "tgt_len": 4} if spec.family == "encoder-decoder" else {"seq_len": 6}
    rows = expand_rows(build_trace(spec, **lengths).rows)
    assert set(_owned_sizes(spec, rows)) == set(engine_shapes(spec))
    assert all(re.fullmatch(r"[a-z_]+(\.(\d+|\*|[a-z_]+))*", w) for r in rows for w in r.weights)


def test_a_repeated_block_span_names_its_blocks() -> None:
    """Past MAX_LISTED_BLOCKS the trace folds blocks 1..L-1 into one row group; its weight
    paths name the span, and expand_rows gives every block its own paths back."""
    spec = make_spec("llama_gqa").with_layers(MAX_LISTED_BLOCKS + 2)
    report = build_trace(spec, seq_len=4)
    last = MAX_LISTED_BLOCKS + 1
    q = next(r for r in report.rows if r.path == f"decoder.1-{last}.attn" and r.op == "q_proj")
    assert q.weights == (f"decoder.blocks.1-{last}.attn.wq",)
    assert report.at_depth(1).to_dict()["rows"][2]["weight_paths"][0] == \
        f"decoder.blocks.1-{last}.attn_norm.scale"
    assert set(_owned_sizes(spec, expand_rows(report.rows))) == set(engine_shapes(spec))


def test_trace_json_carries_weight_paths() -> None:
    rows = build_trace(load_spec("gpt2"), seq_len=4).to_dict()["rows"]
    by_op = {(r["path"], r["op"]): r for r in rows}
    assert by_op[("decoder.3.attn", "q_proj")]["weight_paths"] == \
        ["decoder.blocks.3.attn.wq", "decoder.blocks.3.attn.bq"]
    assert by_op[("head", "logits")]["weight_paths"] == []  # tied: token_embedding's
    assert by_op[("embed", "token_embedding")]["weight_paths"] == ["token_embedding"]


# --- the loader's messages name both names ------------------------------------------------------


def test_a_missing_tensor_names_the_checkpoint_key_and_the_engine_path(tmp_path: Path) -> None:
    tensors = gpt2_tensors(np.random.default_rng(0))
    del tensors["transformer.h.0.ln_2.bias"]
    path = write_model(tmp_path / "m", GPT2_CONFIG, tensors)
    with pytest.raises(BadInputError) as info:
        load_weights(path, spec_from_config_dir(path))
    assert ("missing tensor(s) transformer.h.0.ln_2.bias (for decoder.blocks.0.ffn_norm.bias)"
            in info.value.message)


def test_a_missing_fused_tensor_names_every_path_it_fills(tmp_path: Path) -> None:
    tensors = gpt2_tensors(np.random.default_rng(0))
    del tensors["transformer.h.0.attn.c_attn.weight"]
    path = write_model(tmp_path / "m", GPT2_CONFIG, tensors)
    with pytest.raises(BadInputError, match=re.escape(
            "transformer.h.0.attn.c_attn.weight (for decoder.blocks.0.attn.wq, "
            "decoder.blocks.0.attn.wk, decoder.blocks.0.attn.wv)")):
        load_weights(path, spec_from_config_dir(path))


def test_an_unexpected_tensor_says_what_tfcli_would_make_of_it(tmp_path: Path) -> None:
    tensors = gpt2_tensors(np.random.default_rng(0))
    tensors["transformer.h.1.ln_1.weight"] = np.ones(D, np.float32)  # a block the spec lacks
    tensors["transformer.h.0.attn.q_norm.weight"] = np.ones(D, np.float32)  # no such weight
    path = write_model(tmp_path / "m", GPT2_CONFIG, tensors)
    with pytest.raises(BadInputError) as info:
        load_weights(path, spec_from_config_dir(path))
    message = info.value.message
    assert "transformer.h.0.attn.q_norm.weight (no tfcli weight)" in message
    assert ("transformer.h.1.ln_1.weight (for decoder.blocks.1.attn_norm.scale, which this spec "
            "does not have)") in message


def test_a_misshaped_tensor_names_the_engine_path(tmp_path: Path) -> None:
    tensors = gpt2_tensors(np.random.default_rng(0))
    tensors["transformer.h.0.mlp.c_fc.weight"] = np.zeros((D, 3 * D), np.float32)
    path = write_model(tmp_path / "m", GPT2_CONFIG, tensors)
    with pytest.raises(BadInputError) as info:
        load_weights(path, spec_from_config_dir(path))
    assert ("'transformer.h.0.mlp.c_fc.weight' has shape [8, 24], expected [8, 32] for the "
            "spec's decoder.blocks.0.ffn.w_up") in info.value.message
