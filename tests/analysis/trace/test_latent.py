"""Trace rows for multi-head latent attention (MLA) and DeepSeek routing: the engine's probe
order, shapes and FLOPs by hand formula, ownership summing to the exact total, the convention
text, --execute against a real forward pass; and the listing of deep stacks whose first blocks
are dense (DeepSeek's first_k_dense_replace)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfcli.analysis.trace import build as trace
from tfcli.analysis.params_report import build_params_report
from tfcli.analysis.trace.build import NORM_FLOPS, SOFTMAX_FLOPS, build_trace
from tfcli.analysis.trace.check import execute_bytes, execute_check, layers_that_fit
from tfcli.analysis.trace.rows import expand_rows
from tfcli.core.errors import BadInputError
from tfcli.spec.counts import total_parameters
from tfcli.sources import load_spec

FIXTURE = Path(__file__).parents[2] / "fixtures" / "tiny-mla.yaml"
# tiny-mla: d=32, H=4, q_lora 24, r=16, dr=4, dn=8, dv=6 (qk = 12), 8 experts of 16, top 2
D, H, QL, R, DR, DN, DV = 32, 4, 24, 16, 4, 8, 6
QK = DN + DR


def _mla():
    return load_spec(str(FIXTURE))


def _attn_rows(spec, block: int = 1, batch: int = 2, seq: int = 5):
    report = build_trace(spec, batch=batch, seq_len=seq)
    return [r for r in report.rows if r.path == f"decoder.{block}.attn"]


def test_latent_rows_follow_the_engine_with_hand_counted_flops() -> None:
    B, T = 2, 5
    rows = _attn_rows(_mla(), batch=B, seq=T)
    expected = [  # (op, output, flops, params), the order latent_attention probes them
        ("norm", (B, T, D), NORM_FLOPS * B * T * D, D),
        ("q_a_proj", (B, T, QL), 2 * B * T * D * QL, D * QL),
        ("q_a_norm", (B, T, QL), NORM_FLOPS * B * T * QL, QL),
        ("q_b_proj", (B, T, H, QK), 2 * B * T * QL * H * QK, QL * H * QK),
        ("kv_a_proj", (B, T, R + DR), 2 * B * T * D * (R + DR), D * (R + DR)),
        ("kv_a_norm", (B, T, R), NORM_FLOPS * B * T * R, R),
        # every one of the S = T cached latents expanded: 2 B S r H (dn + dv)
        ("kv_b_proj", (B, H, T, DN + DV), 2 * B * T * R * H * (DN + DV), R * H * (DN + DV)),
        ("scores", (B, H, T, T), 2 * B * H * T * T * QK, 0),
        ("softmax", (B, H, T, T), SOFTMAX_FLOPS * B * H * T * T, 0),
        ("weighted_sum", (B, H, T, DV), 2 * B * H * T * T * DV, 0),
        ("out_proj", (B, T, D), 2 * B * T * H * DV * D, H * DV * D),
        ("residual_add", (B, T, D), B * T * D, 0),
    ]
    assert [(r.op, r.output, r.flops, r.params) for r in rows] == expected
    by_op = {r.op: r for r in rows}
    assert by_op["scores"].inputs == ((B, H, T, QK), (B, H, T, QK))
    assert by_op["weighted_sum"].inputs == ((B, H, T, T), (B, H, T, DV))
    assert by_op["kv_b_proj"].weights == ("decoder.blocks.1.attn.wkv_b",)
    assert by_op["q_a_norm"].weights == ("decoder.blocks.1.attn.q_a_norm.scale",)


def test_without_q_lora_one_query_projection_and_biases_owned() -> None:
    spec = _mla().replace(q_lora_rank=None, attention_bias=True, attention_out_bias=True)
    rows = {r.op: r for r in _attn_rows(spec, batch=1, seq=3)}
    assert "q_a_proj" not in rows and "q_b_proj" not in rows
    assert (rows["q_proj"].output, rows["q_proj"].params) == ((1, 3, H, QK), D * H * QK)
    assert rows["kv_a_proj"].weights == ("decoder.blocks.1.attn.wkv_a",
                                         "decoder.blocks.1.attn.bkv_a")
    assert rows["kv_a_proj"].flops == 3 * (2 * D * (R + DR) + (R + DR))  # bias: 1 per element
    assert rows["out_proj"].params == H * DV * D + D


@pytest.mark.parametrize("changes", [{}, {"q_lora_rank": None, "attention_bias": True},
                                     {"router_scoring": "softmax", "router_bias": False,
                                      "group_score": "max", "routed_scaling_factor": 1.0}])
def test_rows_own_every_parameter_once(changes: dict[str, object]) -> None:
    spec = _mla().replace(**changes)
    report = build_trace(spec, seq_len=4)
    assert report.total_params == total_parameters(spec)
    owners = [w for r in report.rows for w in r.weights]
    assert len(owners) == len(set(owners))


def test_the_router_row_owns_the_bias_buffer_and_counts_x_at_w() -> None:
    report = build_trace(_mla(), batch=2, seq_len=5)
    router = next(r for r in report.rows if (r.path, r.op) == ("decoder.1.ffn", "router"))
    assert router.weights == ("decoder.blocks.1.ffn.router", "decoder.blocks.1.ffn.router_bias")
    assert (router.params, router.flops) == (D * 8, 2 * 2 * 5 * D * 8)  # the bias: 0 of each


def test_convention_states_the_latent_and_routing_counts() -> None:
    text = build_trace(_mla(), seq_len=4).convention
    for part in ("Latent attention (MLA)", "2 x B x S x r x H x (dn + dv)",
                 "qk = dn + dr = 8 + 4 = 12 dims", "v_head_dim = 6", "the last 4 of each head's 12",
                 "router_bias: a buffer, 0 parameters, owned by the router row",
                 "group-limited choice (4 groups, the best 2 by top2_sum)",
                 "routed_scaling_factor 2.5 not counted"):
        assert part in text, part
    plain = build_trace(load_spec("mixtral-8x7b").with_layers(2), seq_len=4).convention
    assert "Latent" not in plain and "router row" not in plain


@pytest.mark.parametrize("changes", [{}, {"q_lora_rank": None, "attention_bias": True}])
def test_execute_matches_a_latent_forward(changes: dict[str, object]) -> None:
    spec = _mla().replace(**changes)
    check = execute_check(spec, build_trace(spec, batch=2, seq_len=6), seed=0)
    assert check.ok and check.mismatches == (), check.to_dict()
    # 18 ops in dense block 0, 17 in each MoE block, plus embed, final norm and head; one
    # q_proj in place of q_a_proj, q_a_norm and q_b_proj: 2 fewer per block
    assert check.observed == (49 if changes else 55)


# --- deep stacks: the listing --------------------------------------------------------------------


def _deep(name: str, layers: int = 300, **changes: object):
    return load_spec(name).replace(**changes).with_layers(layers)


def test_blocks_before_a_uniform_tail_are_listed_then_one_row() -> None:
    spec = _deep("mixtral-8x7b", dense_layers=[0, 1, 2])
    folded = build_trace(spec, seq_len=3)
    paths = list(dict.fromkeys(r.path.split(".")[1] for r in folded.rows
                               if r.path.startswith("decoder.")))
    assert paths == ["0", "1", "2", "3-299", "final_norm"]
    assert "here the decoder lists blocks 0..2, and blocks 3..L-1" in folded.convention
    assert trace.uniform_tail(spec, 300) == 3


def test_the_folded_rows_expand_to_the_listed_ones(monkeypatch) -> None:
    spec = _deep("mixtral-8x7b", dense_layers=[0, 1, 2])
    folded = build_trace(spec, seq_len=3)
    monkeypatch.setattr(trace, "MAX_LISTED_BLOCKS", 10_000)
    listed = build_trace(spec, seq_len=3)
    assert expand_rows(folded.rows) == list(listed.rows)
    assert (folded.total_params, folded.total_flops) == (listed.total_params, listed.total_flops)


@pytest.mark.parametrize("name", ["gpt2", "mixtral-8x7b"])
def test_stacks_that_listed_before_list_as_before(name: str) -> None:
    """Block 0, then 1..L-1 as one row, and the convention sentence unchanged."""
    spec = _deep(name, dense_layers=[0]) if name == "mixtral-8x7b" else _deep(name)
    report = build_trace(spec, seq_len=3)
    blocks = list(dict.fromkeys(r.path.split(".")[1] for r in report.rows
                                if r.path.startswith("decoder.")))
    assert blocks[:2] == ["0", "1-299"]
    assert report.convention.endswith("'decoder.1-79') (identical blocks), their figures summed.")


def test_a_stack_without_a_uniform_tail_is_refused() -> None:
    spec = _deep("mixtral-8x7b", moe_layer_step=2)  # dense and MoE alternate to the end
    with pytest.raises(BadInputError, match=r"past block 256.*use --layers"):
        build_trace(spec, seq_len=3)


def test_execute_says_when_the_weights_alone_are_over_budget() -> None:
    """DeepSeek-V3's one block with its 129,280-token tables is 9.1 GiB of float32 weights:
    no shorter run fits 8 GiB (CI checks it narrowed, tests/analysis/trace/test_build.py)."""
    spec = load_spec("deepseek-v3").with_layers(4)
    report = build_trace(spec, seq_len=4)
    with pytest.raises(BadInputError, match=r"float32 weights alone are 9\.1 GiB, so no --batch"):
        execute_check(spec, report, budget_bytes=8 * 2**30)
    small = load_spec("lesson-tiny").with_layers(1)  # weights fit, activations do not
    with pytest.raises(BadInputError, match="try a smaller --batch or --seq-len"):
        execute_check(small, build_trace(small, seq_len=5),
                      budget_bytes=4 * total_parameters(small) + 1)


def test_deepseek_v3_flops_per_token_are_twice_its_active_matmul_parameters() -> None:
    """One token (no attention to speak of): every active weight but the embedding lookup does
    one multiply-add, so the trace (routed experts only) and params' active count agree; what
    is left over is norms, activations and adds, well under 0.1%."""
    spec = load_spec("deepseek-v3")
    flops = build_trace(spec, seq_len=1).total_flops
    active = build_params_report(spec).active - spec.vocab_size * spec.d_model  # 37.55 B - table
    assert 0 < flops - 2 * active < 1e-3 * flops


def test_execute_truncated_runs_through_the_first_moe_block() -> None:
    """Cut to fit, DeepSeek-V3 (narrowed as in test_trace.py) runs blocks 0-3, its three dense
    blocks and the first MoE one, not just the first two dense ones."""
    spec = load_spec("deepseek-v3").replace(vocab_size=512, d_ff=256, d_model=256, expert_d_ff=32,
                                            kv_lora_rank=32, q_lora_rank=64)
    report = build_trace(spec, seq_len=3)
    budget = execute_bytes(spec.with_layers(4), report)
    assert layers_that_fit(spec, report, budget) == 4
    assert layers_that_fit(spec, report, budget - 1) == 2
    check = execute_check(spec, report, budget_bytes=budget)
    assert (check.layers, check.ok) == (4, True)
