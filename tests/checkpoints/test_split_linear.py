"""The `split_linear` transform: a fused nn.Linear (sum of widths, in) -> the rule's (in, w_i)
arrays, cut at the widths of the spec's slots (Phi-3's qkv_proj under GQA: q wider than k, v)."""

from __future__ import annotations

import numpy as np

from tfcli.checkpoints.loader import convert, expected_shape
from tfcli.checkpoints.names import Rule

RULE = Rule("qkv_proj.weight", ("wq", "wk", "wv"), "split_linear")


def test_unequal_pieces_are_the_transposed_row_blocks() -> None:
    d, widths = 6, (8, 4, 4)
    shapes = [(d, w) for w in widths]
    fused = np.arange(sum(widths) * d, dtype=np.float32).reshape(sum(widths), d)  # (16, 6)
    assert expected_shape(RULE, shapes) == fused.shape
    q, k, v = convert(RULE, fused, shapes)
    np.testing.assert_array_equal(q, fused[:8].T)
    np.testing.assert_array_equal(k, fused[8:12].T)
    np.testing.assert_array_equal(v, fused[12:].T)


def test_a_fused_bias_splits_alike() -> None:
    bias = np.arange(10.0)
    shapes = [(6,), (2,), (2,)]
    assert expected_shape(RULE, shapes) == (10,)
    assert [p.tolist() for p in convert(RULE, bias, shapes)] == [
        [0.0, 1, 2, 3, 4, 5], [6.0, 7], [8.0, 9]]
