"""Shape primitives: concatenate and rev, with the functions that bind them (concatenate, stack,
flip), and the shape functions that rules and the other families use: reshape (C or F order),
ravel, moveaxis, expand_dims, and the argument helpers funcgrad.numpy's compositions share.

Reshape, transpose and broadcast_in_dim are primitives of base.py, because every family's rules
use them; slicing and index arrays (gather, scatter) are in indexing.py. The rest of NumPy's
shape API is written as compositions of these primitives in funcgrad/numpy/ (_shape.py,
_arrange.py, _pad.py), so its derivatives, of every order, come from their few rules. On plain
NumPy arrays every function returns what NumPy does.
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir import Aval, Traced, aval_of
from .base import (NAMESPACE, convert, define, dtype_or_pytype, export, has_traced, next_axis,
                   normalize_axes, plus1, reshape as _reshape, shape_error, shifted_batch,
                   transpose as _transpose)
from .elementwise import clip, remainder
from .indexing import _as_index_array, getitem, slice_axis


# ---- helpers ------------------------------------------------------------------------------

def _is_seq(x):
    return isinstance(x, (list, tuple))


def _asarray(x):
    """Traced values pass through; a list holding traced values is stacked; else np.asarray."""
    if isinstance(x, Traced):
        return x
    if _is_seq(x) and has_traced(*x):
        return stack_nested(x)
    return np.asarray(x)


def _axis(axis, ndim):
    """One axis -> non-negative int, with NumPy's AxisError."""
    ax = operator.index(axis)
    if not -ndim <= ax < ndim:
        raise np.exceptions.AxisError(f"axis {ax} is out of bounds for array of dimension {ndim}")
    return ax % ndim


def _axes_in_order(axes, ndim, name="axis"):
    """int or sequence -> list of non-negative ints in the given order (no duplicates)."""
    axes = [_axis(a, ndim) for a in ((axes,) if np.ndim(axes) == 0 else axes)]
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis in `{name}` argument")
    return axes


def result_dtype(*xs):
    return np.result_type(*[dtype_or_pytype(x) for x in xs])


# ---- reshape and axis permutations ----------------------------------------------------------

def _infer_shape(shape, size):
    if np.ndim(shape) == 0:
        shape = (shape,)
    shape = tuple(operator.index(d) for d in shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if any(d < -1 for d in shape):
        raise ValueError("negative dimensions not allowed")
    if shape.count(-1) == 1:
        rest = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if rest == 0 or size % rest:
            raise shape_error(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // rest if d == -1 else d for d in shape)
    return shape


@export()
def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """np.reshape, with -1 inferred; order 'C' or 'F'.

        >>> fnp.reshape(x, (2, -1))
    """
    shape = newshape if shape is None else shape
    if shape is None:
        raise TypeError("reshape() missing required argument 'shape'")
    a = _asarray(a)
    if not isinstance(a, Traced):   # (by hand: newshape= is gone from NumPy 2.4, copy= new in 2.1)
        return np.reshape(a, shape, order=order) if copy is None else \
            np.reshape(a, shape, order=order, copy=copy)
    shape = _infer_shape(shape, aval_of(a).size)
    if order in ("C", "A", "K", None):
        return _reshape(a, shape)
    if order == "F":   # Fortran order: reverse the axes, reshape in C order, reverse back
        t = _transpose(a, tuple(range(aval_of(a).ndim))[::-1])
        r = _reshape(t, shape[::-1])
        return _transpose(r, tuple(range(len(shape)))[::-1])
    raise ValueError(f"order must be one of 'C', 'F', 'A' (got {order!r})")


@export("ravel", "flatten", numpy=np.ravel)
def ravel(a, order="C"):
    """np.ravel: the elements as a 1-D array, in C (or 'F') order.

        >>> fnp.ravel(x)
    """
    a = _asarray(a)
    return reshape(a, (-1,), "F" if order == "F" else "C")


@export()
def moveaxis(a, source, destination):
    """np.moveaxis (source and destination may be sequences).

        >>> fnp.moveaxis(x, 0, -1)
    """
    a = _asarray(a)
    nd = aval_of(a).ndim
    src = _axes_in_order(source, nd, "source")
    dst = _axes_in_order(destination, nd, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _transpose(a, order)


@export()
def expand_dims(a, axis):
    """np.expand_dims (axis may be a tuple).

        >>> fnp.expand_dims(x, (0, -1))
    """
    a = _asarray(a)
    shape = list(aval_of(a).shape)
    axes = normalize_axes(axis, len(shape) + len(np.atleast_1d(axis)))
    for ax in axes:
        shape.insert(ax, 1)
    return _reshape(a, shape)


# ---- concatenate --------------------------------------------------------------------------

def _concat_abstract(*avals, axis):
    base = avals[0]
    for a in avals[1:]:
        if a.ndim != base.ndim or a.dtype != base.dtype or any(
                a.shape[i] != base.shape[i] for i in range(a.ndim) if i != axis):
            raise ValueError(f"concatenate: shapes {[x.shape for x in avals]} do not match "
                             f"outside axis {axis}")
    shape = list(base.shape)
    shape[axis] = sum(a.shape[axis] for a in avals)
    return Aval(shape, base.dtype)


def _concat_vjp(ct, *xs, out, axis):
    res, start = [], 0
    for x in xs:
        n = aval_of(x).shape[axis]
        res.append(slice_axis(ct, axis, start, start + n))
        start += n
    return tuple(res)


concatenate_p = define("concatenate", exact=True, moves=True,
                       impl=lambda *xs, axis: np.concatenate(xs, axis=axis),
                       abstract=_concat_abstract, vjp=_concat_vjp,
                       batch=shifted_batch("axis", next_axis))


def _numpy_or_listed(np_fn, name):
    """np_fn for plain sequences; a generator (NumPy refuses one) is listed first and the call
    made again, so that traced values it yields reach funcgrad's function."""
    def call(arrays, *args, **kwargs):
        if isinstance(arrays, (list, tuple, np.ndarray)):
            return np_fn(arrays, *args, **kwargs)
        return NAMESPACE[name](list(arrays), *args, **kwargs)
    return call


@export("concatenate", "concat", numpy=_numpy_or_listed(np.concatenate, "concatenate"))
def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """np.concatenate; `arrays` may mix traced values, arrays and lists (axis=None ravels).

        >>> fnp.concatenate([x, y], axis=1)
    """
    if isinstance(arrays, Traced):      # a traced array is the sequence of its rows
        arrays = list(arrays)
    arrays = [_asarray(a) for a in arrays]
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    nd = aval_of(arrays[0]).ndim
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    if any(aval_of(a).ndim != nd for a in arrays):
        raise shape_error("all the input arrays must have the same number of dimensions, got "
                          + ", ".join(str(aval_of(a).shape) for a in arrays))
    axis = _axis(axis, nd)
    dt = np.dtype(dtype) if dtype is not None else result_dtype(*arrays)
    for a in arrays:
        if not np.can_cast(aval_of(a).dtype, dt, casting=casting):
            raise TypeError(f"Cannot cast array data from {aval_of(a).dtype!r} to {dt!r} "
                            f"according to the rule {casting!r}")
    arrays = [convert(a, dt) for a in arrays]
    try:
        _concat_abstract(*[aval_of(a) for a in arrays], axis=axis)
    except ValueError as e:
        raise shape_error(str(e)) from None
    if len(arrays) == 1:
        return arrays[0]
    return concatenate_p.bind(*arrays, axis=axis)


@export(numpy=_numpy_or_listed(np.stack, "stack"))
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """np.stack: join along a new axis.

        >>> fnp.stack([x, y], axis=-1)
    """
    if isinstance(arrays, Traced):
        arrays = list(arrays)
    arrays = [_asarray(a) for a in arrays]
    shapes = {aval_of(a).shape for a in arrays}
    if len(shapes) != 1:
        raise shape_error(f"all input arrays must have the same shape, got {sorted(shapes)}")
    nd = len(shapes.pop()) + 1
    axis = _axis(axis, nd)
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis, dtype=dtype,
                       casting=casting)


def stack_nested(obj):
    """What np.array makes of obj, where obj is traced or a (nested) list or tuple holding
    traced values: those stacked into one traced array (fnp.array without dtype or ndmin)."""
    if isinstance(obj, Traced):
        return obj
    if isinstance(obj, (list, tuple)) and has_traced(obj):
        return stack([stack_nested(o) for o in obj])
    return np.array(obj)


# ---- flip --------------------------------------------------------------------------------

rev_p = define("rev", exact=True, moves=True, impl=lambda x, *, axes: np.flip(x, axes),
               abstract=lambda a, *, axes: a,
               vjp=lambda ct, x, *, out, axes: (rev_p.bind(ct, axes=axes),),
               batch=shifted_batch("axes", plus1))


@export(numpy=np.flip)
def flip(m, axis=None):
    """np.flip.

        >>> fnp.flip(x, axis=0)
    """
    m = _asarray(m)
    axes = normalize_axes(axis, aval_of(m).ndim)
    return rev_p.bind(m, axes=axes) if axes else m


# ---- take, take_along_axis ---------------------------------------------------------------
# Gathers along one axis with NumPy's argument handling; here rather than in indexing.py because
# they flatten with ravel (axis=None), and searchsorted's sorter uses take.

def _index_operand(indices):
    if isinstance(indices, Traced):
        return indices
    if isinstance(indices, list):
        return _as_index_array(indices)
    return np.asarray(indices)


@export(numpy=np.take)
def take(a, indices, axis=None, out=None, mode="raise"):
    """np.take: elements at `indices` along `axis` (of the flattened array when axis is None);
    indices may be traced. mode 'raise' (out-of-range concrete indices are an IndexError),
    'wrap' or 'clip'.

        >>> fnp.take(x, [0, 2], axis=1)
    """
    a, idx = _asarray(a), _index_operand(indices)
    if axis is None:
        a, axis = ravel(a), 0
    nd = aval_of(a).ndim
    axis = normalize_axes(axis, nd)[0]
    n = aval_of(a).shape[axis]
    if mode in ("wrap", "clip") and aval_of(idx).size:
        if n == 0:
            raise IndexError("cannot do a non-empty take from an empty axes.")
        if isinstance(idx, Traced):
            idx = remainder(idx, n) if mode == "wrap" else clip(idx, 0, n - 1)
        else:
            idx = np.mod(idx, n) if mode == "wrap" else np.clip(idx, 0, n - 1)
    elif mode not in ("raise", "wrap", "clip", None):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    return getitem(a, (slice(None),) * axis + (idx,))


@export(numpy=np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    """np.take_along_axis (sorting indices, argmax with keepdims, ...); indices may be traced.

        >>> fnp.take_along_axis(x, fnp.argsort(x, axis=1), axis=1)
    """
    arr, indices = _asarray(arr), _index_operand(indices)
    if aval_of(indices).dtype.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    shape = aval_of(arr).shape
    if axis is None:
        if aval_of(indices).ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        arr, axis, shape = ravel(arr), 0, (aval_of(arr).size,)
    nd = len(shape)
    axis = normalize_axes(axis, nd)[0]
    ishape = aval_of(indices).shape
    if len(ishape) != nd:
        raise shape_error("take_along_axis: `indices` and `arr` must have the same number of "
                          "dimensions")
    idx = []
    for d in range(nd):
        if d == axis:
            idx.append(indices)
        else:
            idx.append(np.arange(shape[d]).reshape([-1 if k == d else 1 for k in range(nd)]))
    return getitem(arr, tuple(idx))


__all__ = ["reshape", "ravel", "moveaxis", "expand_dims", "concatenate", "stack", "flip"]
