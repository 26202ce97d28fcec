"""The engine's one generation request: several stop tokens, each row held at its own."""

from __future__ import annotations

import numpy as np

from tests.engine.engine_specs import make_spec
from tfcli.engine.generate import GenerationRequest, generate
from tfcli.engine.init import init_weights

PROMPTS = [[5, 17, 3, 40, 22, 9, 1], [33, 8], [2, 60, 14, 7]]


def test_each_row_stops_at_the_first_of_several_stop_tokens_and_repeats_it():
    spec = make_spec("gpt", init_std=0.3)
    w = init_weights(spec, seed=7)
    free = np.stack([s.tokens for s in generate(spec, w, GenerationRequest(PROMPTS, 12))], 1)
    stops = (int(free[0, 2]), int(free[1, 1]))  # (B, 12) free-running tokens give two stops
    steps = list(generate(spec, w, GenerationRequest(PROMPTS, 12, stop_tokens=stops)))
    out = np.stack([s.tokens for s in steps], 1)  # (B, n)
    for row, expected in zip(out, free):
        hits = np.flatnonzero(np.isin(expected[: out.shape[1]], stops))
        if hits.size == 0:
            np.testing.assert_array_equal(row, expected[: out.shape[1]])
            continue
        first = hits[0]
        np.testing.assert_array_equal(row[: first + 1], expected[: first + 1])
        assert (row[first:] == expected[first]).all()  # its own stop token, not another
    assert [bool(f) for f in steps[-1].finished] == [bool(np.isin(r, stops).any()) for r in out]
