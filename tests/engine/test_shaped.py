"""Shape-only arrays (tfcli.engine.shaped): every op answers the shape and dtype NumPy gives on
real arrays, refuses what needs values, and the engine's forward pass on them gives the shapes
of a real forward pass for every engine variant."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engine.engine_specs import VARIANTS, make_spec
from tfcli.engine.init import init_weights, shaped_weights
from tfcli.engine.model import ModelInput, forward
from tfcli.engine.shaped import Shaped, is_shaped
from tfcli.spec.counts import total_parameters

def _as_shaped(a: np.ndarray) -> Shaped:
    return Shaped(a.shape, a.dtype)


def _same(real: np.ndarray, shaped: Shaped) -> None:
    assert is_shaped(shaped)
    assert shaped.shape == np.shape(real)
    assert shaped.dtype == np.asarray(real).dtype


DTYPES = st.sampled_from([np.float32, np.float64, np.int64])
SHAPES = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


@settings(max_examples=150, deadline=None)
@given(SHAPES, SHAPES, DTYPES, DTYPES,
       st.sampled_from([np.add, np.multiply, np.maximum, np.greater, np.divide]))
def test_elementwise_broadcasts_as_numpy(a: tuple[int, ...], b: tuple[int, ...], da: type,
                                         db: type, ufunc: np.ufunc) -> None:
    x, y = np.ones(a, da), np.ones(b, db)
    try:
        expected = ufunc(x, y)
    except ValueError:
        with pytest.raises(ValueError):
            ufunc(_as_shaped(x), _as_shaped(y))
        return
    _same(expected, ufunc(_as_shaped(x), _as_shaped(y)))
    _same(ufunc(x, 2.0), ufunc(_as_shaped(x), 2.0))  # a Python scalar is weak, as in NumPy 2


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4).map(tuple),
       st.lists(st.integers(1, 3), min_size=1, max_size=4).map(tuple))
def test_matmul_as_numpy(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    x, y = np.ones(a, np.float32), np.ones(b, np.float32)
    try:
        expected = x @ y
    except ValueError:
        with pytest.raises(ValueError):
            _as_shaped(x) @ _as_shaped(y)
        return
    _same(expected, _as_shaped(x) @ _as_shaped(y))


@pytest.mark.parametrize("key", [
    (slice(None), None, slice(1, None)), (Ellipsis, slice(0, None, 2)), (0,), (slice(None), -1),
    (Ellipsis, None), (slice(None), slice(None), np.arange(3)[:, None], np.zeros((3, 2), int)),
    (np.arange(2), slice(None), np.arange(2)),  # index arrays apart: their shape goes first
])
def test_indexing_as_numpy(key: object) -> None:
    x = np.ones((2, 3, 4, 5), np.float32)
    _same(x[key], _as_shaped(x)[key])  # type: ignore[index]


def test_reductions_views_and_functions_as_numpy() -> None:
    x = np.ones((2, 3, 4), np.float32)
    s = _as_shaped(x)
    _same(np.add.reduce(x, axis=-1, keepdims=True), np.add.reduce(s, axis=-1, keepdims=True))
    _same(x.max(axis=1), s.max(axis=1))
    _same(x.mean(), s.mean())
    _same(x.reshape(-1, 4), s.reshape(-1, 4))
    _same(x.transpose(0, 2, 1), s.transpose(0, 2, 1))
    _same(x.swapaxes(-1, -2), s.swapaxes(-1, -2))
    _same(x.T, s.T)
    _same(np.concatenate([x, x], axis=-1), np.concatenate([s, s], axis=-1))
    _same(np.repeat(x, 2, axis=-1), np.repeat(s, 2, axis=-1))
    _same(np.where(x > 0, x, 0.0), np.where(s > 0, s, 0.0))
    _same(np.empty((2, 5), np.float32), np.empty((2, 5), np.float32, like=s))
    _same(np.zeros_like(x, dtype=np.int64), np.zeros_like(s, dtype=np.int64))
    assert np.result_type(s, np.float64) == np.float64
    out = _as_shaped(x)
    assert np.exp(s, out=out) is out  # out= hands back the output, as NumPy does


def test_what_needs_values_is_refused() -> None:
    s = Shaped((2, 3))
    with pytest.raises(TypeError):
        bool(s > 0)
    with pytest.raises(TypeError):
        np.asarray(s)
    with pytest.raises(TypeError):
        s[s > 0]  # a boolean mask selects by value
    with pytest.raises(TypeError):
        np.sort(s)  # an array function the engine's shape path never calls
    with pytest.raises(ValueError):
        s.reshape(4, 2)


def test_a_huge_shape_costs_nothing() -> None:
    big = Shaped((2**40, 2**20), np.float32)
    assert (big @ Shaped((2**20, 3))).shape == (2**40, 3)
    assert np.exp(big).nbytes == 2**62


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_forward_on_shapes_gives_the_real_forward_shapes(variant: str) -> None:
    spec = make_spec(variant)
    tokens = np.arange(10).reshape(2, 5) % spec.vocab_size
    target = tokens[:, :3] if spec.family == "encoder-decoder" else None
    given = ModelInput(tokens, decoder_tokens=target)
    real = forward(spec, init_weights(spec, 0), given)
    blocks = {"encoder": spec.encoder_layers, "decoder": spec.decoder_layers}
    shaped_input = ModelInput(Shaped(tokens.shape, np.int64),
                              decoder_tokens=None if given.decoder_tokens is None
                              else Shaped(given.decoder_tokens.shape, np.int64))
    on_shapes = forward(spec, shaped_weights(spec, blocks), shaped_input)
    for field in ("hidden", "logits", "encoder_hidden", "pooled", "scores"):
        a, b = getattr(real, field), getattr(on_shapes, field)
        assert (a is None) == (b is None), field
        if a is not None:
            assert b.shape == a.shape, field


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_shaped_weights_hold_every_parameter(variant: str) -> None:
    spec = make_spec(variant)
    blocks = {"encoder": spec.encoder_layers, "decoder": spec.decoder_layers}
    weights = shaped_weights(spec, blocks)
    seen: dict[str, int] = {}

    def walk(node: object) -> None:
        if isinstance(node, Shaped):
            seen[node.path] = node.params  # type: ignore[index]
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif node is not None and hasattr(node, "__dataclass_fields__"):
            for value in vars(node).values():
                walk(value)

    walk(weights)
    assert sum(seen.values()) == total_parameters(spec)


@pytest.mark.parametrize("field", ["d_model", "d_head"])
@pytest.mark.parametrize("base", ["lesson-tiny", "llama-3.1-8b", "gpt2"])
def test_a_trace_of_hostile_widths_allocates_nothing(base: str, field: str) -> None:
    # RoPE's frequency table (llama3 scaling), sinusoids or learned rows, attention's output
    # buffer: every array the forward makes is as wide as the spec says, so on shapes none may
    # be a real one (np.empty(like=) itself refuses 2^63 before it dispatches)
    from tfcli.analysis.trace.build import build_trace
    from tfcli.sources import load_spec

    spec = load_spec(base).replace(**{field: 3 * 2**60}).with_layers(2)  # 12 | 3 * 2^60
    report = build_trace(spec, seq_len=4)
    assert report.total_params == total_parameters(spec)


# --- views, copies and liveness (what the engine's live set reads) ---------------------------------

_MOVES = st.sampled_from(["T", "swap", "slice", "step", "int", "reshape", "flat"])


def _move(kind: str, a: np.ndarray | Shaped, pick: int) -> object:
    """One view-or-copy operation on a real array or a Shaped of its shape, chosen by `kind`
    and `pick` (both get the same one)."""
    shape = a.shape
    axis = pick % len(shape)
    if kind == "T":
        return a.T
    if kind == "swap":
        return a.swapaxes(0, -1)
    if kind in ("slice", "step"):
        key = (slice(None),) * axis + (slice(pick % shape[axis], None, 2 if kind == "step" else 1),)
        return a[key]
    if kind == "int" and len(shape) > 1:
        return a[pick % shape[0]]
    size = int(np.prod(shape))
    divisors = [d for d in range(1, size + 1) if size % d == 0]
    d = divisors[pick % len(divisors)]
    return a.reshape((d, size // d) if kind == "reshape" else (1, size))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([1, 2, 3, 4, 6]), min_size=1, max_size=4),
       st.lists(st.tuples(_MOVES, st.integers(0, 100)), min_size=1, max_size=4))
def test_views_and_copies_as_numpy(shape: list[int], moves: list[tuple[str, int]]) -> None:
    """After any chain of transposes, slices and reshapes, a Shaped is a view exactly where
    NumPy's result shares memory with its input (a reshape of a strided array copies), with
    NumPy's strides."""
    real, shaped = np.zeros(shape, np.float32), Shaped(tuple(shape), np.float32)
    for kind, pick in moves:
        real_next, shaped_next = _move(kind, real, pick), _move(kind, shaped, pick)
        assert shaped_next.shape == real_next.shape
        if real_next.size > 1:
            viewed = np.shares_memory(real, real_next)
            assert (shaped_next.base is not None) == viewed, (kind, real.shape, real.strides)
            if viewed:
                steps = [s // 4 for s in real_next.strides]
                assert all(a == b for a, b, n in zip(shaped_next._steps(), steps,
                                                      real_next.shape) if n != 1)
        real, shaped = real_next, shaped_next


def test_watching_follows_owners_not_views() -> None:
    import gc
    import weakref

    from tfcli.engine.shaped import watching

    born: list[int] = []
    alive: list[weakref.ref[Shaped]] = []

    def seen(a: Shaped) -> None:
        born.append(a.nbytes)
        alive.append(weakref.ref(a))

    x = Shaped((4, 8), np.float32)  # before the watch: not followed (as the weights)
    with watching(seen):
        y = x + 1.0  # a new array
        view = y.T.reshape(32)[1:]  # a transpose, then its flattening copies
        merged = y.reshape(32)  # a view of the contiguous result
        with pytest.raises(RuntimeError, match="already watched"):
            with watching(seen):
                pass
    assert born == [128, 128] and merged.base is y and view.base is not None
    del y
    gc.collect()
    assert alive[0]() is not None  # merged, a view, keeps it alive
    del merged
    assert alive[0]() is None
