"""More of NumPy's array functions, compositions: the window functions (bartlett, blackman,
hamming, hanning, kaiser: constants of their length), diag_indices(_from), asfortranarray,
resize, trim_zeros, apply_along_axis and apply_over_axes (func applied slice by slice while
tracing: the program holds one copy of func per slice), histogram_bin_edges, fromfunction,
einsum_path, and NumPy's in-place writers (fill_diagonal, put, putmask, place, copyto:
NumPy's on plain arrays, a MutationError saying what to write on traced ones).
"""
from __future__ import annotations

import math

import numpy as np

from .._errors import MutationError, user_frame, where
from ..ir import Traced, aval_of
from ..primitives.base import NAMESPACE, export
from ..primitives.shape import (_asarray, _axis, concatenate, expand_dims, moveaxis, ravel,
                                reshape, stack)
from ._shape import _static


def _window(np_fn):
    def window(M, *args):
        """NumPy's window of length M (a constant: M fixes the shape)."""
        values = [_static(v, f"np.{np_fn.__name__}'s arguments") for v in (M, *args)]
        return np_fn(*values)
    window.__name__ = window.__qualname__ = np_fn.__name__
    window.__doc__ = (f"np.{np_fn.__name__}: the window as a constant array (its length fixes "
                      f"the shape).\n\n        >>> w = fnp.{np_fn.__name__}(8"
                      + (", 5.0" if np_fn is np.kaiser else "") + ")\n")
    return export(np_fn.__name__, numpy=np_fn)(window)


bartlett, blackman, hamming, hanning, kaiser = (_window(f) for f in (
    np.bartlett, np.blackman, np.hamming, np.hanning, np.kaiser))


@export(numpy=np.diag_indices)
def diag_indices(n, ndim=2):
    """np.diag_indices: the index arrays of the main diagonal (n and ndim are sizes).

        >>> A[fnp.diag_indices(3)]
    """
    return np.diag_indices(int(_static(n, "np.diag_indices(n)")), int(ndim))


@export(numpy=np.diag_indices_from, traced=("arr",))
def diag_indices_from(arr):
    """np.diag_indices_from: diag_indices of a square array's size (its shape, not values).

        >>> x[fnp.diag_indices_from(x)]
    """
    shape = aval_of(arr).shape
    if len(shape) < 2 or len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return np.diag_indices(shape[0], len(shape))


@export(numpy=np.asfortranarray, traced=("a",))
def asfortranarray(a, dtype=None, *, like=None):
    """np.asfortranarray: a traced value has no memory layout, so it is returned as it is
    (converted if dtype is given); results are C or F ordered as NumPy's are.

        >>> fnp.asfortranarray(x)
    """
    a = _asarray(a)
    return a if dtype is None else a.astype(dtype)


@export(numpy=np.resize, traced=("a",))
def resize(a, new_shape):
    """np.resize: a's entries repeated (C order) to fill new_shape.

        >>> fnp.resize(x, (2, 5))
    """
    a = ravel(_asarray(a))
    shape = (int(new_shape),) if np.ndim(new_shape) == 0 else tuple(int(d) for d in new_shape)
    n, size = aval_of(a).shape[0], math.prod(shape)
    if n == 0 or size == 0:
        return np.zeros(shape, aval_of(a).dtype)
    reps = -(-size // n)
    return reshape(concatenate([a] * reps)[:size], shape)


@export(numpy=np.trim_zeros, traced=("filt",))
def trim_zeros(filt, trim="fb", axis=None):
    """np.trim_zeros of a 1-D array: the zeros at the front ('f') and back ('b') removed. The
    length comes from the values (read from the call being traced).

        >>> fnp.trim_zeros(x)
    """
    f = _asarray(filt)
    nz = np.flatnonzero(np.asarray(_static(f != 0, "fnp.trim_zeros(filt): where the zeros are")))
    if not nz.size:
        return f[:0]
    lo = int(nz[0]) if "f" in trim.lower() else 0
    hi = int(nz[-1]) + 1 if "b" in trim.lower() else aval_of(f).shape[0]
    return f[lo:hi]


@export(numpy=np.apply_along_axis, traced=("arr",))
def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """np.apply_along_axis: func1d(1-D slice) for every slice along axis, the results stacked
    where the axis was (func1d's output may have any shape, the same for every slice).

        >>> fnp.apply_along_axis(lambda v: fnp.sum(v ** 2), 0, x)
    """
    arr = _asarray(arr)
    axis = _axis(axis, aval_of(arr).ndim)
    moved = moveaxis(arr, axis, -1)
    batch = aval_of(moved).shape[:-1]
    flat = reshape(moved, (-1, aval_of(moved).shape[-1]))
    outs = [_asarray(func1d(flat[i], *args, **kwargs)) for i in range(aval_of(flat).shape[0])]
    out = reshape(stack(outs), batch + aval_of(outs[0]).shape)
    k = aval_of(outs[0]).ndim
    for j in range(k):                     # the result's axes go where `axis` was
        out = moveaxis(out, len(batch) + j, axis + j)
    return out


@export(numpy=np.apply_over_axes, traced=("a",))
def apply_over_axes(func, a, axes):
    """np.apply_over_axes: a = func(a, axis) for each axis in turn, keeping the dimension
    (func's result, if it dropped the axis, gets it back with length 1).

        >>> fnp.apply_over_axes(fnp.sum, x, [0, 1])
    """
    a = _asarray(a)
    for ax in np.atleast_1d(axes).tolist():
        nd = aval_of(a).ndim
        ax = _axis(ax, nd)
        out = func(a, ax)
        if not isinstance(out, Traced):
            out = np.asarray(out)
        a = out if aval_of(out).ndim == nd else expand_dims(out, ax)
    return a


# ---- NumPy's in-place writers: NumPy's on plain arrays; a traced array is never written -----

def _in_place(np_fn, target, instead):
    def writer(*args, **kwargs):
        raise MutationError(f"np.{np_fn.__name__} writes into `{target}` in place"
                            f"{where(user_frame())}; traced arrays are immutable (where PyTorch "
                            f"writes in place, make a new array). Write {instead} instead.")
    writer.__name__ = writer.__qualname__ = np_fn.__name__
    writer.__doc__ = (f"np.{np_fn.__name__} on plain arrays; on a traced array a MutationError "
                      f"that says what to write: {instead}.\n\n"
                      f"        >>> y = {instead}\n")
    return export(np_fn.__name__, numpy=np_fn)(writer)


fill_diagonal = _in_place(np.fill_diagonal, "a", "a.at[fnp.diag_indices_from(a)].set(val)")
put = _in_place(np.put, "a", "a.ravel().at[ind].set(v).reshape(a.shape)")
putmask = _in_place(np.putmask, "a", "fnp.where(mask, values, a)")
place = _in_place(np.place, "arr", "fnp.where(mask, vals, arr) (vals broadcast)")
copyto = _in_place(np.copyto, "dst", "fnp.where(where, src, dst) or src itself")


@export(numpy=np.histogram_bin_edges, traced=("a", "range", "weights"))
def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """np.histogram_bin_edges: the edges fnp.histogram would use (a number of bins or given
    edges); differentiable in range and, without it, in a's min and max.

        >>> fnp.histogram_bin_edges(x, bins=4)
    """
    return NAMESPACE["histogram"](a, bins, range, None, weights)[1]


@export(numpy=np.fromfunction)
def fromfunction(function, shape, *, dtype=float, like=None, **kwargs):
    """np.fromfunction: function(*index arrays) over a grid of the given shape (function may
    use traced values it closes over).

        >>> fnp.fromfunction(lambda i, j: x[i] * j, (3, 4))
    """
    return function(*np.indices(tuple(int(d) for d in shape), dtype=dtype), **kwargs)


@export(numpy=np.einsum_path)
def einsum_path(subscripts, *operands, optimize="greedy", einsum_call=False):
    """np.einsum_path: NumPy's contraction order for these shapes (it reads only shapes).

        >>> path, report = fnp.einsum_path("ij,jk,kl->il", A, B, C)
    """
    shaped = [np.zeros(aval_of(o).shape, aval_of(o).dtype) for o in operands]
    return np.einsum_path(subscripts, *shaped, optimize=optimize, einsum_call=einsum_call)


put_along_axis = _in_place(np.put_along_axis, "arr",
                           "arr.at[fnp.indices(...) with indices on axis].set(values), or "
                           "fnp.where(one_hot_mask, values, arr)")


def _triangle_indices(np_fn):
    def indices(n, k=0, m=None):
        """The row and column indices of a triangle (sizes, not values)."""
        return np_fn(int(_static(n, f"np.{np_fn.__name__}(n)")), int(_static(k, "k")),
                     None if m is None else int(_static(m, "m")))
    indices.__name__ = indices.__qualname__ = np_fn.__name__
    indices.__doc__ = (f"np.{np_fn.__name__}: the index arrays of a triangle of an n x m "
                       f"matrix (constants).\n\n        >>> A[fnp.{np_fn.__name__}(3)]\n")
    return export(np_fn.__name__, numpy=np_fn)(indices)


tril_indices, triu_indices = _triangle_indices(np.tril_indices), _triangle_indices(np.triu_indices)


@export(numpy=np.tril_indices_from, traced=("arr",))
def tril_indices_from(arr, k=0):
    """np.tril_indices_from: tril_indices of arr's (2-D) shape.

        >>> x[fnp.tril_indices_from(x)]
    """
    rows, cols = aval_of(arr).shape
    return np.tril_indices(rows, int(k), cols)


@export(numpy=np.triu_indices_from, traced=("arr",))
def triu_indices_from(arr, k=0):
    """np.triu_indices_from: triu_indices of arr's (2-D) shape.

        >>> x[fnp.triu_indices_from(x, 1)]
    """
    rows, cols = aval_of(arr).shape
    return np.triu_indices(rows, int(k), cols)


@export("ix_", numpy=np.ix_)
def ix_(*args):
    """np.ix_: 1-D index arrays (traced ones too) shaped to index an outer product of rows,
    columns, ...

        >>> x[fnp.ix_(np.array([0, 2]), np.array([1, 3]))]
    """
    out = []
    for k, a in enumerate(args):
        a = _asarray(a)
        if aval_of(a).dtype == bool:
            a = np.flatnonzero(np.asarray(_static(a, "np.ix_ of a boolean mask")))
        shape = [1] * len(args)
        shape[k] = aval_of(a).shape[0]
        out.append(reshape(a, tuple(shape)))
    return tuple(out)


@export(numpy=np.ravel_multi_index, traced=("multi_index",))
def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """np.ravel_multi_index: flat indices of index tuples into an array of shape dims (traced
    indices: mode 'wrap' or 'clip' applied, 'raise' checks nothing, as jax.numpy's).

        >>> fnp.ravel_multi_index((i, j), (3, 4))
    """
    dims = tuple(int(d) for d in dims)
    strides = np.cumprod((1,) + dims[::-1][:-1])[::-1] if order == "C" else np.cumprod((1,) + dims[:-1])
    flat = 0
    for idx, d, s in zip(multi_index, dims, strides):
        idx = _asarray(idx)
        if mode == "wrap":
            idx = idx % d
        elif mode == "clip":
            idx = NAMESPACE["clip"](idx, 0, d - 1)
        flat = flat + idx * int(s)
    return flat


@export(numpy=np.unravel_index, traced=("indices",))
def unravel_index(indices, shape, order="C"):
    """np.unravel_index: the index tuple of each flat index into an array of `shape`.

        >>> rows, cols = fnp.unravel_index(flat, (3, 4))
    """
    shape = tuple(int(d) for d in shape)
    idx = _asarray(indices)
    out = []
    for d in (shape[::-1] if order == "C" else shape):
        out.append(idx % d)
        idx = idx // d
    return tuple(out[::-1] if order == "C" else out)


@export(numpy=np.unwrap, traced=("p", "discont", "period"))
def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """np.unwrap: phases with jumps larger than discont (default period / 2) moved by
    multiples of period, so the result varies continuously; derivative 1 where it is smooth.

        >>> fnp.unwrap(fnp.angle(z))
    """
    p = _asarray(p)
    axis = _axis(axis, aval_of(p).ndim)
    dd = NAMESPACE["diff"](p, axis=axis)
    discont = period / 2 if discont is None else discont
    half = period / 2
    ddmod = (dd + half) % period - half
    ddmod = NAMESPACE["where"]((ddmod == -half) & (dd > 0), half, ddmod)
    correct = NAMESPACE["where"](NAMESPACE["absolute"](dd) < discont, 0.0, ddmod - dd)
    first = NAMESPACE["take"](p, np.arange(1), axis=axis) * 0.0
    cum = NAMESPACE["cumsum"](concatenate([first, correct], axis=axis), axis=axis)
    return p + cum


# ---- questions about dtypes and memory (a traced value has a dtype and shape, no memory) ------

@export(numpy=np.isdtype)
def isdtype(dtype, kind):
    """np.isdtype (a question about a dtype: no array is read).

        >>> fnp.isdtype(x.dtype, "real floating")
    """
    return np.isdtype(dtype, kind)


@export(numpy=np.iterable, traced=("y",))
def iterable(y):
    """np.iterable: a traced array is iterable unless 0-d.

        >>> fnp.iterable(x)
    """
    return aval_of(y).ndim > 0


@export(numpy=np.isfortran, traced=("a",))
def isfortran(a):
    """np.isfortran: False for a traced value (it has no memory layout).

        >>> fnp.isfortran(x)
    """
    return False


@export(numpy=np.shares_memory, traced=("a", "b"))
def shares_memory(a, b, /, max_work=None):
    """np.shares_memory: traced values share no memory (they are immutable values).

        >>> fnp.shares_memory(x, y)
    """
    return False


@export(numpy=np.may_share_memory, traced=("a", "b"))
def may_share_memory(a, b, /, max_work=None):
    """np.may_share_memory: False for traced values.

        >>> fnp.may_share_memory(x, y)
    """
    return False


@export(numpy=np.common_type)
def common_type(*arrays):
    """np.common_type from the arrays' dtypes (traced ones too).

        >>> fnp.common_type(x, np.float32(1.0))
    """
    return np.common_type(*[np.zeros(0, aval_of(a).dtype) for a in arrays])


@export(numpy=np.min_scalar_type, traced=("a",))
def min_scalar_type(a, /):
    """np.min_scalar_type: an array's own dtype; a traced scalar's value is read where known.

        >>> fnp.min_scalar_type(x)
    """
    if aval_of(a).ndim:
        return aval_of(a).dtype
    return np.min_scalar_type(_static(a, "np.min_scalar_type(a) of a traced scalar"))


@export(numpy=np.require, traced=("a",))
def require(a, dtype=None, requirements=None, *, like=None):
    """np.require: a traced value meets every layout requirement; dtype converts.

        >>> fnp.require(x, np.float64, ["C"])
    """
    a = _asarray(a)
    return a if dtype is None else a.astype(dtype)


@export(numpy=np.frexp)
def frexp(x, /):
    """np.frexp: (mantissa in [0.5, 1) with x's sign, integer exponent), x = m * 2**e; the
    mantissa's derivative is 2**-e (e is an integer: none). Zeros, infinities and NaN as NumPy.

        >>> m, e = fnp.frexp(x)
    """
    where_, ldexp = NAMESPACE["where"], NAMESPACE["ldexp"]
    x = _asarray(x)
    dt = aval_of(x).dtype if aval_of(x).dtype.kind == "f" else np.dtype(np.float64)
    x = x.astype(dt)
    a = NAMESPACE["absolute"](x)
    plain = (a > 0) & NAMESPACE["isfinite"](x)
    safe = where_(plain, a, 1.0)
    e = NAMESPACE["floor"](NAMESPACE["log2"](safe)).astype(np.int32) + 1
    m = ldexp(safe, -e)                     # exact; one correction for log2's rounding
    e = where_(m >= 1.0, e + 1, where_(m < 0.5, e - 1, e))
    m = ldexp(safe, -e)
    return (where_(plain, NAMESPACE["copysign"](m, x), x),
            where_(plain, e, 0).astype(np.int32))
