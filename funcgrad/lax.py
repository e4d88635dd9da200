"""fg.lax: jax.lax's array building blocks that NumPy lacks, written with funcgrad operations
(so they differentiate, compile and batch like the rest): map (a loop over the leading axis),
associative_scan (a parallel prefix scan), top_k, dynamic_slice / dynamic_update_slice.
fg.map, fg.associative_scan and fg.top_k are the same functions.

    >>> fg.lax.associative_scan(fnp.add, np.arange(5.0))        # the cumulative sum
    array([ 0.,  1.,  3.,  6., 10.])
"""
from __future__ import annotations

import numpy as np

from . import numpy as fnp
from .higher_order import scan
from .ir import aval_of
from .tree_util import tree_flatten, tree_leaves, tree_unflatten

__all__ = ["map", "associative_scan", "top_k", "dynamic_slice", "dynamic_update_slice"]


def map(f, xs):   # noqa: A001  (jax.lax.map's name)
    """[f(x) for x in xs] along the leading axis of xs (a pytree), stacked: one compiled loop
    (fg.scan) instead of a batched program; use it where fg.vmap's batch would not fit in
    memory.

        >>> fg.lax.map(lambda row: fnp.sum(row ** 2), np.arange(6.0).reshape(3, 2))
        array([ 1., 13., 41.])
    """
    return scan(lambda carry, x: (carry, f(x)), None, xs)[1]


def associative_scan(fn, elems, reverse=False, axis=0):
    """All prefix combinations of elems along axis, fn an associative binary operation on
    pytrees of arrays applied elementwise: out[k] = fn(...fn(fn(e[0], e[1]), e[2])..., e[k]).
    Computed in ceil(log2 n) rounds of whole-array operations (Hillis and Steele), so an
    associative recurrence (a linear one, as in state-space models) runs without a sequential
    loop; reverse=True scans from the end.

        >>> fg.lax.associative_scan(fnp.maximum, np.array([1.0, 3.0, 2.0, 5.0]))   # running max
        array([1., 3., 3., 5.])
    """
    leaves, tree = tree_flatten(elems)
    leaves = [fnp.moveaxis(fnp.asarray(x), axis, 0) for x in leaves]
    if reverse:
        leaves = [fnp.flip(x, 0) for x in leaves]
    n = aval_of(leaves[0]).shape[0]
    if any(aval_of(x).shape[0] != n for x in leaves):
        raise ValueError("associative_scan: every leaf of elems needs the same length along axis")

    def combine(a, b):
        if reverse:                                     # (the operands in the original order)
            a, b = b, a
        return tree_leaves(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))
    shift = 1
    while shift < n:
        head = [x[:shift] for x in leaves]
        tail = combine([x[:-shift] for x in leaves], [x[shift:] for x in leaves])
        leaves = [fnp.concatenate([h, t], axis=0) for h, t in zip(head, tail)]
        shift *= 2
    if reverse:
        leaves = [fnp.flip(x, 0) for x in leaves]
    return tree_unflatten(tree, [fnp.moveaxis(x, 0, axis) for x in leaves])


def top_k(operand, k):
    """The k largest entries along the last axis, in decreasing order, and their indices
    (the lower index first among equal values); the values differentiate.

        >>> fg.lax.top_k(np.array([0.3, 2.0, -1.0, 2.0]), 2)
        (array([2., 2.]), array([1, 3]))
    """
    x = fnp.asarray(operand)
    n = aval_of(x).shape[-1]
    if not 0 <= int(k) <= n:
        raise ValueError(f"top_k: k must be between 0 and the last axis' length {n}, got {k}")
    idx = fnp.argsort(-x, axis=-1)[..., :int(k)]
    return fnp.take_along_axis(x, idx, axis=-1), idx


def dynamic_slice(operand, start_indices, slice_sizes):
    """operand[s0:s0 + k0, s1:s1 + k1, ...] with traced starts (clipped so the slice fits, as
    jax.lax.dynamic_slice) and static sizes.

        >>> fg.lax.dynamic_slice(np.arange(10.0), (8,), (3,))   # clipped: starts at 7
        array([7., 8., 9.])
    """
    x = fnp.asarray(operand)
    for axis, (s, k) in enumerate(zip(start_indices, slice_sizes)):
        n = aval_of(x).shape[axis]
        start = fnp.clip(fnp.asarray(s).astype(np.int64), 0, n - int(k))
        x = fnp.take(x, start + np.arange(int(k)), axis=axis)
    return x


def dynamic_update_slice(operand, update, start_indices):
    """operand with update written at start_indices (traced starts, clipped so it fits, as
    jax.lax.dynamic_update_slice); a new array (PyTorch: x[i:i + k] = update).

        >>> fg.lax.dynamic_update_slice(np.zeros(5), np.ones(2), (1,))
        array([0., 1., 1., 0., 0.])
    """
    x, u = fnp.asarray(operand), fnp.asarray(update)
    idx = []
    for axis, s in enumerate(start_indices):
        n, k = aval_of(x).shape[axis], aval_of(u).shape[axis]
        start = fnp.clip(fnp.asarray(s).astype(np.int64), 0, n - k)
        shape = [1] * aval_of(u).ndim
        shape[axis] = k
        idx.append(fnp.reshape(start + np.arange(k), shape))
    return x.at[tuple(idx)].set(u) if hasattr(x, "at") else _plain_update(x, u, idx)


def _plain_update(x, u, idx):
    out = np.array(x, copy=True)
    out[tuple(np.asarray(i) for i in idx)] = u
    return out
