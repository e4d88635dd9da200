"""NumPy's shape functions that are compositions of primitives: shape queries, transpose and the
other axis permutations, squeeze, broadcast_to/broadcast_arrays, atleast_1d/2d/3d, unstack, the
stacking family (hstack, vstack, dstack, column_stack, block), fliplr/flipud.

The primitives they are built from (reshape, transpose, broadcast_in_dim, concatenate, rev,
gather) and the shape functions that rules use (reshape, ravel, moveaxis, expand_dims,
concatenate, stack, flip) are in funcgrad/primitives/. On plain NumPy arrays every function
returns what NumPy does.

Shape-determining arguments (split points, shifts, repeats, pad widths, insert/delete positions,
here and in _arrange.py and _pad.py) must be concrete: `_static` raises ConcretizationError for a
traced one.
"""
from __future__ import annotations

import operator

import numpy as np

from .._errors import ConcretizationError, user_frame, where
from ..ir import Traced, aval_of
from ..primitives.base import (broadcast_to as _broadcast_to, export, has_traced, is_traced,
                               normalize_axes, reshape as _reshape, transpose as _transpose)
from ..primitives.indexing import getitem
from ..primitives.shape import _asarray, _axes_in_order, _axis, concatenate, flip, reshape


def _static(x, what):
    """A shape-determining argument as concrete values: traced values inside it are replaced
    by their values in the call being traced (funcgrad.tracer: dynamic Python); where there
    are none (fg.vmap, loop bodies), a clear refusal."""
    if not has_traced(x):
        return x

    def concrete(v):
        if isinstance(v, Traced):
            value = v.known_value()
            if value is None:
                raise ConcretizationError(
                    f"{what} is a traced value{where(user_frame())}; it determines the shape "
                    "of the result, so it must be known when the function is traced (inside "
                    "fg.vmap, a loop body or an fg.cond branch it stands for many values). Pass "
                    "a Python int or a NumPy array that is not an argument being traced (close "
                    "over it, or make it static with static_argnums).")
            return value[()] if value.ndim == 0 else value
        if isinstance(v, (list, tuple)):
            return type(v)(concrete(u) for u in v)
        if isinstance(v, dict):
            return {k: concrete(u) for k, u in v.items()}
        return v
    return concrete(x)


# ---- shape queries ------------------------------------------------------------------------

@export("shape", numpy=np.shape, check=is_traced)
def shape_(a):
    """np.shape: the shape tuple (known while tracing).

        >>> fnp.shape(x)
    """
    return aval_of(a).shape


@export("ndim", numpy=np.ndim, check=is_traced)
def ndim_(a):
    """np.ndim.

        >>> fnp.ndim(x)
    """
    return aval_of(a).ndim


@export("size", numpy=np.size, traced=("a",), check=is_traced)
def size_(a, axis=None):
    """np.size (of the whole array, or along `axis`).

        >>> fnp.size(x, axis=0)
    """
    av = aval_of(a)
    return av.size if axis is None else av.shape[_axis(axis, av.ndim)]


# ---- axis permutations ---------------------------------------------------------------------

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


# ---- squeeze, broadcasting, atleast_nd ------------------------------------------------------

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


# ---- stacking and unstacking ----------------------------------------------------------------

@export(numpy=lambda x, /, *, axis=0: np.unstack(x, axis=axis))   # (NumPy >= 2.1 has it)
def unstack(x, /, *, axis=0):
    """np.unstack: the tuple of slices along `axis` (the inverse of stack).

        >>> a, b, c = fnp.unstack(x, axis=1)
    """
    x = _asarray(x)
    nd = aval_of(x).ndim
    if nd == 0:
        raise ValueError("Input array must be at least 1-d.")
    ax = _axis(axis, nd)
    return tuple(getitem(x, (slice(None),) * ax + (i,)) for i in range(aval_of(x).shape[ax]))


def _as_tuple(tup):
    return list(tup) if isinstance(tup, Traced) else tup


@export(numpy=np.hstack, traced=("tup",))
def hstack(tup, *, dtype=None, casting="same_kind"):
    """np.hstack: concatenate along axis 1 (axis 0 for 1-D arrays).

        >>> fnp.hstack([x, y])
    """
    tup = _as_tuple(tup)
    arrs = [atleast_1d(a) for a in tup]
    axis = 0 if arrs and aval_of(arrs[0]).ndim == 1 else 1
    return concatenate(arrs, axis=axis, dtype=dtype, casting=casting)


@export("vstack", "row_stack", numpy=np.vstack, traced=("tup",))
def vstack(tup, *, dtype=None, casting="same_kind"):
    """np.vstack: stack rows (1-D arrays become rows).

        >>> fnp.vstack([x, y])
    """
    tup = _as_tuple(tup)
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype, casting=casting)


@export(numpy=np.dstack, traced=("tup",))
def dstack(tup):
    """np.dstack: concatenate along axis 2.

        >>> fnp.dstack([x, y])
    """
    tup = _as_tuple(tup)
    return concatenate([atleast_3d(a) for a in tup], axis=2)


@export(numpy=np.column_stack, traced=("tup",))
def column_stack(tup):
    """np.column_stack: 1-D arrays become columns.

        >>> fnp.column_stack([x, y])
    """
    tup = _as_tuple(tup)
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


@export(numpy=np.block, traced=("arrays",))
def block(arrays):
    """np.block: assemble an array from nested lists of blocks.

        >>> fnp.block([[A, B], [C, D]])
    """
    depth, max_nd = _block_depth(arrays)
    nd = max(depth, max_nd)

    def build(x, level):
        if level == depth:
            x = _asarray(x)
            shape = aval_of(x).shape
            return reshape(x, (1,) * (nd - len(shape)) + tuple(shape))
        return concatenate([build(c, level + 1) for c in x], axis=-(depth - level))
    return build(arrays, 0)


# ---- fliplr, flipud -------------------------------------------------------------------------

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


__all__ = ["transpose", "matrix_transpose", "swapaxes", "rollaxis", "squeeze", "broadcast_to",
           "broadcast_arrays", "atleast_1d", "atleast_2d", "atleast_3d", "unstack", "hstack",
           "vstack", "dstack", "column_stack", "block", "fliplr", "flipud"]
