"""Array creation: NumPy's constructors, made aware of traced values.

`zeros_like(x)` and friends stage a broadcast when x is traced; `array`/`asarray` of a list that
holds traced values stacks them. The buffer constructors (zeros, ones, empty, full, eye,
identity, and zeros_like & co. of plain arrays) called while a function is traced return a
traced constant, so that JAX's `fnp.zeros(n).at[idx].add(v)` works there (and writing into the
buffer in place is a clear MutationError); outside any trace they return NumPy's arrays, which
have no `.at` (use NumPy's in-place assignment there). Index and coordinate data (arange,
indices, tri, array, asarray) are NumPy arrays, constants of the program (arange with a traced
float start or step is differentiated in them).
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from .. import ir
from ..ir import Traced, aval_of
from ..primitives.base import (broadcast_in_dim_p, broadcast_to, convert, export, full, has_traced,
                               is_traced, record)
from ..primitives.shape import reshape, stack_nested
from ._shape import _static


@export(numpy=np.array, traced=("object",))
def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    """np.array; a (nested) list containing traced values is stacked.

        >>> fnp.array([x[0], 2 * x[1]])
    """
    out = stack_nested(object)
    if dtype is not None:
        out = convert(out, dtype)
    nd = aval_of(out).ndim
    return reshape(out, (1,) * (ndmin - nd) + aval_of(out).shape) if ndmin > nd else out


def _as_traced_array(np_fn):
    def asarray(a, dtype=None, *args, **kwargs):
        """np.asarray (np.asanyarray, np.ascontiguousarray); traced values pass through
        (converted if dtype is given)."""
        return array(a, dtype=dtype)
    asarray.__name__ = asarray.__qualname__ = np_fn.__name__
    return export(np_fn.__name__, numpy=np_fn, traced=("a",))(asarray)


asarray = _as_traced_array(np.asarray)
asanyarray = _as_traced_array(np.asanyarray)
ascontiguousarray = _as_traced_array(np.ascontiguousarray)


def _staged(arr):
    """A new constant array while a function is traced: staged into the trace (a broadcast of
    its one value, or the constant itself), so that it is a traced value like those computed
    from the arguments -- `fnp.zeros(n).at[idx].add(v)` works, and writing into it in place
    is a clear MutationError instead of a NumPy buffer silently holding a traced value's
    number. Outside any trace, NumPy's array itself."""
    if ir.current_trace() is None or arr.dtype.kind not in "biufc":
        return arr
    flat = arr.reshape(-1)
    if arr.size and (flat[:1].view(np.uint8) == flat.view(np.uint8).reshape(arr.size, -1)).all():
        return full(arr.shape, flat[0], arr.dtype)
    return record(broadcast_in_dim_p, arr, shape=arr.shape, dims=tuple(range(arr.ndim)))


def _staging(np_fn):
    """NumPy's creation function np_fn, its result staged (see _staged)."""
    return lambda *args, **kwargs: _staged(np_fn(*args, **kwargs))


def _like(name, np_fn, value):
    def like(a, dtype=None, order="K", subok=True, shape=None):
        """An array of the shape and dtype of `a` filled with a constant (np.zeros_like etc.)."""
        av = aval_of(a)
        return full(av.shape if shape is None else shape, value, dtype or av.dtype)
    like.__name__ = like.__qualname__ = name
    return export(name, numpy=_staging(np_fn), traced=("a",), check=is_traced)(like)


zeros_like = _like("zeros_like", np.zeros_like, 0)
ones_like = _like("ones_like", np.ones_like, 1)
empty_like = _like("empty_like", np.zeros_like, 0)   # zeros, not uninitialised memory


@export(numpy=_staging(np.full_like), traced=("a", "fill_value"), check=is_traced)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    """np.full_like; fill_value may be traced."""
    av = aval_of(a)
    dt = np.dtype(dtype) if dtype is not None else av.dtype
    shp = av.shape if shape is None else tuple(np.atleast_1d(shape))
    if isinstance(fill_value, Traced):
        return broadcast_to(convert(fill_value, dt), shp)
    return full(shp, fill_value, dt)


@export("full", numpy=_staging(np.full), traced=("fill_value",), check=is_traced)
def full_(shape, fill_value, dtype=None, order="C"):
    """np.full; fill_value may be traced (the shape may not).

        >>> fnp.full((3,), x)               # x, x, x; the gradient sums back to x
    """
    shp = tuple(np.atleast_1d(shape).tolist()) if np.ndim(shape) else (operator.index(shape),)
    dt = aval_of(fill_value).dtype if dtype is None else np.dtype(dtype)
    return broadcast_to(convert(fill_value, dt), shp)


@export(numpy=np.copy, traced=("a",), check=is_traced)
def copy(a, order="K", subok=False):
    """np.copy; a traced value is returned as it is (traced arrays are never mutated)."""
    return a


def _from_shapes(fn, staged=False):
    """NumPy's constructor from shapes; a traced size (fnp.arange(n) with n traced) is its
    value in the call being traced (dynamic Python), refused inside fg.jit. staged: the new
    array is staged into an active trace (_staged)."""
    @functools.wraps(fn)
    def constructor(*args, **kwargs):
        if has_traced(args, kwargs):
            args = _static(args, f"{fn.__name__}: a size argument")
            kwargs = _static(kwargs, f"{fn.__name__}: a size argument")
        out = fn(*args, **kwargs)
        if staged and fn is np.empty:       # undefined values: staged as zeros
            out = np.zeros_like(out) if ir.current_trace() is not None else out
        return _staged(out) if staged else out
    return constructor


# the buffers (zeros, ones, empty, full, eye, identity, the *_like of plain arrays) are staged
# into an active trace; index and coordinate data (arange, indices, tri, array, asarray) stay
# NumPy arrays: they are used as indices and shapes, which are static
for _name in ("zeros", "ones", "empty", "eye", "identity", "indices", "tri"):
    export(_name)(_from_shapes(getattr(np, _name),
                               staged=_name in ("zeros", "ones", "empty", "eye", "identity")))
del _name

_static_arange = _from_shapes(np.arange)


@export()
def arange(start_or_stop, /, stop=None, step=1, *, dtype=None, device=None, like=None):
    """np.arange. A traced integer bound is its value in the call being traced (the length is
    the shape); traced float start and step are differentiated: the values are NumPy's
    start + i * ((start + step) - start), the length comes from the values of the call.

        >>> fnp.arange(t0, t1, dt)          # d/d t0 is 1, d/d dt is i
    """
    bounds = (start_or_stop, stop, step)
    floats = [isinstance(b, Traced) and aval_of(b).dtype.kind in "fc" for b in bounds]
    if not any(floats) or (dtype is not None and np.dtype(dtype).kind not in "fc"):
        kw = {} if dtype is None else {"dtype": dtype}
        return _static_arange(start_or_stop, stop, step, **kw)
    start, stop = (0.0, start_or_stop) if stop is None else (start_or_stop, stop)
    n = len(_static_arange(*_static((start, stop, step), "arange: a bound")))
    dt = np.result_type(*[aval_of(b).dtype if isinstance(b, Traced) else b
                          for b in (start, stop, step)])
    dt = np.dtype(dtype) if dtype is not None else dt
    start = convert(start, dt) if isinstance(start, Traced) else np.asarray(start, dt)
    delta = (start + step) - start
    return convert(start + delta * np.arange(n, dtype=dt), dt)


@export(numpy=lambda x, dtype, /, *, copy=True: np.asarray(x).astype(dtype, copy=copy),
        traced=("x",), check=is_traced)     # (np.astype itself: NumPy >= 2.1, arrays only)
def astype(x, dtype, /, *, copy=True):
    """np.astype / x.astype(dtype): convert the dtype (the gradient converts back).

        >>> x.astype(np.float32)
    """
    return convert(x, dtype)
