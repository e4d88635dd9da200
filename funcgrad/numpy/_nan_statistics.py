"""The NaN-ignoring functions beyond _stats.py's reductions: nanmedian, nanquantile and
nanpercentile (NumPy's default 'linear' method: the order statistics of each slice's non-NaN
entries, whose number is a traced count, gathered at traced positions), nancumsum,
nancumprod, nanargmax, nanargmin.

A slice with no number gives NaN (NumPy warns and gives NaN too); nanargmax/nanargmin of such
a slice give -1 on traced values (NumPy raises there, which a compiled program cannot).
"""
from __future__ import annotations

import numpy as np

from ..ir import aval_of
from ..primitives.base import convert, export, reshape
from ..primitives.elementwise import floor, isnan, logical_not, minimum, where
from ..primitives.reductions import argmax, argmin, cumprod, cumsum, sum as _sum
from ..primitives.shape import _asarray, ravel, take_along_axis
from ._reductions import all as _all, sort
from ._shape import squeeze
from ._stats import _reduced_first

_NoValue = np._NoValue


def _linear_only(name, method, weights):
    if method != "linear" or weights is not None:
        raise NotImplementedError(f"np.{name}(method={method!r}, weights=...) on traced values: "
                                  "the default method='linear' without weights is supported")


def _nanquantile(a, q, axis, keepdims):
    a = _asarray(a)
    if aval_of(a).dtype.kind not in "fc":
        a = convert(a, np.float64)
    s, kshape = _reduced_first(a, axis)
    s = sort(s, axis=0)                                   # NaN last
    n = aval_of(s).shape[0]
    valid = _sum(logical_not(isnan(s)), axis=0)            # per slice: how many numbers
    q = _asarray(q)
    qshape = aval_of(q).shape
    qf = reshape(convert(q, aval_of(s).dtype), (-1,) + (1,) * (aval_of(s).ndim - 1))
    pos = qf * convert(valid - 1, aval_of(s).dtype)        # (nq, *kept)
    lo = floor(pos)
    last = minimum(valid - 1, n - 1)
    i_lo = convert(where(lo < 0, 0, lo), np.int64)
    i_hi = convert(where(lo + 1 > last, where(last < 0, 0, last), lo + 1), np.int64)
    v_lo, v_hi = take_along_axis(s, i_lo, 0), take_along_axis(s, i_hi, 0)
    out = v_lo + (pos - lo) * (v_hi - v_lo)
    out = where(valid == 0, np.nan, out)
    rest = tuple(kshape) if keepdims else tuple(aval_of(s).shape[1:])
    return reshape(out, qshape + rest)


@export(numpy=np.nanquantile, traced=("a", "q"))
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=_NoValue, *, weights=None):
    """np.nanquantile (method 'linear'): quantiles of the non-NaN entries; the gradient goes to
    the one or two order statistics each interpolates between, and to q.

        >>> fnp.nanquantile(x, [0.25, 0.75], axis=0)
    """
    _linear_only("nanquantile", method, weights)
    return _nanquantile(a, q, axis, keepdims is True)


@export(numpy=np.nanpercentile, traced=("a", "q"))
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=_NoValue, *, weights=None):
    """np.nanpercentile: nanquantile(a, q / 100).

        >>> fnp.nanpercentile(x, 90, axis=-1)
    """
    _linear_only("nanpercentile", method, weights)
    return _nanquantile(a, _asarray(q) / 100.0, axis, keepdims is True)


@export(numpy=np.nanmedian, traced=("a",))
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=_NoValue):
    """np.nanmedian: the median of the non-NaN entries (NaN for a slice with none).

        >>> fnp.nanmedian(x, axis=0)
    """
    return _nanquantile(a, 0.5, axis, keepdims is True)


def _nan_filled(a, fill):
    a = _asarray(a)
    return where(isnan(a), fill, a) if aval_of(a).dtype.kind in "fc" else a


@export(numpy=np.nancumsum, traced=("a",))
def nancumsum(a, axis=None, dtype=None, out=None):
    """np.nancumsum: cumsum with NaN counted as 0 (gradient 0 there).

        >>> fnp.nancumsum(x, axis=0)
    """
    return cumsum(_nan_filled(a, 0.0), axis=axis, dtype=dtype)


@export(numpy=np.nancumprod, traced=("a",))
def nancumprod(a, axis=None, dtype=None, out=None):
    """np.nancumprod: cumprod with NaN counted as 1 (gradient 0 there).

        >>> fnp.nancumprod(x, axis=0)
    """
    return cumprod(_nan_filled(a, 1.0), axis=axis, dtype=dtype)


def _nan_arg(fn, fill, a, axis, keepdims):
    a = _asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    idx = fn(_nan_filled(a, fill), axis=axis, keepdims=True)
    none = _all(isnan(a), axis=axis, keepdims=True) if aval_of(a).dtype.kind in "fc" else False
    idx = where(none, -1, idx)
    return idx if keepdims is True else squeeze(idx, axis)


@export(numpy=np.nanargmax, traced=("a",))
def nanargmax(a, axis=None, out=None, *, keepdims=_NoValue):
    """np.nanargmax: the index of the largest non-NaN entry (-1 for an all-NaN slice, traced).

        >>> fnp.nanargmax(x, axis=0)
    """
    return _nan_arg(argmax, -np.inf, a, axis, keepdims)


@export(numpy=np.nanargmin, traced=("a",))
def nanargmin(a, axis=None, out=None, *, keepdims=_NoValue):
    """np.nanargmin: the index of the smallest non-NaN entry (-1 for an all-NaN slice, traced).

        >>> fnp.nanargmin(x, axis=0)
    """
    return _nan_arg(argmin, np.inf, a, axis, keepdims)
