"""NumPy's shape functions, traceable and differentiable.

Primitives defined here: concatenate and rev (flip). Reshape, transpose and broadcast_in_dim live
in base.py because every family's rules use them; slicing and index arrays (gather, scatter) live
in indexing.py. The rest of NumPy's shape API is written as compositions of those primitives
(here, in funcgrad/numpy/_arrange.py: split, roll, tile, repeat, diag, triu/tril, rot90,
append/insert/delete, and in funcgrad/numpy/_pad.py), so its derivatives, of every order, come
from their few rules.

Shape-determining arguments (split points, shifts, repeats, pad widths, insert/delete positions)
must be concrete: a traced one raises ConcretizationError. On plain NumPy arrays every function
returns what NumPy does.
"""
from __future__ import annotations

import operator

import numpy as np

from .._errors import ConcretizationError, MutationError, user_frame, where
from ..ir import Aval, Traced, aval_of
from ..tree_util import tree_leaves
from .base import (broadcast_to as _broadcast_to, convert, define, export, next_axis, normalize_axes, plus1, reshape as _reshape, shape_error, shifted_batch, transpose as _transpose)


# ---- helpers ------------------------------------------------------------------------------

def _is_seq(x):
    return isinstance(x, (list, tuple))


def _traced(*xs):
    """Whether any argument is traced, looking inside lists, tuples and dicts."""
    for x in xs:
        if isinstance(x, Traced):
            return True
        if _is_seq(x) and _traced(*x):
            return True
        if isinstance(x, dict) and _traced(*x.values()):
            return True
    return False


def _asarray(x):
    """Traced values pass through; a list holding traced values is stacked; else np.asarray."""
    if isinstance(x, Traced):
        return x
    if _is_seq(x) and _traced(*x):
        return stack_nested(x)
    return np.asarray(x)


def _static(x, what):
    """Refuse a traced shape-determining argument with a clear message."""
    if _traced(x):
        raise ConcretizationError(
            f"{what} is a traced value{where(user_frame())}; it determines the shape of the "
            "result, so it must be known when the function is traced. Pass a Python int or a "
            "NumPy array that is not an argument being traced (close over it, or make it static).")
    return x


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


def _slice(x, axis, start, stop, step=None):
    from .indexing import slice_axis
    return slice_axis(x, axis, start, stop, step)


def _take(x, idx, axis):
    """x indexed along `axis` by a concrete integer array (one gather)."""
    from .indexing import getitem
    return getitem(x, (slice(None),) * axis + (np.asarray(idx, dtype=np.intp),))


def _where(cond, x, y):
    from .elementwise import where as where_
    return where_(cond, x, y)


def result_dtype(*xs):
    from .base import dtype_or_pytype
    return np.result_type(*[dtype_or_pytype(x) for x in xs])


# ---- shape queries ------------------------------------------------------------------------

@export("shape")
def shape_(a):
    """np.shape: the shape tuple (known while tracing).

        >>> fnp.shape(x)
    """
    return aval_of(a).shape if isinstance(a, Traced) else np.shape(a)


@export("ndim")
def ndim_(a):
    """np.ndim.

        >>> fnp.ndim(x)
    """
    return aval_of(a).ndim if isinstance(a, Traced) else np.ndim(a)


@export("size")
def size_(a, axis=None):
    """np.size (of the whole array, or along `axis`).

        >>> fnp.size(x, axis=0)
    """
    if not isinstance(a, Traced):
        return np.size(a, axis)
    av = aval_of(a)
    return av.size if axis is None else av.shape[_axis(axis, av.ndim)]


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
    if not isinstance(a, Traced):
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


@export("ravel", "flatten")
def ravel(a, order="C"):
    """np.ravel: the elements as a 1-D array, in C (or 'F') order.

        >>> fnp.ravel(x)
    """
    a = _asarray(a)
    if not isinstance(a, Traced):
        return np.ravel(a, order=order)
    return reshape(a, (-1,), "F" if order == "F" else "C")


@export("transpose", "permute_dims")
def transpose(a, axes=None):
    """np.transpose: reverse the axes, or permute them by `axes`.

        >>> fnp.transpose(x, (1, 0, 2))
    """
    a = _asarray(a)
    nd = aval_of(a).ndim
    if axes is None:
        perm = tuple(range(nd))[::-1]
    else:
        axes = tuple(axes)
        if len(axes) != nd:
            raise ValueError("axes don't match array")
        perm = tuple(_axes_in_order(axes, nd, "axes"))
    return _transpose(a, perm)


@export()
def matrix_transpose(x):
    """np.matrix_transpose: swap the last two axes.

        >>> fnp.matrix_transpose(A)    # A.mT
    """
    if aval_of(x).ndim < 2:
        raise ValueError("matrix_transpose requires an array of at least 2 dimensions")
    return swapaxes(x, -1, -2)


@export()
def swapaxes(a, axis1, axis2):
    """np.swapaxes.

        >>> fnp.swapaxes(x, 0, -1)
    """
    a = _asarray(a)
    nd = aval_of(a).ndim
    perm = list(range(nd))
    i, j = _axis(axis1, nd), _axis(axis2, nd)
    perm[i], perm[j] = perm[j], perm[i]
    return _transpose(a, perm)


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
def rollaxis(a, axis, start=0):
    """np.rollaxis (prefer moveaxis).

        >>> fnp.rollaxis(x, 2)
    """
    a = _asarray(a)
    n = aval_of(a).ndim
    axis = _axis(axis, n)
    start = operator.index(start)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(f"start {start} is out of bounds for array of dimension {n}")
    if axis < start:
        start -= 1
    if axis == start:
        return a
    order = list(range(n))
    order.remove(axis)
    order.insert(start, axis)
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


@export()
def squeeze(a, axis=None):
    """np.squeeze.

        >>> fnp.squeeze(x, axis=0)
    """
    a = _asarray(a)
    shape = aval_of(a).shape
    if axis is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    else:
        axes = normalize_axes(axis, len(shape))
        for ax in axes:
            if shape[ax] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not equal "
                                 "to one")
    return _reshape(a, [d for i, d in enumerate(shape) if i not in axes])


@export()
def broadcast_to(array, shape, subok=False):
    """np.broadcast_to (the result is a new traced array, not a view).

        >>> fnp.broadcast_to(x, (4, 3))
    """
    array = _asarray(array)
    shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    return _broadcast_to(array, shape, force=isinstance(array, Traced))


@export()
def broadcast_arrays(*args, subok=False):
    """np.broadcast_arrays (a tuple, as NumPy 2 returns).

        >>> a, b = fnp.broadcast_arrays(x, y)
    """
    args = [_asarray(a) for a in args]
    shape = np.broadcast_shapes(*[aval_of(a).shape for a in args])
    return tuple(broadcast_to(a, shape) for a in args)


export("broadcast_shapes")(np.broadcast_shapes)


def _one_or_tuple(res):
    return res[0] if len(res) == 1 else tuple(res)


@export()
def atleast_1d(*arys):
    """np.atleast_1d.

        >>> fnp.atleast_1d(s)       # shape () -> (1,)
    """
    res = []
    for a in arys:
        a = _asarray(a)
        res.append(a if aval_of(a).ndim >= 1 else reshape(a, (1,)))
    return _one_or_tuple(res)


@export()
def atleast_2d(*arys):
    """np.atleast_2d.

        >>> fnp.atleast_2d(v)       # shape (n,) -> (1, n)
    """
    res = []
    for a in arys:
        a = _asarray(a)
        nd = aval_of(a).ndim
        res.append(a if nd >= 2 else reshape(a, (1, -1) if nd == 1 else (1, 1)))
    return _one_or_tuple(res)


@export()
def atleast_3d(*arys):
    """np.atleast_3d.

        >>> fnp.atleast_3d(A)       # shape (m, n) -> (m, n, 1)
    """
    res = []
    for a in arys:
        a = _asarray(a)
        shape = aval_of(a).shape
        new = {0: (1, 1, 1), 1: (1, shape[0] if shape else 1, 1),
               2: tuple(shape) + (1,)}.get(len(shape), shape)
        res.append(reshape(a, new))
    return _one_or_tuple(res)


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
    from .indexing import slice_axis
    res, start = [], 0
    for x in xs:
        n = aval_of(x).shape[axis]
        res.append(slice_axis(ct, axis, start, start + n))
        start += n
    return tuple(res)


concatenate_p = define("concatenate", impl=lambda *xs, axis: np.concatenate(xs, axis=axis),
                       abstract=_concat_abstract, vjp=_concat_vjp,
                       batch=shifted_batch("axis", next_axis))


def _no_out(name, out):
    if out is not None:
        raise MutationError(f"np.{name}(..., out=...) writes in place into an array"
                            f"{where(user_frame())}; traced arrays are immutable. Use the return "
                            "value instead.")


@export("concatenate", "concat")
def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """np.concatenate; `arrays` may mix traced values, arrays and lists (axis=None ravels).

        >>> fnp.concatenate([x, y], axis=1)
    """
    if isinstance(arrays, Traced):      # a traced array is the sequence of its rows
        arrays = list(arrays)
    arrays = [_asarray(a) for a in arrays]
    if not _traced(*arrays):
        return np.concatenate(arrays, axis=axis, out=out, dtype=dtype, casting=casting)
    _no_out("concatenate", out)
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


@export()
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """np.stack: join along a new axis.

        >>> fnp.stack([x, y], axis=-1)
    """
    if isinstance(arrays, Traced):
        arrays = list(arrays)
    arrays = [_asarray(a) for a in arrays]
    if not _traced(*arrays):
        return np.stack(arrays, axis=axis, out=out, dtype=dtype, casting=casting)
    _no_out("stack", out)
    shapes = {aval_of(a).shape for a in arrays}
    if len(shapes) != 1:
        raise shape_error(f"all input arrays must have the same shape, got {sorted(shapes)}")
    nd = len(shapes.pop()) + 1
    axis = _axis(axis, nd)
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis, dtype=dtype,
                       casting=casting)


def has_tracer(obj):
    """Whether any leaf of the pytree obj is traced."""
    return any(isinstance(x, Traced) for x in tree_leaves(obj))


def stack_nested(obj):
    """What np.array makes of obj, where obj is traced or a (nested) list or tuple holding
    traced values: those stacked into one traced array (fnp.array without dtype or ndmin)."""
    if isinstance(obj, Traced):
        return obj
    if isinstance(obj, (list, tuple)) and has_tracer(obj):
        return stack([stack_nested(o) for o in obj])
    return np.array(obj)


@export()
def unstack(x, /, *, axis=0):
    """np.unstack: the tuple of slices along `axis` (the inverse of stack).

        >>> a, b, c = fnp.unstack(x, axis=1)
    """
    x = _asarray(x)
    if not isinstance(x, Traced):
        return np.unstack(x, axis=axis)
    nd = aval_of(x).ndim
    if nd == 0:
        raise ValueError("Input array must be at least 1-d.")
    ax = _axis(axis, nd)
    from .indexing import getitem
    return tuple(getitem(x, (slice(None),) * ax + (i,)) for i in range(aval_of(x).shape[ax]))


def _as_tuple(tup):
    return list(tup) if isinstance(tup, Traced) else tup


@export()
def hstack(tup, *, dtype=None, casting="same_kind"):
    """np.hstack: concatenate along axis 1 (axis 0 for 1-D arrays).

        >>> fnp.hstack([x, y])
    """
    tup = _as_tuple(tup)
    if not _traced(*tup):
        return np.hstack(tup, dtype=dtype, casting=casting)
    arrs = [atleast_1d(a) for a in tup]
    axis = 0 if arrs and aval_of(arrs[0]).ndim == 1 else 1
    return concatenate(arrs, axis=axis, dtype=dtype, casting=casting)


@export("vstack", "row_stack")
def vstack(tup, *, dtype=None, casting="same_kind"):
    """np.vstack: stack rows (1-D arrays become rows).

        >>> fnp.vstack([x, y])
    """
    tup = _as_tuple(tup)
    if not _traced(*tup):
        return np.vstack(tup, dtype=dtype, casting=casting)
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype, casting=casting)


@export()
def dstack(tup):
    """np.dstack: concatenate along axis 2.

        >>> fnp.dstack([x, y])
    """
    tup = _as_tuple(tup)
    if not _traced(*tup):
        return np.dstack(tup)
    return concatenate([atleast_3d(a) for a in tup], axis=2)


@export()
def column_stack(tup):
    """np.column_stack: 1-D arrays become columns.

        >>> fnp.column_stack([x, y])
    """
    tup = _as_tuple(tup)
    if not _traced(*tup):
        return np.column_stack(tup)
    arrs = []
    for a in tup:
        a = _asarray(a)
        arrs.append(a if aval_of(a).ndim >= 2 else reshape(a, (-1, 1)))
    return concatenate(arrs, axis=1)


def _block_depth(x, path=()):
    if isinstance(x, tuple):
        raise TypeError(f"arrays is a tuple. Only lists can be used to arrange blocks, and "
                        f"np.block does not allow implicit conversion from tuple to ndarray "
                        f"(at arrays{''.join(f'[{i}]' for i in path)})")
    if isinstance(x, list):
        if not x:
            raise ValueError(f"List at arrays{''.join(f'[{i}]' for i in path)} cannot be empty")
        depths = [_block_depth(c, path + (i,)) for i, c in enumerate(x)]
        if len(set(d for d, _ in depths)) != 1:
            raise ValueError("List depths are mismatched in np.block")
        return depths[0][0] + 1, max(n for _, n in depths)
    return 0, aval_of(_asarray(x)).ndim


@export()
def block(arrays):
    """np.block: assemble an array from nested lists of blocks.

        >>> fnp.block([[A, B], [C, D]])
    """
    if not _traced(arrays):
        return np.block(arrays)
    depth, max_nd = _block_depth(arrays)
    nd = max(depth, max_nd)

    def build(x, level):
        if level == depth:
            x = _asarray(x)
            shape = aval_of(x).shape
            return reshape(x, (1,) * (nd - len(shape)) + tuple(shape))
        return concatenate([build(c, level + 1) for c in x], axis=-(depth - level))
    return build(arrays, 0)


# ---- flip, rot90 ------------------------------------------------------------------------------

rev_p = define("rev", impl=lambda x, *, axes: np.flip(x, axes),
               abstract=lambda a, *, axes: a,
               vjp=lambda ct, x, *, out, axes: (rev_p.bind(ct, axes=axes),),
               batch=shifted_batch("axes", plus1))


@export()
def flip(m, axis=None):
    """np.flip.

        >>> fnp.flip(x, axis=0)
    """
    m = _asarray(m)
    axes = normalize_axes(axis, aval_of(m).ndim)
    if not axes:
        return m
    if not isinstance(m, Traced):
        return np.flip(m, axes)
    return rev_p.bind(m, axes=axes)


@export()
def fliplr(m):
    """np.fliplr: reverse axis 1.

        >>> fnp.fliplr(A)
    """
    m = _asarray(m)
    if aval_of(m).ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


@export()
def flipud(m):
    """np.flipud: reverse axis 0.

        >>> fnp.flipud(A)
    """
    m = _asarray(m)
    if aval_of(m).ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


__all__ = ["reshape", "ravel", "transpose", "swapaxes", "moveaxis", "rollaxis", "expand_dims", "squeeze",
           "broadcast_to", "broadcast_arrays", "atleast_1d", "atleast_2d", "atleast_3d",
           "concatenate", "stack", "unstack", "hstack", "vstack", "dstack", "column_stack",
           "block", "flip", "fliplr", "flipud", "matrix_transpose"]
