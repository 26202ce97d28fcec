"""Shape-only arrays: the engine's own forward pass evaluated on shapes (what `tfcli trace` runs).

A `Shaped` stands for an ndarray of a shape and dtype and holds no data, as JAX's
`ShapeDtypeStruct` under `eval_shape` or a tensor on torch's meta device. NumPy hands it every
ufunc (`__array_ufunc__`: elementwise broadcasting, `matmul`, reductions, `out=`) and the array
functions the engine calls (`__array_function__`: `np.empty(..., like=)`, `concatenate`,
`where`, ...); each answers with a Shaped of the shape NumPy would give, in O(1) whatever the
size, and raises NumPy's own error for shapes that do not fit. A weight also carries its
blueprint path, role and parameter count, which the op records of the trace read.

What needs values raises TypeError: `bool()` of one, `np.asarray`, a boolean mask. The engine
takes its shape path explicitly (`is_shaped`) at the few places that branch on data (routing,
masks, overflow checks) or choose a work split by size.

A Shaped is an owner (what NumPy would allocate: a ufunc's result, a copy, a gather) or a view
of one (`base`, as ndarray.base: a reshape of a contiguous array, a transpose, a basic slice),
so that the engine's own references decide, as they do for ndarrays, when an allocation dies:
`watching(callback)` hands every owner created meanwhile to `callback`, which may follow its
life with a weakref (tfcli.analysis.memory.record: the engine's live set).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

Shape = tuple[int, ...]
_BOOL = np.dtype(bool)
_INDEX = np.dtype(np.int64)
_COMPARISONS = frozenset({np.greater, np.greater_equal, np.less, np.less_equal, np.equal,
                          np.not_equal, np.logical_and, np.logical_or, np.logical_not,
                          np.logical_xor, np.isinf, np.isnan, np.isfinite, np.signbit})


_watcher: list[Callable[[Shaped], None]] = []  # watching(): who is told of each new owner


@contextmanager
def watching(callback: Callable[[Shaped], None]) -> Iterator[None]:
    """Hand every owner Shaped created inside the block to `callback` (one watcher at a time:
    a shape run is single-threaded)."""
    if _watcher:
        raise RuntimeError("shape-only arrays are already watched")
    _watcher.append(callback)
    try:
        yield
    finally:
        _watcher.clear()


class Shaped(NDArrayOperatorsMixin):
    """An array's shape and dtype, and for a weight its blueprint path, role and parameters;
    `base` is the owner a view keeps alive (None for an owner), `steps` its strides in
    elements (None: C order), which decide whether a reshape is a view or NumPy's copy."""

    __slots__ = ("shape", "dtype", "path", "role", "params", "base", "steps", "__weakref__")

    def __init__(self, shape: Iterable[int], dtype: Any = np.float32, path: str | None = None,
                 role: str | None = None, params: int = 0, base: Shaped | None = None) -> None:
        self.shape: Shape = shape if type(shape) is tuple else tuple(map(int, shape))  # type: ignore[assignment]
        self.dtype = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
        self.path, self.role, self.params = path, role, params
        self.base: Shaped | None = base
        self.steps: Shape | None = None  # set by _view
        if base is None and _watcher:
            _watcher[0](self)

    def __repr__(self) -> str:
        named = f", {self.path}" if self.path else ""
        return f"Shaped({self.shape}, {self.dtype}{named})"

    def _view(self, shape: Iterable[int], steps: Shape | None = None) -> Shaped:
        """The same array (its weight identity kept) seen with another shape and strides (in
        elements; None: C order): a view."""
        dims = tuple(shape)
        if steps is not None and _c_ordered(dims, steps):
            steps = None
        view = Shaped(dims, self.dtype, self.path, self.role, self.params,
                      self if self.base is None else self.base)
        view.steps = steps
        return view

    def _steps(self) -> Shape:
        return _c_steps(self.shape) if self.steps is None else self.steps

    def _copy(self, shape: Iterable[int], dtype: Any = None) -> Shaped:
        """A new array (its weight identity kept): what NumPy allocates for a copy."""
        return Shaped(shape, self.dtype if dtype is None else dtype, self.path, self.role,
                      self.params)

    # --- ndarray's attributes ------------------------------------------------------------------

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def T(self) -> Shaped:  # noqa: N802  (ndarray's name)
        return self._view(self.shape[::-1], self._steps()[::-1])

    def __len__(self) -> int:
        return self.shape[0]

    def __bool__(self) -> bool:
        raise TypeError("a shape-only array has no truth value: branch with is_shaped()")

    def __array__(self, *args: object, **kwargs: object) -> np.ndarray:
        raise TypeError("a shape-only array has no values to convert")

    # --- views -----------------------------------------------------------------------------------

    def reshape(self, *shape: int | Iterable[int]) -> Shaped:
        dims = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        new = _reshaped(self.shape, dims)  # type: ignore[arg-type]
        if self.steps is None:
            return self._view(new)
        steps = _reshaped_steps(self.shape, self.steps, new)
        # NumPy copies an array it cannot view in the new shape (merged strided axes)
        return self._copy(new) if steps is None else self._view(new, steps)

    def transpose(self, *axes: int) -> Shaped:
        order = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        order = tuple(order) or tuple(range(self.ndim))[::-1]  # type: ignore[arg-type]
        return self._moved(order)  # type: ignore[arg-type]

    def swapaxes(self, a: int, b: int) -> Shaped:
        order = list(range(self.ndim))
        order[a], order[b] = order[b], order[a]
        return self._moved(order)

    def _moved(self, order: Iterable[int]) -> Shaped:
        """A view with its axes permuted."""
        steps = self._steps()
        axes = list(order)
        return self._view([self.shape[a] for a in axes], tuple(steps[a] for a in axes))

    def astype(self, dtype: Any, copy: bool = True) -> Shaped:
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        return self._copy(self.shape, dtype)

    def copy(self) -> Shaped:
        return self._copy(self.shape)

    def __getitem__(self, key: object) -> Shaped:
        keys = key if isinstance(key, tuple) else (key,)
        shape = _indexed(self.shape, key)
        if any(_is_advanced(k) for k in keys):
            return self._copy(shape)  # an integer array gathers: a new array
        return self._view(shape, _sliced_steps(self.shape, self._steps(), keys))

    def __setitem__(self, key: object, value: object) -> None:
        _indexed(self.shape, key)  # the target must exist; nothing is written

    # --- reductions as methods -------------------------------------------------------------------

    def _reduced(self, axis: int | tuple[int, ...] | None, keepdims: bool, dtype: Any) -> Shaped:
        return Shaped(_reduce_shape(self.shape, axis, keepdims), dtype)

    def sum(self, axis: int | None = None, keepdims: bool = False, **_: object) -> Shaped:
        return self._reduced(axis, keepdims, self.dtype)

    def max(self, axis: int | None = None, keepdims: bool = False, **_: object) -> Shaped:
        return self._reduced(axis, keepdims, self.dtype)

    def min(self, axis: int | None = None, keepdims: bool = False, **_: object) -> Shaped:
        return self._reduced(axis, keepdims, self.dtype)

    def mean(self, axis: int | None = None, keepdims: bool = False, **_: object) -> Shaped:
        floating = self.dtype if self.dtype.kind in "fc" else np.dtype(np.float64)
        return self._reduced(axis, keepdims, floating)

    def argmax(self, axis: int | None = None, **_: object) -> Shaped:
        return self._reduced(axis, False, _INDEX)

    # --- NumPy's protocols -----------------------------------------------------------------------

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        if method == "__call__":
            shape, dtype = _call(ufunc, inputs)
        elif method == "reduce":
            axis = inputs[1] if len(inputs) > 1 else kwargs.get("axis", 0)
            shape = _reduce_shape(_shape(inputs[0]), axis, kwargs.get("keepdims", False))
            dtype = _dtype(inputs[0])
        else:
            return NotImplemented
        if out is not None:  # in place: nothing is allocated (the engine's live set counts on it)
            target = out[0] if isinstance(out, tuple) else out
            _broadcast(shape, target.shape)  # as NumPy: the result must fit
            return target
        return Shaped(shape, dtype)

    def __array_function__(self, func: Callable[..., Any], types: object, args: tuple[Any, ...],
                           kwargs: dict[str, Any]) -> Any:
        handler = _FUNCTIONS.get(func)
        if handler is None:
            raise TypeError(f"np.{func.__name__} is not defined on shape-only arrays")
        return handler(*args, **kwargs)


def _operator(ufunc: np.ufunc, reflected: bool = False,
              in_place: bool = False) -> Callable[..., Any]:
    """A Shaped operator straight to __array_ufunc__: NumPy's own dispatch of `x + y` costs
    more than the shape arithmetic, and a trace is mostly operators. Other operands than
    arrays and scalars go to NumPy's rules (NotImplemented), as the mixin's would."""
    def apply(self: Shaped, other: Any) -> Any:
        if not isinstance(other, (Shaped, np.ndarray, np.generic, int, float, bool)):
            return NotImplemented
        operands = (other, self) if reflected else (self, other)
        kwargs = {"out": (self,)} if in_place else {}
        return self.__array_ufunc__(ufunc, "__call__", *operands, **kwargs)
    return apply


for _name, _ufunc in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                      ("truediv", np.true_divide), ("matmul", np.matmul)):
    setattr(Shaped, f"__{_name}__", _operator(_ufunc))
    setattr(Shaped, f"__r{_name}__", _operator(_ufunc, reflected=True))
    setattr(Shaped, f"__i{_name}__", _operator(_ufunc, in_place=True))


def _c_steps(shape: Shape) -> Shape:
    """C-order strides in elements."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _c_ordered(shape: Shape, steps: Shape) -> bool:
    """Whether strides are C order, axes of length 1 (any stride) aside."""
    step = 1
    for n, s in zip(reversed(shape), reversed(steps)):
        if n != 1:
            if s != step:
                return False
            step *= n
    return True


def _sliced_steps(shape: Shape, steps: Shape, keys: tuple[object, ...]) -> Shape:
    """The strides of x[keys] for a basic index (integers, slices, None, one Ellipsis)."""
    out: list[int] = []
    given = sum(1 for k in keys if k is not None and k is not Ellipsis)
    axis = 0
    for k in keys:
        if k is None:
            out.append(0)
        elif k is Ellipsis:
            for _ in range(len(shape) - given):
                out.append(steps[axis])
                axis += 1
        else:
            if isinstance(k, slice):
                out.append(steps[axis] * k.indices(shape[axis])[2])
            axis += 1
    return (*out, *steps[axis:])


def _reshaped_steps(old: Shape, steps: Shape, new: Shape) -> Shape | None:
    """The strides of a reshape that NumPy does as a view, or None where it must copy (its
    _attempt_nocopy_reshape): each run of old axes that becomes a run of new ones must be C
    order within itself."""
    if 0 in old:
        return _c_steps(new)
    dims = [(n, s) for n, s in zip(old, steps) if n != 1]
    on, os_ = [n for n, _ in dims], [s for _, s in dims]
    out = [0] * len(new)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(new) and oi < len(on):
        n_new, n_old = new[ni], on[oi]
        while n_new != n_old:
            if n_new < n_old:
                n_new *= new[nj]
                nj += 1
            else:
                n_old *= on[oj]
                oj += 1
        if any(os_[k] != on[k + 1] * os_[k + 1] for k in range(oi, oj - 1)):
            return None
        out[nj - 1] = os_[oj - 1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new[k]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    last = out[ni - 1] if ni >= 1 else 1
    for k in range(ni, len(new)):
        out[k] = last
    return tuple(out)


def is_shaped(x: object) -> bool:
    """Whether `x` is a shape-only array: the engine's branch to its shape path."""
    return type(x) is Shaped


def empty(shape: tuple[int, ...], dtype: Any, like: object) -> Any:
    """np.empty(shape, dtype), or a Shaped when `like` is one. Not np.empty(like=): NumPy
    checks the shape against its own limits before dispatching, and a shape-only array may be
    as large as a spec says (a hostile d_model of 2^63)."""
    return Shaped(shape, dtype) if type(like) is Shaped else np.empty(shape, dtype=dtype)


def zeros(shape: tuple[int, ...], dtype: Any, like: object) -> Any:
    """np.zeros(shape, dtype), or a Shaped when `like` is one (see empty)."""
    return Shaped(shape, dtype) if type(like) is Shaped else np.zeros(shape, dtype=dtype)


# --- shapes of NumPy's operations -----------------------------------------------------------------


def _shape(x: Any) -> Shape:
    if type(x) is Shaped:
        return x.shape
    return x.shape if isinstance(x, (np.ndarray, np.generic)) else ()


def _dtype(x: Any) -> Any:
    """What ufunc.resolve_dtypes should see for x: its dtype, or a Python scalar's type (weak)."""
    if type(x) is Shaped or isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    return type(x) if isinstance(x, (bool, int, float, complex)) else np.asarray(x).dtype


def _operand(x: Any) -> Any:
    """What np.result_type should see for x: its dtype, or a Python scalar itself (weak)."""
    return x.dtype if isinstance(x, (Shaped, np.ndarray, np.generic)) else x


_RESOLVED: dict[tuple[object, ...], np.dtype] = {}


def _call_dtype(ufunc: np.ufunc, inputs: tuple[Any, ...]) -> np.dtype:
    key = (ufunc, *map(_dtype, inputs))
    dtype = _RESOLVED.get(key)
    if dtype is None:
        if ufunc in _COMPARISONS:
            dtype = _BOOL
        else:
            dtype = ufunc.resolve_dtypes((*key[1:], *([None] * ufunc.nout)))[-1]
        _RESOLVED[key] = dtype
    return dtype


_CALLS: dict[tuple[object, ...], tuple[Shape, np.dtype]] = {}  # a trace repeats its calls
_MAX_CALLS = 1 << 14


def _describe(x: Any) -> tuple[Shape, Any]:
    if type(x) is Shaped:
        return x.shape, x.dtype
    return _shape(x), _dtype(x)


def _call(ufunc: np.ufunc, inputs: tuple[Any, ...]) -> tuple[Shape, np.dtype]:
    """The shape and dtype of ufunc(*inputs)."""
    key = (ufunc, *map(_describe, inputs))
    hit = _CALLS.get(key)
    if hit is None:
        hit = _call_result(ufunc, inputs)
        if len(_CALLS) >= _MAX_CALLS:  # bounded: shapes of a long-running process vary
            _CALLS.clear()
        _CALLS[key] = hit
    return hit


def _call_result(ufunc: np.ufunc, inputs: tuple[Any, ...]) -> tuple[Shape, np.dtype]:
    dtype = _call_dtype(ufunc, inputs)
    if ufunc is np.matmul:
        return _matmul_shape(_shape(inputs[0]), _shape(inputs[1])), dtype
    return _broadcast(*map(_shape, inputs)), dtype


def _broadcast(*shapes: Shape) -> Shape:
    """np.broadcast_shapes without building arrays (a few hundred ns, not microseconds)."""
    first = shapes[0]
    if all(s == first for s in shapes):
        return first
    out = [1] * max(len(s) for s in shapes)
    for s in shapes:
        for i, n in enumerate(s, len(out) - len(s)):
            if n != 1:
                if out[i] not in (1, n):
                    raise ValueError(f"shapes {' '.join(map(str, shapes))} do not broadcast")
                out[i] = n
    return tuple(out)


def _matmul_shape(a: Shape, b: Shape) -> Shape:
    """(..., n, k) @ (..., k, m) -> (..., n, m), with NumPy's rules for 1-D operands."""
    left, right = (1, *a) if len(a) == 1 else a, (*b, 1) if len(b) == 1 else b
    if left[-1] != right[-2]:
        raise ValueError(f"matmul: shapes {a} and {b} do not align ({left[-1]} != {right[-2]})")
    batch = _broadcast(left[:-2], right[:-2])
    rows = () if len(a) == 1 else (left[-2],)
    cols = () if len(b) == 1 else (right[-1],)
    return (*batch, *rows, *cols)


def _reduce_shape(shape: Shape, axis: int | tuple[int, ...] | None, keepdims: bool) -> Shape:
    axes = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
    gone = {a % len(shape) for a in axes}
    if keepdims:
        return tuple(1 if i in gone else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in gone)


def _reshaped(shape: Shape, dims: tuple[int, ...]) -> Shape:
    total = math.prod(shape)
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        dims = tuple(total // known if d == -1 else d for d in dims)
    if math.prod(dims) != total:
        raise ValueError(f"cannot reshape an array of shape {shape} into {dims}")
    return tuple(dims)


def _is_advanced(k: object) -> bool:
    return isinstance(k, (Shaped, list)) or (isinstance(k, np.ndarray) and k.ndim > 0)


def _indexed(shape: Shape, key: object) -> Shape:
    """The shape of x[key]: basic indices (ints, slices, None, ...) and integer index arrays
    (one group of adjacent ones, or NumPy's leading placement when they are apart)."""
    keys = list(key) if isinstance(key, tuple) else [key]
    if any(getattr(k, "dtype", None) == _BOOL for k in keys):
        raise TypeError("a boolean mask selects by value: no shape without data")
    consumed = sum(1 for k in keys if k is not None and k is not Ellipsis)
    dots = [i for i, k in enumerate(keys) if k is Ellipsis]
    if dots:
        keys[dots[0]: dots[0] + 1] = [slice(None)] * (len(shape) - consumed)
    keys += [slice(None)] * (len(shape) - sum(1 for k in keys if k is not None))
    out: list[int] = []
    advanced: list[Shape] = []
    places: list[int] = []
    axis = 0
    for k in keys:
        if k is None:
            out.append(1)
            continue
        if axis >= len(shape):
            raise IndexError(f"too many indices for an array of shape {shape}")
        if isinstance(k, slice):
            out.append(_span(*k.indices(shape[axis])))
        elif _is_advanced(k):
            places.append(len(out))
            advanced.append(_shape(k) if not isinstance(k, list) else np.shape(k))
        axis += 1
    if not advanced:
        return tuple(out)
    group = _broadcast(*advanced)
    # adjacent index arrays add nothing to `out` between them, so they share one place; apart,
    # NumPy puts their broadcast shape first
    at = places[0] if all(p == places[0] for p in places) else 0
    return (*out[:at], *group, *out[at:])


# --- the array functions the engine calls ---------------------------------------------------------


def _new(shape: int | Iterable[int], dtype: Any = None, *_: object, **__: object) -> Shaped:
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    return Shaped(dims, np.float64 if dtype is None else dtype)


def _full(shape: int | Iterable[int], fill_value: object, dtype: Any = None,
          **_: object) -> Shaped:
    return _new(shape, dtype if dtype is not None else np.asarray(fill_value).dtype)


def _like(a: Any, dtype: Any = None, *_: object, **__: object) -> Shaped:
    return Shaped(_shape(a), _dtype(a) if dtype is None else dtype)


def _concatenate(arrays: Iterable[Any], axis: int = 0, **_: object) -> Shaped:
    parts = list(arrays)
    dims = list(_shape(parts[0]))
    dims[axis] = sum(_shape(p)[axis] for p in parts)
    return Shaped(dims, np.result_type(*(_operand(p) for p in parts)))


def _repeat(a: Any, repeats: int, axis: int | None = None) -> Shaped:
    if axis is None:
        return Shaped((math.prod(_shape(a)) * repeats,), _dtype(a))
    dims = list(_shape(a))
    dims[axis] *= repeats
    return Shaped(dims, _dtype(a))


def _where(condition: Any, x: Any, y: Any) -> Shaped:
    return Shaped(_broadcast(_shape(condition), _shape(x), _shape(y)),
                  np.result_type(_operand(x), _operand(y)))


def _arange(*args: Any, dtype: Any = None, **_: object) -> Shaped:
    start, stop, step = (0, int(args[0]), 1) if len(args) == 1 else (
        int(args[0]), int(args[1]), int(args[2]) if len(args) > 2 else 1)
    return Shaped((_span(start, stop, step),), _INDEX if dtype is None else dtype)


def _span(start: int, stop: int, step: int) -> int:
    """len(range(start, stop, step)) for any size (len() stops at 2^63)."""
    if step > 0:
        return max(0, (stop - start + step - 1) // step)
    return max(0, (start - stop - step - 1) // -step)


def _same(a: Any, *_: object, dtype: Any = None, **__: object) -> Any:
    return a.copy() if dtype is None else a.astype(dtype)


def _clip(a: Any, low: Any, high: Any, **_: object) -> Shaped:
    return Shaped(_broadcast(_shape(a), _shape(low), _shape(high)), _dtype(a))


def _broadcast_to(a: Any, shape: Iterable[int], **_: object) -> Shaped:
    if type(a) is Shaped:
        dims = tuple(shape)
        own = a._steps()
        lead = len(dims) - len(own)
        steps = tuple(0 if i < lead or a.shape[i - lead] != n else own[i - lead]
                      for i, n in enumerate(dims))
        return a._view(dims, steps)  # a read-only view, strides of 0 where broadcast
    return Shaped(shape, _dtype(a))


def _result_type(*args: Any) -> np.dtype:
    return np.result_type(*(_operand(a) for a in args))


def _copyto(dst: Any, src: Any, **_: object) -> None:
    _broadcast(_shape(src), _shape(dst))


_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.empty: _new, np.zeros: _new, np.ones: _new, np.full: _full,
    np.empty_like: _like, np.zeros_like: _like, np.ones_like: _like,
    np.concatenate: _concatenate, np.repeat: _repeat, np.where: _where, np.arange: _arange,
    np.nan_to_num: _same, np.clip: _clip,
    np.broadcast_to: _broadcast_to, np.result_type: _result_type, np.copyto: _copyto,
    np.reshape: lambda a, shape, **_: a.reshape(shape),
    np.transpose: lambda a, axes=None: a.transpose(*(axes or ())),
    np.swapaxes: lambda a, x, y: a.swapaxes(x, y),
}
