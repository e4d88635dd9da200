"""NumPy's set operations of 1-d arrays besides unique and union1d (_counting.py):
intersect1d, setdiff1d and setxor1d. Their results' lengths depend on the values, so on traced
arrays they take jax.numpy's `size=` and `fill_value=` (the result has exactly size entries,
padded with fill_value, by default its smallest value), or read the length from the call
being traced where there is one; given size=, plain arrays get the padded result too.
"""
from __future__ import annotations

import numpy as np

from ..ir import aval_of
from ..primitives.base import convert, export, full
from ..primitives.elementwise import logical_and, where
from ..primitives.indexing import at
from ..primitives.reductions import argsort, cumsum, searchsorted, sum as _sum
from ..primitives.shape import _asarray, concatenate, ravel, take_along_axis
from ._counting import _size, _sorted_firsts, isin


def _kept(values, keep, size, fill_value, what):
    """The entries of the 1-d `values` where keep is True, in order, as an array of `size`
    entries (given, or the count read from the call being traced) padded with fill_value
    (default: the first kept entry); with each entry's slot in it (size: none) and the count."""
    if size is None:
        size = _size(_sum(convert(keep, np.int64)),
                     f"fnp.{what}: the number of values in the result (pass size= and "
                     "fill_value=)")
    size = int(size)
    rank = cumsum(convert(keep, np.int64)) - 1
    slot = where(logical_and(keep, rank < size), rank, size)   # the others: one spare entry
    out = at(full((size + 1,), 0, aval_of(values).dtype))[slot].set(values)[:size]
    count = _sum(convert(keep, np.int64))
    fill = (out[0] if size else 0) if fill_value is None else fill_value
    return where(np.arange(size) < count, out, fill), slot, count


@export(numpy=np.setdiff1d, traced=("ar1", "ar2"))
def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """np.setdiff1d: the distinct values of ar1 (sorted) that are not in ar2; with
    assume_unique=True, ar1's values in their own order. size=, fill_value= as fnp.unique.

        >>> fnp.setdiff1d(np.array([5, 1, 3, 1]), np.array([3]), size=3, fill_value=-1)
        array([ 1,  5, -1])
    """
    a = ravel(_asarray(ar1))
    if assume_unique:
        return _kept(a, isin(a, ar2, invert=True), size, fill_value, "setdiff1d")[0]
    _, s, first = _sorted_firsts(a)
    return _kept(s, logical_and(first, isin(s, ar2, invert=True)), size, fill_value,
                 "setdiff1d")[0]


@export(numpy=np.setxor1d, traced=("ar1", "ar2"))
def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """np.setxor1d: the sorted distinct values that are in exactly one of the arrays. size=,
    fill_value= as fnp.unique.

        >>> fnp.setxor1d(np.array([1, 2, 3]), np.array([2, 4]))
        array([1, 3, 4])
    """
    a, b = ravel(_asarray(ar1)), ravel(_asarray(ar2))
    # each array's distinct values not in the other (a NaN is in neither: NumPy returns one
    # from each array that has NaNs), merged in order
    _, sa, first_a = _sorted_firsts(a)
    _, sb, first_b = _sorted_firsts(b)
    values = concatenate([sa, sb])
    keep = concatenate([logical_and(first_a, isin(sa, b, invert=True)),
                        logical_and(first_b, isin(sb, a, invert=True))])
    order = argsort(values)
    return _kept(take_along_axis(values, order, 0), take_along_axis(keep, order, 0), size,
                 fill_value, "setxor1d")[0]


@export(numpy=np.intersect1d, traced=("ar1", "ar2"))
def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
    """np.intersect1d: the sorted distinct values in both arrays; return_indices=True adds the
    index of each one's first occurrence in (flattened) ar1 and ar2. size=, fill_value= as
    fnp.unique (the padding of the indices is 0).

        >>> fnp.intersect1d(np.array([4.0, 1.0, 3.0]), np.array([3.0, 4.0, 5.0]))
        array([3., 4.])
    """
    a, b = ravel(_asarray(ar1)), ravel(_asarray(ar2))
    order, s, first = _sorted_firsts(a)
    values, slot, count = _kept(s, logical_and(first, isin(s, b)), size, fill_value, "intersect1d")
    if not return_indices:
        return values
    n = aval_of(values).shape[0]
    # (stable sorts: a run's first sorted entry is its earliest occurrence)
    in_a = at(full((n + 1,), 0, np.int64))[slot].set(order)[:n]
    order_b = argsort(b)
    nb = aval_of(b).shape[0]
    pos = searchsorted(take_along_axis(b, order_b, 0), values) if nb else None
    in_b = (take_along_axis(order_b, where(pos < nb, pos, 0), 0) if nb
            else full((n,), 0, np.int64))
    found = np.arange(n) < count
    return values, where(found, in_a, 0), where(found, in_b, 0)
