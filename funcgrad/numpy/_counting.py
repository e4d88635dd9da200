"""NumPy functions whose result's shape can depend on the values (bincount, unique,
compress, extract) and the counting and selecting ones around them (histogram, digitize,
isin, choose, piecewise), plus cumulative_sum/prod and ediff1d.

A traced array has no values while the program is recorded, so where NumPy sizes the result
from them, these take JAX's arguments that fix the size instead (`length=` for bincount,
`size=` and `fill_value=` for unique): given, the function traces, compiles and batches;
missing, the value is read from the call being traced where there is one (funcgrad.tracer's
dynamic Python), else the error names the argument to give.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..ir import Traced, aval_of
from ..primitives.base import convert, export, full
from ..primitives.elementwise import (floor, isnan, logical_and, logical_not, maximum, minimum,
                                      where)
from ..primitives.indexing import at
from ..primitives.reductions import argsort, cumprod, cumsum, max as _max, searchsorted, \
    sum as _sum
from ..primitives.shape import _asarray, _axis, concatenate, expand_dims, ravel, reshape, stack, \
    take_along_axis
from ._shape import _static


def zeros(shape, dtype):
    return full(tuple(np.atleast_1d(shape).tolist()), 0, dtype)


def _size(value, what):
    return int(np.asarray(_static(value, what)))


@export(numpy=np.bincount, traced=("x", "weights"))
def bincount(x, weights=None, minlength=0, *, length=None):
    """np.bincount: counts (or sums of weights) of each non-negative integer in x, with
    max(x) + 1 entries, at least minlength; `length=` fixes the number of entries (entries past
    it are dropped, as jax.numpy's). Differentiable in weights.

        >>> fnp.bincount(labels, weights=w, length=10)
    """
    x = ravel(_asarray(x))
    if aval_of(x).dtype.kind not in "iub":
        raise TypeError("bincount: x must hold non-negative integers")
    if length is None:
        top = _max(x) + 1 if aval_of(x).size else 0
        length = max(_size(top, "fnp.bincount(x): the number of bins, max(x) + 1 (pass "
                                "length=)"), int(minlength))
    w = np.ones(aval_of(x).shape, np.int64) if weights is None else ravel(_asarray(weights))
    out = zeros(int(length), np.result_type(aval_of(w).dtype, np.int64)
                if weights is None else aval_of(w).dtype)
    keep = logical_and(x >= 0, x < length)
    return at(out)[where(keep, x, 0)].add(where(keep, w, 0))


@export(numpy=np.digitize, traced=("x", "bins"))
def digitize(x, bins, right=False):
    """np.digitize: the index of the bin each x falls in (bins increasing or decreasing).

        >>> fnp.digitize(x, np.array([0.0, 1.0, 2.5]))
    """
    bins = _asarray(bins)
    b = bins if isinstance(bins, Traced) else np.asarray(bins)
    n = aval_of(b).shape[0]
    decreasing = n > 1 and not isinstance(b, Traced) and b[0] > b[-1]
    if decreasing:
        return n - searchsorted(b[::-1], x, side="left" if right else "right")
    return searchsorted(b, x, side="left" if right else "right")


@export(numpy=np.isin, traced=("element", "test_elements"))
def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """np.isin: whether each element occurs in test_elements (a boolean of element's shape).

        >>> fnp.isin(labels, np.array([1, 3]))
    """
    element, test = _asarray(element), ravel(_asarray(test_elements))
    found = (expand_dims(element, -1) == test).any(axis=-1) if aval_of(test).size else \
        zeros(aval_of(element).shape, bool)
    return logical_not(found) if invert else found


@export(numpy=np.histogram, traced=("a", "range", "weights"))
def histogram(a, bins=10, range=None, density=None, weights=None):
    """np.histogram with a number of bins (the edges may then be traced: range's, or a's min and
    max) or given edges; returns (counts or sums of weights, edges). Differentiable in the
    weights and, through the edges, in range.

        >>> counts, edges = fnp.histogram(x, bins=5, range=(0.0, 1.0))
    """
    a = ravel(_asarray(a))
    idx, edges, nb = _bin_index(a, bins, range)
    inside = logical_and(idx >= 0, idx < nb)
    idx = convert(where(inside, idx, 0), np.int64)
    w = np.ones(aval_of(a).shape) if weights is None else ravel(_asarray(weights))
    counts = zeros(nb, np.int64 if weights is None else aval_of(w).dtype)
    counts = at(counts)[idx].add(where(inside, w, 0))
    if density:
        widths = edges[1:] - edges[:-1]
        return counts / widths / _sum(counts), edges
    return counts, edges


def _bin_index(a, bins, range):
    """Each entry's bin (-1 or nb where outside; the last bin closed on the right), the edges
    and the number of bins nb, for a number of bins (over range, or a's min to max) or edges."""
    if np.ndim(bins) == 0 and not isinstance(bins, Traced):
        nb = int(bins)
        lo, hi = (_min_max(a) if range is None else range)
        lo, hi = convert(lo, np.float64), convert(hi, np.float64)
        hi = where(hi == lo, hi + 0.5, hi)
        lo = where(hi == lo + 0.5, lo - 0.5, lo)
        edges = lo + (hi - lo) * (np.arange(nb + 1) / nb)
        idx = floor((a - lo) / (hi - lo) * nb)
        idx = where(a == hi, nb - 1, idx)
    else:
        edges = _asarray(bins)
        nb = aval_of(edges).shape[0] - 1
        idx = searchsorted(edges, a, side="right") - 1
        idx = where(a == edges[-1], nb - 1, idx)
    return idx, edges, nb


@export(numpy=np.histogramdd, traced=("sample", "range", "weights"))
def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """np.histogramdd: the D-dimensional histogram of N points (sample: (N, D)); bins, range as
    fnp.histogram per dimension (one value or one per dimension). Returns (counts or sums of
    weights, list of edges); differentiable in the weights and, through the edges, in range.

        >>> counts, edges = fnp.histogramdd(np.ones((5, 2)), bins=3, range=[(0, 2), (0, 2)])
    """
    sample = _asarray(sample)
    if aval_of(sample).ndim == 1:
        sample = reshape(sample, (-1, 1))
    d = aval_of(sample).shape[1]
    each = list(bins) if isinstance(bins, (list, tuple)) else [bins] * d
    ranges = [None] * d if range is None else list(range)
    if len(each) != d or len(ranges) != d:
        raise ValueError(f"histogramdd: bins and range need one entry per dimension ({d})")
    flat, inside, shape, all_edges = 0, True, [], []
    for k, (b, r) in enumerate(zip(each, ranges)):
        idx, edges, nb = _bin_index(sample[:, k], b, r)
        inside = logical_and(inside, logical_and(idx >= 0, idx < nb))
        flat = flat * nb + convert(idx, np.int64)
        shape.append(nb)
        all_edges.append(edges)
    n = int(np.prod(shape))
    w = np.ones(aval_of(sample).shape[0]) if weights is None else ravel(_asarray(weights))
    counts = zeros(n, np.int64 if weights is None else aval_of(w).dtype)
    counts = reshape(at(counts)[where(inside, flat, 0)].add(where(inside, w, 0)), tuple(shape))
    if density:
        volume = 1.0
        for k, e in enumerate(all_edges):
            volume = volume * reshape(e[1:] - e[:-1], tuple(-1 if j == k else 1
                                                            for j in np.arange(d)))
        return counts / volume / _sum(counts), all_edges
    return counts, all_edges


def _min_max(a):
    return (a.min(), a.max()) if aval_of(a).size else (0.0, 1.0)


@export(numpy=np.histogram2d, traced=("x", "y", "range", "weights"))
def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """np.histogram2d: fnp.histogramdd of the points (x, y); returns (counts, xedges, yedges).

        >>> counts, xedges, yedges = fnp.histogram2d(x, y, bins=4, range=[(-3, 3), (-3, 3)])
    """
    counts, (ex, ey) = histogramdd(stack([ravel(_asarray(x)), ravel(_asarray(y))], axis=1),
                                   bins, range, density, weights)
    return counts, ex, ey


@export(numpy=np.unique, traced=("ar",))
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, size=None, fill_value=None):
    """np.unique of the flattened array: the sorted distinct values (and, on request, the index
    of each one's first occurrence, the inverse and the counts). With size= the result has
    exactly size entries, padded with fill_value (default: the smallest value), as jax.numpy's.

        >>> fnp.unique(labels, size=5, fill_value=-1)
    """
    if axis is not None:
        raise NotImplementedError("unique(axis=...) on traced values; unique of the flattened "
                                  "array (axis=None) is supported")
    a = ravel(_asarray(ar))
    n = aval_of(a).shape[0]
    order, s, first = _sorted_firsts(a, equal_nan)
    rank = cumsum(convert(first, np.int64)) - 1         # each sorted entry's unique number
    if size is None:
        size = _size(rank[-1] + 1 if n else 0,
                     "fnp.unique: the number of distinct values (pass size= and fill_value=)")
    # each distinct value's first sorted entry writes its slot; the others (and distinct values
    # past `size`) write one spare entry past the end, cut off
    slot = where(logical_and(first, rank < size), rank, size)
    fill = (s[0] if n else 0) if fill_value is None else fill_value
    values = at(zeros(size + 1, aval_of(a).dtype) + fill)[slot].set(s)[:size]
    out = [values]
    if return_index:
        out.append(at(zeros(size + 1, np.int64))[slot].set(order)[:size])
    if return_inverse:
        out.append(reshape(at(zeros(n, np.int64))[order].set(rank), np.shape(ar)))
    if return_counts:
        out.append(at(zeros(size + 1, np.int64))[minimum(rank, size)].add(1)[:size])
    return out[0] if len(out) == 1 else tuple(out)


def _sorted_firsts(a, equal_nan=True):
    """A 1-d array's sorting order, its sorted values and whether each sorted entry is the first
    of its run of equal values (NaNs one run if equal_nan)."""
    n = aval_of(a).shape[0]
    order = argsort(a)
    s = take_along_axis(a, order, 0)
    first = concatenate([np.ones(min(n, 1), bool), s[1:] != s[:-1]]) if n else np.zeros(0, bool)
    if equal_nan and aval_of(s).dtype.kind in "fc" and n:
        first = logical_and(first, logical_not(concatenate(
            [np.zeros(1, bool), logical_and(isnan(s[1:]), isnan(s[:-1]))])))
    return order, s, first


@export(numpy=np.compress, traced=("condition", "a"))
def compress(condition, a, axis=None, out=None):
    """np.compress: the slices of a along axis where condition is True (condition's values
    fix the shape: read from the call being traced; a may be traced).

        >>> fnp.compress(np.array([True, False, True]), x, axis=0)
    """
    keep = np.flatnonzero(np.asarray(_static(condition, "fnp.compress(condition, ...)"), bool))
    a = _asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    return _asarray(a).take(keep, axis=axis) if isinstance(a, Traced) else np.take(a, keep, axis)


@export(numpy=np.extract, traced=("condition", "arr"))
def extract(condition, arr):
    """np.extract: the entries of arr where condition is True, flattened (condition fixes the
    shape, as in compress).

        >>> fnp.extract(x > 0, y)
    """
    keep = np.flatnonzero(np.asarray(_static(condition, "fnp.extract(condition, ...)"), bool))
    return ravel(_asarray(arr))[keep]


@export(numpy=np.choose, traced=("a", "choices"))
def choose(a, choices, out=None, mode="raise"):
    """np.choose: out[i] = choices[a[i]][i], broadcasting a and the choices; mode 'raise'
    (concrete indices checked), 'wrap' or 'clip'.

        >>> fnp.choose(idx, [x, y, z])
    """
    choices = stack(list(choices)) if not isinstance(choices, Traced) else choices
    n = aval_of(choices).shape[0]
    a = _asarray(a)
    if mode == "wrap":
        a = a % n
    elif mode == "clip":
        a = minimum(maximum(a, 0), n - 1)
    elif not isinstance(a, Traced) and np.any((np.asarray(a) < 0) | (np.asarray(a) >= n)):
        raise ValueError("invalid entry in choice array")
    shape = np.broadcast_shapes(aval_of(a).shape, aval_of(choices).shape[1:])
    c = choices.reshape((n,) + (1,) * (len(shape) + 1 - aval_of(choices).ndim)
                        + aval_of(choices).shape[1:])
    c = c + np.zeros((1,) + shape, aval_of(choices).dtype)
    idx = convert(a, np.int64) + np.zeros(shape, np.int64)
    return take_along_axis(c, expand_dims(idx, 0), 0)[0]


@export(numpy=np.piecewise, traced=("x",))
def piecewise(x, condlist, funclist, *args, **kw):
    """np.piecewise: funclist[i](x) (or a constant) where condlist[i]; a final extra function
    is the default. Every function is evaluated on all of x (fnp.where picks).

        >>> fnp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2])
    """
    x = _asarray(x)
    conds = [condlist] if np.ndim(condlist) == 0 or (
        not isinstance(condlist, (list, tuple)) and aval_of(condlist).dtype == bool
        and aval_of(condlist).shape == aval_of(x).shape) else list(condlist)
    funcs = list(funclist)
    out = zeros(aval_of(x).shape, aval_of(x).dtype)
    if len(funcs) == len(conds) + 1:
        default = funcs.pop()
        out = out + (default(x, *args, **kw) if callable(default) else default)
    for c, f in zip(conds, funcs):
        out = where(c, f(x, *args, **kw) if callable(f) else f, out)
    return out


@export(numpy=getattr(np, "cumulative_sum", None))
def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """np.cumulative_sum (NumPy 2.1): cumsum, with include_initial prepending the 0.

        >>> fnp.cumulative_sum(x, include_initial=True)
    """
    return _cumulative(cumsum, 0, x, axis, dtype, include_initial)


@export(numpy=getattr(np, "cumulative_prod", None))
def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """np.cumulative_prod (NumPy 2.1): cumprod, with include_initial prepending the 1.

        >>> fnp.cumulative_prod(x, include_initial=True)
    """
    return _cumulative(cumprod, 1, x, axis, dtype, include_initial)


def _cumulative(fn, start, x, axis, dtype, include_initial):
    x = _asarray(x)
    if axis is None:
        if aval_of(x).ndim > 1:
            raise ValueError("cumulative_sum/prod: axis must be given for arrays of more than "
                             "one dimension")
        axis = 0
    axis = _axis(axis, aval_of(x).ndim)
    r = fn(x, axis=axis, dtype=dtype)
    if not include_initial:
        return r
    shape = list(aval_of(r).shape)
    shape[axis] = 1
    return concatenate([np.full(shape, start, aval_of(r).dtype), r], axis=axis)


@export(numpy=np.ediff1d, traced=("ary", "to_end", "to_begin"))
def ediff1d(ary, to_end=None, to_begin=None):
    """np.ediff1d: differences of the flattened array, with values prepended and appended.

        >>> fnp.ediff1d(x, to_begin=0.0)
    """
    a = ravel(_asarray(ary))
    parts = [a[1:] - a[:-1]]
    if to_begin is not None:
        parts.insert(0, ravel(_asarray(to_begin)))
    if to_end is not None:
        parts.append(ravel(_asarray(to_end)))
    return concatenate(parts) if len(parts) > 1 else parts[0]



# ---- NumPy 2's unique_* family and union1d (size= / fill_value= as jax.numpy's) --------------

UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


@export(numpy=getattr(np, "unique_values", None), traced=("x",))
def unique_values(x, /, *, size=None, fill_value=None):
    """np.unique_values: the distinct values of x (flattened), sorted when traced (NumPy 2.3+
    may give them in another order); size=, fill_value= as fnp.unique.

        >>> fnp.unique_values(labels, size=5, fill_value=-1)
    """
    return unique(x, size=size, fill_value=fill_value)


@export(numpy=getattr(np, "unique_counts", None), traced=("x",))
def unique_counts(x, /, *, size=None, fill_value=None):
    """np.unique_counts: (values, counts).

        >>> values, counts = fnp.unique_counts(labels, size=5)
    """
    return UniqueCountsResult(*unique(x, return_counts=True, size=size, fill_value=fill_value))


@export(numpy=getattr(np, "unique_inverse", None), traced=("x",))
def unique_inverse(x, /, *, size=None, fill_value=None):
    """np.unique_inverse: (values, inverse_indices), the indices in x's shape.

        >>> values, inverse = fnp.unique_inverse(labels, size=5)
    """
    values, inverse = unique(x, return_inverse=True, size=size, fill_value=fill_value)
    return UniqueInverseResult(values, reshape(inverse, aval_of(_asarray(x)).shape))


@export(numpy=getattr(np, "unique_all", None), traced=("x",))
def unique_all(x, /, *, size=None, fill_value=None):
    """np.unique_all: (values, indices of first occurrences, inverse_indices, counts).

        >>> result = fnp.unique_all(labels, size=5)
    """
    values, index, inverse, counts = unique(x, return_index=True, return_inverse=True,
                                            return_counts=True, size=size, fill_value=fill_value)
    return UniqueAllResult(values, index, reshape(inverse, aval_of(_asarray(x)).shape), counts)


@export(numpy=np.union1d, traced=("ar1", "ar2"))
def union1d(ar1, ar2, *, size=None, fill_value=None):
    """np.union1d: the sorted distinct values of both arrays (flattened); size=, fill_value= as
    fnp.unique.

        >>> fnp.union1d(a, b, size=6)
    """
    return unique(concatenate([ravel(_asarray(ar1)), ravel(_asarray(ar2))]), size=size,
                  fill_value=fill_value)


@export(numpy=np.lexsort, traced=("keys",))
def lexsort(keys, axis=-1):
    """np.lexsort: the indices that sort by the last key, ties broken by the one before, and
    so on (stable sorts, last key applied last).

        >>> fnp.lexsort((first_names, surnames))
    """
    keys = [_asarray(k) for k in (list(keys) if not isinstance(keys, Traced) else
                                  [keys[i] for i in range(aval_of(keys).shape[0])])]
    axis = _axis(axis, aval_of(keys[0]).ndim)
    order = argsort(keys[0], axis=axis)
    for k in keys[1:]:
        order = take_along_axis(order, argsort(take_along_axis(k, order, axis), axis=axis), axis)
    return order


@export(numpy=np.sort_complex, traced=("a",))
def sort_complex(a):
    """np.sort_complex: sorted by real part, then imaginary part, as complex numbers.

        >>> fnp.sort_complex(z)
    """
    a = _asarray(a)
    dt = np.result_type(aval_of(a).dtype, np.complex64)
    a = convert(a, dt)
    order = lexsort((a.imag, a.real))
    return take_along_axis(a, order, -1)
