"""NumPy's reductions that are compositions: all, any, mean, var, std, logsumexp and sort.

They are built from the reduction primitives and their binding functions (sum, prod, max, min,
argsort, ...) in funcgrad/primitives/reductions.py, so their derivatives of every order come
from those rules: mean and var differentiate through sum, std through sqrt(var), sort through
the gather of take_along_axis (the gradient flows back to each element's original position).
"""
from __future__ import annotations

import builtins

import numpy as np

from ..ir import Traced, aval_of
from ..primitives.base import broadcast_to, convert, export, normalize_axes, reshape as _reshape
from ..primitives.elementwise import (absolute, equal, exp, isfinite, log, logical_and,
                                      logical_not, maximum as _elementwise_max, sign, sqrt, where)
from ..primitives.reductions import (_count, _kept_shape, argsort, max, min, numpy_reduction,
                                      sum)
from ..primitives.shape import ravel, take_along_axis
from ._complex import abs2, real, real_dtype


def _truth(np_fn, reduce, a, axis, keepdims):
    """np.all / np.any: on a traced array the min / max of its truth values; an empty one
    gives NumPy's identity (True / False) with nothing to reduce over."""
    if aval_of(a).size == 0:
        return np_fn(np.zeros(aval_of(a).shape, bool), axis=axis, keepdims=keepdims)
    return reduce(convert(a, bool), axis=axis, keepdims=keepdims)


@export(numpy=np.all)
def all(a, axis=None, out=None, keepdims=False):
    """np.all."""
    return _truth(np.all, min, a, axis, keepdims)


@export(numpy=np.any)
def any(a, axis=None, out=None, keepdims=False):
    """np.any."""
    return _truth(np.any, max, a, axis, keepdims)


def _mean_dtype(dtype):
    return np.dtype(np.float64) if dtype.kind in "biu" else dtype


def _where_count(a, axis, keepdims, where_):
    """How many entries each result of a reduction over `axis` averages: all of them, or
    those where the mask is True."""
    if where_ is None or where_ is True:
        return _count(aval_of(a).shape, normalize_axes(axis, aval_of(a).ndim))
    mask = broadcast_to(convert(where_, bool), aval_of(a).shape)
    return sum(mask, axis=axis, keepdims=keepdims)


@export(numpy=numpy_reduction(np.mean), traced=("a", "where"))
def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """np.mean, with where= (ints average in float64).

        >>> fnp.mean(x, axis=0)
    """
    a = a if isinstance(a, Traced) else np.asarray(a)
    dt = np.dtype(dtype) if dtype is not None else _mean_dtype(aval_of(a).dtype)
    total = sum(a, axis=axis, dtype=dt, keepdims=keepdims, where=where)
    return convert(total / _where_count(a, axis, keepdims, where), dt)


@export(numpy=numpy_reduction(np.var), traced=("a", "where", "ddof"))
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    """np.var with ddof and where= (two passes: the mean, then squared deviations from it).

        >>> fnp.var(x, axis=0, ddof=1)
    """
    a = a if isinstance(a, Traced) else np.asarray(a)
    dt = np.dtype(dtype) if dtype is not None else _mean_dtype(aval_of(a).dtype)
    a = convert(a, dt)
    centered = a - mean(a, axis=axis, keepdims=True, where=where)
    squares = sum(abs2(centered), axis=axis, keepdims=keepdims, where=where)   # complex: |.|^2
    dof = _where_count(a, axis, keepdims, where) - ddof        # NumPy: at least 0 (0/0 = nan)
    dof = builtins.max(dof, 0) if isinstance(dof, int) else _elementwise_max(dof, 0)
    return convert(squares / dof, real_dtype(dt))


@export(numpy=numpy_reduction(np.std), traced=("a", "where", "ddof"))
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    """np.std = sqrt(var), with ddof and where=; its derivative is infinite where the spread
    is 0.

        >>> fnp.std(x, axis=0)
    """
    return sqrt(var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where))


def _lse_terms(a, axis, b):
    """(b * exp(a - m), m) with m the largest real part of a among the terms with b != 0 (0
    where that is not finite). A term with b == 0 adds nothing (SciPy: its a is ignored, even
    inf) and keeps its derivative in b, exp(a - m), where that is finite."""
    re = real(a) if aval_of(a).dtype.kind == "c" else a
    m = max(re if b is None else where(equal(b, 0), -np.inf, re), axis=axis, keepdims=True)
    m = where(isfinite(m), m, 0.0)
    e = exp(a - m)
    if b is None:
        return e, m
    e = where(logical_and(equal(b, 0), logical_not(isfinite(e))), 0.0, e)
    return e * b, m


@export()
def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) computed stably (scipy.special.logsumexp). With return_sign=True,
    (log|s|, sign(s)) for s = sum(b * exp(a)): a negative sum is allowed (without it, its log
    is NaN), a zero sum gives (-inf, 0); the sign of a complex sum is s / |s|. Terms with
    b == 0 are ignored, as in SciPy.

        >>> fnp.logsumexp(np.array([[1000.0, 1000.0], [0.0, 0.0]]), axis=-1)
        array([1.00069315e+03, 6.93147181e-01])
        >>> fnp.logsumexp(np.array([1.0, 2.0]), b=np.array([1.0, -2.0]), return_sign=True)
        (np.float64(2.48988012564475), np.float64(-1.0))
    """
    a = a if isinstance(a, Traced) else np.asarray(a)
    if b is not None:
        b = b if isinstance(b, Traced) else np.asarray(b)
    terms, m = _lse_terms(a, axis, b)
    s = sum(terms, axis=axis, keepdims=True)
    if return_sign:
        mag = absolute(s)
        sgn = where(equal(mag, 0), 0.0, s / where(equal(mag, 0), 1.0, mag)) \
            if aval_of(s).dtype.kind == "c" else sign(s)
        outs = (log(mag) + m, sgn)
    else:
        outs = (log(s) + m,)
    if not keepdims:
        axes = normalize_axes(axis, aval_of(a).ndim)
        shape = _kept_shape(aval_of(outs[0]).shape, axes)
        outs = tuple(_reshape(o, shape) if isinstance(o, Traced) else np.squeeze(o, axes)[()]
                     for o in outs)
    return outs if return_sign else outs[0]


@export(numpy=np.sort)
def sort(a, axis=-1, kind=None, order=None, stable=None):
    """np.sort; the gradient flows back to each element's original position.

        >>> fnp.sort(x, axis=-1)
    """
    if axis is None:
        a, axis = ravel(a), 0
    return take_along_axis(a, argsort(a, axis), axis)
