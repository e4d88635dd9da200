"""NumPy functions that rearrange arrays: split, roll, tile, repeat, diag, triu/tril, rot90,
append, insert, delete. Compositions of the primitives of primitives/shape.py and indexing.py,
so their derivatives of every order come from those rules. Shape-determining arguments must be
concrete.
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir import aval_of
from ..primitives.base import (broadcast_in_dim, convert, export, full, reshape as _reshape,
                               transpose as _transpose)
from ..primitives.elementwise import where as _where
from ..primitives.indexing import at, getitem, slice_axis
from ..primitives.shape import _asarray, _axis, concatenate, flip, ravel, reshape
from ._shape import _static


def _take(x, idx, axis):
    """x indexed along `axis` by a concrete integer array (one gather)."""
    return getitem(x, (slice(None),) * axis + (np.asarray(idx, dtype=np.intp),))


# ---- split ----------------------------------------------------------------------------------

def _split_points(n, indices_or_sections, equal):
    indices_or_sections = _static(indices_or_sections, "split: `indices_or_sections`")
    if np.ndim(indices_or_sections) == 0:
        sections = operator.index(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        if equal and n % sections:
            raise ValueError("array split does not result in an equal division")
        each, extras = divmod(n, sections)
        sizes = [0] + extras * [each + 1] + (sections - extras) * [each]
        return np.cumsum(sizes).tolist()
    return [0] + [operator.index(i) for i in indices_or_sections] + [n]


def _split(ary, indices_or_sections, axis, equal):
    ary = _asarray(ary)
    nd = aval_of(ary).ndim
    axis = _axis(axis, nd)
    n = aval_of(ary).shape[axis]
    pts = _split_points(n, indices_or_sections, equal)
    return [slice_axis(ary, axis, a, b) for a, b in zip(pts[:-1], pts[1:])]


@export(numpy=np.split, traced=("ary", "indices_or_sections"))
def split(ary, indices_or_sections, axis=0):
    """np.split into equal sections, or at the given indices; returns a list.

        >>> a, b, c = fnp.split(x, 3, axis=1)
    """
    return _split(ary, indices_or_sections, axis, True)


@export(numpy=np.array_split, traced=("ary", "indices_or_sections"))
def array_split(ary, indices_or_sections, axis=0):
    """np.array_split: like split, but sections may differ in size by one.

        >>> parts = fnp.array_split(x, 3)
    """
    return _split(ary, indices_or_sections, axis, False)


@export(numpy=np.hsplit, traced=("ary", "indices_or_sections"))
def hsplit(ary, indices_or_sections):
    """np.hsplit: split along axis 1 (axis 0 for 1-D arrays).

        >>> left, right = fnp.hsplit(A, 2)
    """
    nd = aval_of(_asarray(ary)).ndim
    if nd == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return _split(ary, indices_or_sections, 1 if nd > 1 else 0, True)


@export(numpy=np.vsplit, traced=("ary", "indices_or_sections"))
def vsplit(ary, indices_or_sections):
    """np.vsplit: split along axis 0 (arrays of 2 or more dimensions).

        >>> top, bottom = fnp.vsplit(A, 2)
    """
    if aval_of(_asarray(ary)).ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return _split(ary, indices_or_sections, 0, True)


@export(numpy=np.dsplit, traced=("ary", "indices_or_sections"))
def dsplit(ary, indices_or_sections):
    """np.dsplit: split along axis 2 (arrays of 3 or more dimensions).

        >>> a, b = fnp.dsplit(x, 2)
    """
    if aval_of(_asarray(ary)).ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return _split(ary, indices_or_sections, 2, True)


# ---- roll, tile, repeat -------------------------------------------------------------------

@export(numpy=np.roll, traced=("a", "shift"))
def roll(a, shift, axis=None):
    """np.roll: shift elements cyclically (shift and axis may be tuples; axis=None rolls the
    flattened array).

        >>> fnp.roll(x, 1, axis=0)
    """
    shift = _static(shift, "roll: `shift`")
    a = _asarray(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), aval_of(a).shape)
    shape = aval_of(a).shape
    b = np.broadcast(np.asarray(shift), np.asarray(axis))
    if b.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = {}
    for sh, ax in b:
        ax = _axis(ax, len(shape))
        shifts[ax] = shifts.get(ax, 0) + int(sh)
    for ax, sh in sorted(shifts.items()):
        n = shape[ax]
        s = sh % n if n else 0
        if s:
            a = concatenate([slice_axis(a, ax, n - s, n), slice_axis(a, ax, 0, n - s)], axis=ax)
    return a


@export(numpy=np.tile, traced=("A", "reps"))
def tile(A, reps):
    """np.tile: repeat the whole array `reps` times along each axis.

        >>> fnp.tile(x, (2, 1))
    """
    reps = _static(reps, "tile: `reps`")
    A = _asarray(A)
    reps = tuple(operator.index(r) for r in np.atleast_1d(reps))
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    shape = aval_of(A).shape
    n = max(len(reps), len(shape))
    reps = (1,) * (n - len(reps)) + reps
    shape = (1,) * (n - len(shape)) + tuple(shape)
    A = _reshape(A, shape)
    if all(r == 1 for r in reps):
        return A
    # put each repeat count in front of its axis, broadcast, and merge the pairs
    big = broadcast_in_dim(A, sum(((r, s) for r, s in zip(reps, shape)), ()),
                           tuple(range(1, 2 * n, 2)), force=True)
    return _reshape(big, tuple(r * s for r, s in zip(reps, shape)))


@export(numpy=np.repeat, traced=("a", "repeats"))
def repeat(a, repeats, axis=None):
    """np.repeat: repeat each element (`repeats` an int, or concrete per-element counts).

        >>> fnp.repeat(x, 2, axis=0);  fnp.repeat(x, [1, 0, 3])
    """
    repeats = _static(repeats, "repeat: `repeats`")
    a = _asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    shape = aval_of(a).shape
    axis = _axis(axis, len(shape))
    n = shape[axis]
    r = np.asarray(repeats)
    if r.dtype.kind not in "iub":
        raise TypeError(f"Cannot cast array data from {r.dtype!r} to dtype('int64') according "
                        "to the rule 'safe'")
    if r.size == 1 and r.ndim <= 1:
        k = int(r.reshape(()))
        if k < 0:
            raise ValueError("negative dimensions are not allowed")
        if k == 1:
            return a
        nd = len(shape)
        big = broadcast_in_dim(a, shape[:axis + 1] + (k,) + shape[axis + 1:],
                               tuple(range(axis + 1)) + tuple(range(axis + 2, nd + 1)), force=True)
        return _reshape(big, shape[:axis] + (n * k,) + shape[axis + 1:])
    return _take(a, np.repeat(np.arange(n), r), axis)


# ---- diagonals and triangles --------------------------------------------------------------

@export(numpy=np.diag, traced=("v",))
def diag(v, k=0):
    """np.diag: the k-th diagonal of a 2-D array, or a 2-D array with v on its k-th diagonal.

        >>> fnp.diag(fnp.diag(A))
    """
    v = _asarray(v)
    k = operator.index(k)
    av = aval_of(v)
    if av.ndim == 1:
        m = av.shape[0]
        n = m + abs(k)
        rows, cols = np.arange(m) + max(0, -k), np.arange(m) + max(0, k)
        return at(full((n, n), 0, av.dtype))[rows, cols].add(v)
    if av.ndim == 2:
        s0, s1 = av.shape
        m = max(0, min(s0 - max(0, -k), s1 - max(0, k)))
        rows, cols = np.arange(m) + max(0, -k), np.arange(m) + max(0, k)
        return getitem(v, (rows, cols))
    raise ValueError("Input must be 1- or 2-d.")


@export(numpy=np.diagflat, traced=("v",))
def diagflat(v, k=0):
    """np.diagflat: a 2-D array with the flattened input on its k-th diagonal.

        >>> fnp.diagflat(x, k=1)
    """
    return diag(ravel(v), k)


def _triangle(m, k, lower):
    m = _asarray(m)
    av = aval_of(m)
    if av.ndim == 0:
        raise ValueError(f"{'tril' if lower else 'triu'} requires an array of at least 1 "
                         "dimension")
    k = operator.index(k)
    zero = np.zeros((), av.dtype)
    if lower:
        return _where(np.tri(*av.shape[-2:], k=k, dtype=bool), m, zero)
    return _where(np.tri(*av.shape[-2:], k=k - 1, dtype=bool), zero, m)


@export(numpy=np.tril, traced=("m",))
def tril(m, k=0):
    """np.tril: zero the elements above the k-th diagonal (of the last two axes).

        >>> fnp.tril(A, -1)
    """
    return _triangle(m, k, True)


@export(numpy=np.triu, traced=("m",))
def triu(m, k=0):
    """np.triu: zero the elements below the k-th diagonal (of the last two axes).

        >>> fnp.triu(A, 1)
    """
    return _triangle(m, k, False)


@export()
def rot90(m, k=1, axes=(0, 1)):
    """np.rot90: rotate by 90 degrees k times, from the first axis towards the second.

        >>> fnp.rot90(A, 2)
    """
    m = _asarray(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    nd = aval_of(m).ndim
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == nd:
        raise ValueError("Axes must be different.")
    if axes[0] >= nd or axes[0] < -nd or axes[1] >= nd or axes[1] < -nd:
        raise ValueError(f"Axes={axes} out of range for array of ndim={nd}.")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return flip(m, axes)
    perm = list(range(nd))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return _transpose(flip(m, axes[1]), perm)
    return flip(_transpose(m, perm), axes[1])


# ---- append, insert, delete ---------------------------------------------------------------

@export(numpy=np.append, traced=("arr", "values"))
def append(arr, values, axis=None):
    """np.append: concatenate values to the end (flattening both when axis is None).

        >>> fnp.append(x, [0.0, 1.0])
    """
    arr, values = _asarray(arr), _asarray(values)
    if axis is None:
        if aval_of(arr).ndim != 1:
            arr = ravel(arr)
        values = ravel(values)
        axis = aval_of(arr).ndim - 1
    return concatenate((arr, values), axis=axis)


def _gather_flat(x, ids):
    """ravel(x)[ids] for a concrete integer array of flat positions."""
    return getitem(ravel(x), np.asarray(ids, dtype=np.intp))


@export(numpy=np.delete, traced=("arr", "obj"))
def delete(arr, obj, axis=None):
    """np.delete: drop the entries at concrete positions `obj` (int, slice, list or mask).

        >>> fnp.delete(x, [0, 2], axis=1)
    """
    obj = _static(obj, "delete: `obj`")
    arr = _asarray(arr)
    shape = aval_of(arr).shape
    # NumPy applied to the flat positions of arr says where each kept element comes from
    ids = np.delete(np.arange(aval_of(arr).size).reshape(shape), obj, axis)
    return _gather_flat(arr, ids)


@export(numpy=np.insert, traced=("arr", "obj", "values"))
def insert(arr, obj, values, axis=None):
    """np.insert: insert values before the concrete positions `obj`.

        >>> fnp.insert(x, 1, y, axis=0)
    """
    obj = _static(obj, "insert: `obj`")
    arr, values = _asarray(arr), _asarray(values)
    a, v = aval_of(arr), aval_of(values)
    # NumPy applied to position labels (arr: 0..N-1, values: -1, -2, ...) says where every
    # element of the result comes from; then one gather from [ravel(arr), ravel(values)]
    labels = np.insert(np.arange(a.size).reshape(a.shape), obj,
                       -1 - np.arange(v.size).reshape(v.shape), axis)
    ids = np.where(labels >= 0, labels, a.size - 1 - labels)
    src = concatenate([ravel(arr), ravel(convert(values, a.dtype))])
    return getitem(src, np.asarray(ids, dtype=np.intp))


__all__ = ["split", "array_split", "hsplit", "vsplit", "dsplit", "roll", "tile", "repeat", "diag", "diagflat", "tril", "triu", "rot90", "append", "insert", "delete"]
