"""Shape primitives and the NumPy shape functions built on them.

Primitives: concatenate, rev (flip), pad (constant). Reshape, transpose and broadcast_in_dim live
in base.py because every family's rules use them. The rest of NumPy's shape API is written here
as compositions, so its derivatives come from those few rules.
"""
from __future__ import annotations

import numpy as np

from ..ir import Aval, Traced, aval_of
from .base import (broadcast_in_dim, broadcast_to as _broadcast_to, convert, define, export,
                   normalize_axes, reshape as _reshape, shape_error, transpose as _transpose)


def _is_seq(x):
    return isinstance(x, (list, tuple))


def result_dtype(*xs):
    from .base import dtype_or_pytype
    return np.result_type(*[dtype_or_pytype(x) for x in xs])


@export()
def reshape(a, shape=None, order="C", *, newshape=None):
    """np.reshape (C order), with -1 inferred.

        >>> fnp.reshape(x, (2, -1))
    """
    shape = newshape if shape is None else shape
    if order != "C":
        raise NotImplementedError("reshape: only order='C' is supported")
    shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    size = aval_of(a).size
    if shape.count(-1) == 1:
        rest = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if rest == 0 or size % rest:
            raise shape_error(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // rest if d == -1 else d for d in shape)
    return _reshape(a, shape)


@export("ravel", "flatten")
def ravel(a, order="C"):
    """np.ravel: a 1-D view of the data in C order.

        >>> fnp.ravel(x)
    """
    return reshape(a, (-1,), order)


@export()
def transpose(a, axes=None):
    """np.transpose: reverse the axes, or permute them by `axes`.

        >>> fnp.transpose(x, (1, 0, 2))
    """
    nd = aval_of(a).ndim
    perm = tuple(range(nd))[::-1] if axes is None else tuple(int(p) % max(nd, 1) for p in axes)
    if sorted(perm) != list(range(nd)):
        raise ValueError(f"axes {axes} don't match array of dimension {nd}")
    return _transpose(a, perm)


@export()
def swapaxes(a, axis1, axis2):
    """np.swapaxes.

        >>> fnp.swapaxes(x, 0, -1)
    """
    nd = aval_of(a).ndim
    perm = list(range(nd))
    i, j = normalize_axes(axis1, nd)[0], normalize_axes(axis2, nd)[0]
    perm[i], perm[j] = perm[j], perm[i]
    return _transpose(a, perm)


@export()
def moveaxis(a, source, destination):
    """np.moveaxis.

        >>> fnp.moveaxis(x, 0, -1)
    """
    nd = aval_of(a).ndim
    src = [int(s) % nd for s in np.atleast_1d(source)]
    dst = [int(d) % nd for d in np.atleast_1d(destination)]
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _transpose(a, order)


@export()
def expand_dims(a, axis):
    """np.expand_dims (axis may be a tuple).

        >>> fnp.expand_dims(x, 0)
    """
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
    shape = aval_of(a).shape
    if axis is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    else:
        axes = normalize_axes(axis, len(shape))
        for ax in axes:
            if shape[ax] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return _reshape(a, [d for i, d in enumerate(shape) if i not in axes])


@export()
def broadcast_to(array, shape):
    """np.broadcast_to (the result is a new traced array, not a view).

        >>> fnp.broadcast_to(x, (4, 3))
    """
    shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    return _broadcast_to(array, shape, force=isinstance(array, Traced))


@export()
def broadcast_arrays(*args):
    """np.broadcast_arrays.

        >>> a, b = fnp.broadcast_arrays(x, y)
    """
    shape = np.broadcast_shapes(*[aval_of(a).shape for a in args])
    return [broadcast_to(a, shape) for a in args]


@export()
def atleast_1d(*arys):
    """np.atleast_1d."""
    res = [a if aval_of(a).ndim >= 1 else reshape(a, (1,)) for a in arys]
    return res[0] if len(res) == 1 else res


@export()
def atleast_2d(*arys):
    """np.atleast_2d."""
    res = []
    for a in arys:
        nd = aval_of(a).ndim
        res.append(a if nd >= 2 else reshape(a, (1, -1) if nd == 1 else (1, 1)))
    return res[0] if len(res) == 1 else res


@export()
def atleast_3d(*arys):
    """np.atleast_3d."""
    res = []
    for a in arys:
        shape = aval_of(a).shape
        new = {0: (1, 1, 1), 1: (1, shape[0] if shape else 1, 1),
               2: tuple(shape) + (1,)}.get(len(shape), shape)
        res.append(reshape(a, new))
    return res[0] if len(res) == 1 else res


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
                       abstract=_concat_abstract, vjp=_concat_vjp)


@export("concatenate", "concat")
def concatenate(arrays, axis=0, dtype=None):
    """np.concatenate; `arrays` may mix traced values, arrays and lists.

        >>> fnp.concatenate([x, y], axis=1)
    """
    arrays = [a if isinstance(a, Traced) else np.asarray(a) for a in arrays]
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
    axis = normalize_axes(axis, nd)[0]
    dt = np.dtype(dtype) if dtype is not None else result_dtype(*arrays)
    arrays = [convert(a, dt) for a in arrays]
    if not any(isinstance(a, Traced) for a in arrays):
        return np.concatenate(arrays, axis=axis)
    try:
        _concat_abstract(*[aval_of(a) for a in arrays], axis=axis)
    except ValueError as e:
        raise shape_error(str(e)) from None
    if len(arrays) == 1:
        return arrays[0]
    return concatenate_p.bind(*arrays, axis=axis)


@export()
def stack(arrays, axis=0):
    """np.stack: join along a new axis.

        >>> fnp.stack([x, y], axis=-1)
    """
    arrays = list(arrays)
    shapes = {aval_of(a).shape for a in arrays}
    if len(shapes) != 1:
        raise shape_error(f"all input arrays must have the same shape, got {sorted(shapes)}")
    nd = len(shapes.pop()) + 1
    axis = normalize_axes(axis, nd)[0]
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis)


@export()
def hstack(tup):
    """np.hstack."""
    arrs = atleast_1d(*tup) if len(tup) > 1 else [atleast_1d(tup[0])]
    return concatenate(arrs, axis=0 if aval_of(arrs[0]).ndim == 1 else 1)


@export("vstack", "row_stack")
def vstack(tup):
    """np.vstack."""
    arrs = atleast_2d(*tup) if len(tup) > 1 else [atleast_2d(tup[0])]
    return concatenate(arrs, axis=0)


@export()
def dstack(tup):
    """np.dstack."""
    arrs = atleast_3d(*tup) if len(tup) > 1 else [atleast_3d(tup[0])]
    return concatenate(arrs, axis=2)


@export()
def column_stack(tup):
    """np.column_stack."""
    arrs = [a if aval_of(a).ndim >= 2 else reshape(a, (-1, 1)) for a in tup]
    return concatenate(arrs, axis=1)


# ---- flip ---------------------------------------------------------------------------------

rev_p = define("rev", impl=lambda x, *, axes: np.flip(x, axes),
               abstract=lambda a, *, axes: a,
               vjp=lambda ct, x, *, out, axes: (rev_p.bind(ct, axes=axes),))


@export()
def flip(m, axis=None):
    """np.flip.

        >>> fnp.flip(x, axis=0)
    """
    axes = normalize_axes(axis, aval_of(m).ndim)
    if not axes:
        return m
    if not isinstance(m, Traced):
        return np.flip(m, axes)
    return rev_p.bind(m, axes=axes)


@export()
def fliplr(m):
    """np.fliplr."""
    return flip(m, 1)


@export()
def flipud(m):
    """np.flipud."""
    return flip(m, 0)


__all__ = ["reshape", "ravel", "transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze",
           "broadcast_to", "concatenate", "stack", "flip", "broadcast_in_dim"]
