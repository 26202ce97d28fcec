"""The encoder-body fields against references of their formulas: factorised embeddings
(embedding_dim) against a float64 LayerNorm-then-projection, offset positions
(position_offset) against a plain table cut past the offset, one shared block (shared_layers)
against a stack of separate copies of it."""

from __future__ import annotations

import copy

import numpy as np

from tests.engine.engine_specs import make_spec
from tests.tolerance import assert_close
from tfcli.engine.init import init_weights
from tfcli.engine.model import ModelInput, embed, forward
from tfcli.engine.weights import count_parameters
from tfcli.spec.counts import total_parameters

RNG = np.random.default_rng(3)
TOKENS = RNG.integers(0, 61, size=(2, 7))
TYPES = RNG.integers(0, 2, size=(2, 7))
MASK = np.array([[1] * 7, [1] * 4 + [0] * 3])


def _layer_norm64(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def test_factorised_embeddings_are_a_normed_sum_then_a_projection() -> None:
    spec = make_spec("albert")  # e = 16 -> d = 32, offset 2
    w = init_weights(spec, seed=1, dtype=np.float64)
    w.embedding_project_bias[:] = RNG.normal(size=spec.d_model)  # a bias that shows
    w.embedding_norm.scale[:] = 1 + 0.1 * RNG.normal(size=spec.embedding_width)
    positions = np.arange(7)[None]
    out = embed(spec, w, TOKENS, positions, TYPES)
    summed = (w.token_embedding[TOKENS] + w.position_embedding[positions + 2]
              + w.token_type_embedding[TYPES])  # (B, T, e)
    normed = _layer_norm64(summed, w.embedding_norm.scale, w.embedding_norm.bias, spec.norm_eps)
    expected = normed @ w.embedding_project + w.embedding_project_bias  # (B, T, d)
    assert out.shape == (2, 7, spec.d_model)
    assert_close(out, expected, ops=4 * spec.embedding_width)


def test_an_offset_reads_the_table_rows_past_it() -> None:
    spec = make_spec("bert", position_offset=3)
    w = init_weights(spec, seed=2)
    assert w.position_embedding.shape == (spec.max_seq_len + 3, spec.d_model)
    plain_spec = spec.replace(position_offset=0)
    plain = copy.deepcopy(w)
    plain.position_embedding = w.position_embedding[3:].copy()  # row i = offset row i + 3
    inputs = ModelInput(TOKENS, attention_mask=MASK, token_types=TYPES)
    assert_close(forward(spec, w, inputs).hidden, forward(plain_spec, plain, inputs).hidden,
                 ops=8)


def test_the_last_position_reads_the_last_row() -> None:
    spec = make_spec("bert", position_offset=2, max_seq_len=7)  # 9 rows, positions 0..6
    w = init_weights(spec, seed=2)
    w.position_embedding[-1] = 1e3  # only position 6 reads it
    raw = embed(spec.replace(embedding_norm=False), w, TOKENS, np.arange(7)[None])
    assert (np.abs(raw[:, -1]) > 100).all() and (np.abs(raw[:, :-1]) < 100).all()


def test_a_shared_block_runs_as_separate_copies_of_it_would() -> None:
    spec = make_spec("albert")  # 3 layers, one block
    w = init_weights(spec, seed=4)
    blocks = w.encoder.blocks
    assert len(blocks) == 3 and all(b is blocks[0] for b in blocks)
    assert count_parameters(w, spec) == total_parameters(spec)  # one block's arrays, held once
    separate_spec = spec.replace(shared_layers=False)
    separate = copy.deepcopy(w)
    separate.encoder.blocks = [copy.deepcopy(blocks[0]) for _ in range(3)]
    assert count_parameters(separate, separate_spec) == total_parameters(separate_spec)
    inputs = ModelInput(TOKENS, attention_mask=MASK, token_types=TYPES)
    got, want = forward(spec, w, inputs), forward(separate_spec, separate, inputs)
    assert_close(got.hidden, want.hidden, ops=8)
    assert_close(got.pooled, want.pooled, ops=8)


def test_a_shared_stack_counts_one_block() -> None:
    one, three = make_spec("albert", n_layers=1), make_spec("albert")
    assert total_parameters(one) == total_parameters(three)
    separate = make_spec("albert", shared_layers=False)
    block = total_parameters(separate) - total_parameters(three)
    assert block > 0 and block % 2 == 0  # the two blocks a shared stack of 3 does not hold
