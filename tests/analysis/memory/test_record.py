"""The engine's live set from its forward pass on shapes (tfcli/analysis/memory/record.py): the
arrays the engine's own references keep alive between ops, counted exactly."""

from __future__ import annotations

from tests.engine.engine_specs import make_spec
from tfcli.analysis.memory.base import Workload
from tfcli.analysis.memory.layouts.engine import live
from tfcli.analysis.memory.record import Interval, record_live

B, T, D = 2, 32, 64
ND = B * T * D * 4  # one (B, T, d) float32 array
POSITIONS = T * 8  # the (1, T) int64 positions the stack input holds


def _at(intervals: list[Interval], path: str, op: str) -> Interval:
    return next(iv for iv in intervals if iv.path == path and iv.op == op)


def test_what_is_alive_at_block_1s_scores_is_counted_to_the_byte() -> None:
    """Pre-LN, block 1, entering attention: the embedding output (forward holds it), the
    block's input (the loop holds it), the normed input (the sublayer holds it) and the fused
    Q/K/V product (three column views of one (B, T, 3d) array): 6 arrays of (B, T, d)."""
    spec = make_spec("gpt", d_model=D, d_ff=4 * D, vocab_size=300, n_layers=3)
    intervals = record_live(spec, B, T)
    assert _at(intervals, "decoder.1.attn", "scores").low == 6 * ND + POSITIONS
    # block 0's input is the embedding itself: one array fewer
    assert _at(intervals, "decoder.0.attn", "scores").low == 5 * ND + POSITIONS
    # at the residual add Q/K/V are gone; the sublayer still holds the normed input
    assert _at(intervals, "decoder.1.attn", "residual_add").end == 4 * ND + POSITIONS


def test_rope_keeps_the_fused_product_alive_beside_its_new_q_and_k() -> None:
    """RoPE writes new q and k; v is still a view of the fused product, which keeps q and k's
    old columns alive too (what the hand-written phases once had to know)."""
    spec = make_spec("llama_gqa", d_model=D, d_ff=4 * D, vocab_size=300, n_layers=3)
    intervals = record_live(spec, B, T)
    heads, kv = spec.n_heads, spec.kv_heads
    qkv = (heads + 2 * kv) * spec.head_dim * B * T * 4
    rope = (heads + kv) * spec.head_dim * B * T * 4
    tables = 2 * T * spec.rotary_width * 4  # RoPE's (T, rotary) cos and sin
    assert _at(intervals, "decoder.1.attn", "scores").low == \
        3 * ND + qkv + rope + tables + POSITIONS


def test_identical_blocks_are_recorded_once_past_block_1() -> None:
    deep = make_spec("gpt", d_model=D, d_ff=4 * D, vocab_size=300, n_layers=40)
    shallow = make_spec("gpt", d_model=D, d_ff=4 * D, vocab_size=300, n_layers=3)
    recorded = {iv.path.split(".")[1] for iv in record_live(deep, B, T)
                if iv.path.startswith("decoder.") and iv.path.split(".")[1].isdigit()}
    assert recorded == {"0", "1"}
    work = Workload(B, T, 4, 1)
    assert max(v for _, v in live(deep, work, "engine", frozenset())) == \
        max(v for _, v in live(shallow, work, "engine", frozenset()))
