"""Reductions, cumulative ops and sorting.

Primitives: reduce_max, reduce_min, reduce_prod, argmax, argmin, cumsum, cumprod, argsort,
searchsorted (reduce_sum is in base.py), bound with NumPy's arguments by sum, prod, max, min,
argmax, argmin, cumsum, cumprod, argsort and searchsorted. all, any, mean, var, std, logsumexp
and sort are compositions of these, in funcgrad/numpy/_reductions.py.
Gradient conventions: ties in max/min share the cotangent equally among the tied elements
(`ct * (x == max) / count(x == max)`); prod uses products of the other elements, built from
multiplications only (exact at zeros, to any order); cumprod's rule is a linear recurrence run
as an associative scan of multiplications and additions (exact at zeros, to any order).
"""
from __future__ import annotations

import builtins
from functools import lru_cache

import numpy as np

from ..ir import Aval, Traced, aval_of
from .base import (BatchRule, all_batched, broadcast_in_dim, broadcast_to, convert, define, export,
                   full, next_axis, normalize_axes, plus1, reduce_sum, reduce_sum_p,
                   reshape as _reshape, shifted_batch, transpose as _transpose)
from .elementwise import equal, maximum as _elementwise_max, minimum as _elementwise_min, where
from .indexing import slice_axis
from .shape import _asarray, concatenate, flip, ravel, take


def _kept(ndim, axes):
    return tuple(i for i in range(ndim) if i not in axes)


def _keepdims(out, in_shape, axes, keepdims):
    if keepdims is None:          # (NumPy: "'NoneType' object cannot be interpreted as an integer")
        raise TypeError("keepdims must be True or False, got None (as in NumPy)")
    if not keepdims:
        return out
    return _reshape(out, [1 if i in axes else d for i, d in enumerate(in_shape)])


def _expand_back(y, x, axes):
    """Broadcast a reduced value back to x's shape."""
    return broadcast_in_dim(y, aval_of(x).shape, _kept(aval_of(x).ndim, axes))


def _reduce_abstract(a, *, axes):
    if builtins.any(a.shape[i] == 0 for i in axes):
        raise ValueError("zero-size array to reduction operation which has no identity")
    return Aval(_kept_shape(a.shape, axes), a.dtype)


def _kept_shape(shape, axes):
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _minmax_vjp(ct, x, *, out, axes):
    mask = convert(equal(x, _expand_back(out, x, axes)), aval_of(x).dtype)
    count = reduce_sum(mask, axes)
    return (mask * _expand_back(ct / count, x, axes),)


reduce_max_p = define("reduce_max", impl=lambda x, *, axes: np.asarray(np.max(x, axis=axes)),
                      abstract=_reduce_abstract, vjp=_minmax_vjp, batch=shifted_batch("axes", plus1))
reduce_min_p = define("reduce_min", impl=lambda x, *, axes: np.asarray(np.min(x, axis=axes)),
                      abstract=_reduce_abstract, vjp=_minmax_vjp, batch=shifted_batch("axes", plus1))


def _exclusive_products(xf):
    """For xf of shape lead + (n,): the product of all the other elements along the last axis,
    for each element, built from multiplications only (a product tree, up then down), so it is
    exact at zeros and so are its own derivatives, to any order."""
    lead, n = aval_of(xf).shape[:-1], aval_of(xf).shape[-1]
    m = 1 << (n - 1).bit_length()
    if m > n:
        xf = concatenate([xf, full(lead + (m - n,), 1, aval_of(xf).dtype)], axis=len(lead))
    last = len(lead)
    levels = [xf]
    while aval_of(levels[-1]).shape[-1] > 1:       # up: products of pairs, m -> 1
        pairs = _reshape(levels[-1], lead + (aval_of(levels[-1]).shape[-1] // 2, 2))
        levels.append(_reshape(slice_axis(pairs, last + 1, 0, 1) * slice_axis(pairs, last + 1, 1, 2),
                               lead + (aval_of(levels[-1]).shape[-1] // 2,)))
    excl = full(lead + (1,), 1, aval_of(xf).dtype)
    for level in reversed(levels[:-1]):            # down: what the sibling and the rest give
        k = aval_of(level).shape[-1] // 2
        pairs = _reshape(level, lead + (k, 2))
        left, right = slice_axis(pairs, last + 1, 0, 1), slice_axis(pairs, last + 1, 1, 2)
        e = _reshape(excl, lead + (k, 1))
        excl = _reshape(concatenate([e * right, e * left], axis=last + 1), lead + (2 * k,))
    return slice_axis(excl, last, 0, n)


def _prod_vjp(ct, x, *, out, axes):
    xa = aval_of(x)
    kept = _kept(xa.ndim, axes)
    xt = _transpose(x, kept + axes)
    lead, n = aval_of(xt).shape[:len(kept)], _count(xa.shape, axes)
    if n == 0:                    # the product of nothing is 1 and depends on nothing
        return (full(xa.shape, 0, aval_of(ct).dtype),)
    others = _exclusive_products(_reshape(xt, lead + (n,)))
    others = _transpose(_reshape(others, aval_of(xt).shape),
                        tuple(np.argsort(kept + axes).tolist()))
    return (others * _expand_back(ct, x, axes),)


reduce_prod_p = define("reduce_prod",
                       impl=lambda x, *, axes: np.asarray(np.prod(x, axis=axes, dtype=np.asarray(x).dtype)),
                       abstract=lambda a, *, axes: Aval(_kept_shape(a.shape, axes), a.dtype),
                       vjp=_prod_vjp, batch=shifted_batch("axes", plus1))


@lru_cache(maxsize=256)
def _sum_dtype(dtype):
    return np.add.reduce(np.zeros(1, dtype)).dtype


def _reduction(prim, a, axis, keepdims, dtype=None, initial=None, where_=None, *, fill=None,
               combine=None):
    """prim over `axis` of a (converted to dtype). NumPy's where=: entries where the mask is
    False are replaced by `fill` (the reduction's identity, or `initial`); initial=: combined
    into the result with `combine`."""
    a = a if isinstance(a, Traced) else np.asarray(a)
    if dtype is not None:
        a = convert(a, dtype)
    if where_ is not None and where_ is not True:
        if fill is None and initial is None:
            raise ValueError(f"reduction operation '{prim.name}' does not have an identity, so "
                             "to use a where mask one has to specify 'initial'")
        mask = broadcast_to(convert(where_, bool), aval_of(a).shape)
        a = where(mask, a, initial if fill is None else fill)
    shape = aval_of(a).shape
    axes = normalize_axes(axis, len(shape))
    out = prim.bind(a, axes=axes) if axes else a
    if initial is not None:
        out = convert(combine(out, initial), aval_of(out).dtype)
    return _keepdims(out, shape, axes, keepdims)


def numpy_reduction(np_fn):
    """NumPy's reduction np_fn, for export(numpy=...): the keywords left at None are not
    passed on (np.max rejects where=None, np.mean initial=None; funcgrad's own compositions
    pass them through), but for axis and keepdims (keepdims=None is NumPy's TypeError)."""
    def call(a, *args, **kwargs):
        return np_fn(a, *args, **{k: v for k, v in kwargs.items()
                                  if v is not None or k in ("axis", "keepdims")})
    return call


@export(numpy=numpy_reduction(np.sum), traced=("a", "where", "initial"))
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """np.sum, with where= and initial= (ints and bools sum in the platform integer, as NumPy
    does).

        >>> fnp.sum(x ** 2, axis=-1, keepdims=True)
    """
    a = a if isinstance(a, Traced) else np.asarray(a)
    if dtype is None:
        dtype = _sum_dtype(aval_of(a).dtype)
    return _reduction(reduce_sum_p, a, axis, keepdims, dtype, initial, where, fill=0,
                      combine=lambda r, i: r + i)


@export(numpy=numpy_reduction(np.prod), traced=("a", "where", "initial"))
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """np.prod, with where= and initial=; the gradient is exact where elements are zero.

        >>> fnp.prod(x, axis=0)
    """
    a = a if isinstance(a, Traced) else np.asarray(a)
    if dtype is None:
        dtype = _sum_dtype(aval_of(a).dtype)
    return _reduction(reduce_prod_p, a, axis, keepdims, dtype, initial, where, fill=1,
                      combine=lambda r, i: r * i)


@export("max", "amax", numpy=numpy_reduction(np.max), traced=("a", "where", "initial"))
def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """np.max, with initial= (and where=, which needs initial as in NumPy); tied maxima share
    the gradient equally.

        >>> fnp.max(x, axis=1)
    """
    return _reduction(reduce_max_p, a, axis, keepdims, None, initial, where,
                      combine=_elementwise_max)


@export("min", "amin", numpy=numpy_reduction(np.min), traced=("a", "where", "initial"))
def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """np.min, with initial= (and where=, which needs initial as in NumPy); tied minima share
    the gradient equally.

        >>> fnp.min(x, axis=1)
    """
    return _reduction(reduce_min_p, a, axis, keepdims, None, initial, where,
                      combine=_elementwise_min)


def _count(shape, axes):
    return int(np.prod([shape[i] for i in axes], dtype=np.int64))


# ---- arg reductions, cumulative ops, sorting -------------------------------------------------

def _argabstract(a, *, axis):
    shape = (() if axis is None else _kept_shape(a.shape, (axis,)))
    return Aval(shape, np.intp)


def _arg_batch(prim):
    def rule(ins, fl, size, axis):
        (x,) = all_batched(ins, fl, size)
        if axis is None:                       # over the flattened example
            x, axis = _reshape(x, (size, -1)), 0
        return prim.bind(x, axis=axis + 1)
    return rule


# (exact: comparisons; see ir.Primitive)
argmax_p = define("argmax", exact=True, impl=lambda x, *, axis: np.asarray(np.argmax(x, axis=axis)),
                  abstract=_argabstract, differentiable=False, batch=BatchRule(_arg_batch))
argmin_p = define("argmin", exact=True, impl=lambda x, *, axis: np.asarray(np.argmin(x, axis=axis)),
                  abstract=_argabstract, differentiable=False, batch=BatchRule(_arg_batch))


def _arg(prim, a, axis, keepdims):
    nd = aval_of(a).ndim
    ax = None if axis is None else normalize_axes(axis, nd)[0]
    out = prim.bind(a, axis=ax)
    if keepdims:
        out = _reshape(out, [1] * nd if ax is None else
                       [1 if i == ax else d for i, d in enumerate(aval_of(a).shape)])
    return out


@export(numpy=np.argmax)
def argmax(a, axis=None, out=None, keepdims=False):
    """np.argmax (no gradient: the result is an integer)."""
    return _arg(argmax_p, a, axis, keepdims)


@export(numpy=np.argmin)
def argmin(a, axis=None, out=None, keepdims=False):
    """np.argmin (no gradient: the result is an integer)."""
    return _arg(argmin_p, a, axis, keepdims)


def _cumsum_vjp(ct, x, *, out, axis):
    return (flip(cumsum_p.bind(flip(ct, axis), axis=axis), axis),)


def _shift_in(v, axis, d, fill):
    """v moved d places forward along axis, the first d places filled with `fill`."""
    n = aval_of(v).shape[axis]
    pad = full(tuple(d if i == axis else k for i, k in enumerate(aval_of(v).shape)), fill,
               aval_of(v).dtype)
    return concatenate([pad, slice_axis(v, axis, 0, n - d)], axis=axis)


def _linear_scan(a, c, axis):
    """r with r[0] = c[0], r[m] = c[m] + a[m] * r[m-1] along axis, as an associative scan
    (Hillis-Steele: log2(n) steps of shifted products and sums), so that it is made of
    multiplications and additions only: exact where a has zeros, and so are its derivatives."""
    n, d = aval_of(c).shape[axis], 1
    while d < n:
        a_prev, c_prev = _shift_in(a, axis, d, 1), _shift_in(c, axis, d, 0)
        a, c = a * a_prev, a * c_prev + c
        d *= 2
    return c


def _cumprod_vjp(ct, x, *, out, axis):
    """d sum_k ct_k y_k / d x_i = (prod_{j<i} x_j) * r_i with r_i = sum_{k>=i} ct_k
    prod_{i<j<=k} x_j, i.e. r_i = ct_i + x_{i+1} r_{i+1}: a reverse linear recurrence, run as an
    associative scan of multiplications and additions. No division by x, so the rule is exact
    where x has zeros (to any order)."""
    n = aval_of(x).shape[axis]
    if n == 0:
        return (ct,)
    x_next = _shift_in(flip(x, axis), axis, 1, 0)        # flipped: x_{i+1} at position of i
    r = flip(_linear_scan(x_next, flip(ct, axis), axis), axis)
    before = _shift_in(out, axis, 1, 1)                   # prod_{j<i} x_j
    return (before * r,)


# (not exact: kernels accumulate with compensation, more accurately than NumPy's running sum)
cumsum_p = define("cumsum", impl=lambda x, *, axis: np.cumsum(x, axis=axis, dtype=np.asarray(x).dtype),
                  abstract=lambda a, *, axis: a, vjp=_cumsum_vjp, batch=shifted_batch("axis", next_axis))
cumprod_p = define("cumprod", impl=lambda x, *, axis: np.cumprod(x, axis=axis, dtype=np.asarray(x).dtype),
                   abstract=lambda a, *, axis: a, vjp=_cumprod_vjp,
                   batch=shifted_batch("axis", next_axis))


def _cumulative(prim, a, axis, dtype):
    if axis is None:
        a, axis = ravel(a), 0
    a = convert(a, dtype if dtype is not None else _sum_dtype(aval_of(a).dtype))
    axis = normalize_axes(axis, aval_of(a).ndim)[0]
    return prim.bind(a, axis=axis)


@export(numpy=np.cumsum)
def cumsum(a, axis=None, dtype=None, out=None):
    """np.cumsum.

        >>> fnp.cumsum(x, axis=0)
    """
    return _cumulative(cumsum_p, a, axis, dtype)


@export(numpy=np.cumprod)
def cumprod(a, axis=None, dtype=None, out=None):
    """np.cumprod; its gradient is exact where the inputs are 0 (no division by them).

        >>> fnp.cumprod(x)
    """
    return _cumulative(cumprod_p, a, axis, dtype)


argsort_p = define("argsort", impl=lambda x, *, axis: np.argsort(x, axis=axis, kind="stable"),
                   abstract=lambda a, *, axis: Aval(a.shape, np.intp), differentiable=False,
                   batch=shifted_batch("axis", next_axis))


def _stable_argsort(a, axis=-1, kind=None, order=None, stable=None):
    return np.argsort(a, axis=axis, kind="stable", order=order)


@export(numpy=_stable_argsort)      # stable on plain arrays too: the same order either way
def argsort(a, axis=-1, kind=None, order=None, stable=None):
    """np.argsort (always stable; no gradient)."""
    if axis is None:
        a, axis = ravel(a), 0
    return argsort_p.bind(a, axis=normalize_axes(axis, aval_of(a).ndim)[0])


# ---- searchsorted -------------------------------------------------------------------------------

def _searchsorted_abstract(a, v, *, side):
    if a.ndim != 1:
        raise ValueError(f"searchsorted: the sorted array must be 1-D, got {a}")
    return Aval(v.shape, np.intp)


searchsorted_p = define(
    "searchsorted", exact=True, impl=lambda a, v, *, side: np.asarray(np.searchsorted(a, v, side=side)),
    abstract=_searchsorted_abstract, differentiable=False)


@export(numpy=np.searchsorted, traced=("a", "v", "sorter"))
def searchsorted(a, v, side="left", sorter=None):
    """np.searchsorted: insertion indices of v into the sorted 1-D a (no gradient).

        >>> fnp.searchsorted(edges, x, side="right")
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    a, v = _asarray(a), _asarray(v)
    if sorter is not None:
        a = take(a, _asarray(sorter))
    return searchsorted_p.bind(a, v, side=side)
