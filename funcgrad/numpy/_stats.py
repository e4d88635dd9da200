"""Statistics and order statistics: NaN-ignoring reductions (nansum ... nanstd), average, ptp,
median, quantile, percentile, partition, argpartition, cov and corrcoef.

All of them are compositions of existing primitives (searchsorted is one, in primitives/reductions.py);
partition/argpartition return a full sort when traced.

Conventions: the nan* functions replace NaN entries with fnp.where before reducing, so the
gradient at a NaN entry is 0 (and an all-NaN slice gives NaN, as NumPy). median and quantile
sort and then gather (and linearly interpolate between) the selected order statistics, so the
gradient flows to the selected elements only; a slice containing NaN gives NaN. The index
arithmetic of quantile is NumPy's for every method, written with funcgrad's functions so that `q`
may be traced: the derivative in q of the interpolating methods (linear, hazen, weibull, ...) is
(upper - lower order statistic) times d(virtual index)/dq, e.g. (x[hi] - x[lo]) * (n - 1) for
'linear'; the methods that pick one order statistic (lower, nearest, inverted_cdf, ...) are
piecewise constant in q (derivative 0, as finite differences).
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir import Traced, aval_of
from ..primitives.base import (convert, export, has_traced, normalize_axes, reshape as _reshape,
                               transpose as _transpose)
from ..primitives.elementwise import (ceil, clip, floor, isnan, logical_and, logical_not,
                                      maximum, rint, sqrt, where as _where)
from ..primitives.indexing import getitem, slice_axis
from ._complex import conj, imag, real
from ..primitives.reductions import argsort, max as _max, min as _min, prod as _prod, sum as _sum
from ..primitives.shape import _asarray, _axes_in_order, _axis, concatenate, ravel, take
from ._contract import diagonal, dot
from ._reductions import all as _all, mean, sort, var as _var
from ._shape import _static, broadcast_to, squeeze

_NoValue = np._NoValue


def _unsupported(name, **kw):
    for k, v in kw.items():
        if v is not None and v is not _NoValue and v is not True:
            raise NotImplementedError(f"np.{name}({k}=...) is not supported on traced values")


def _kd(keepdims):
    return False if keepdims is _NoValue else keepdims     # (None: the reduction's TypeError)


def _inexact(x):
    return aval_of(x).dtype.kind in "fc"


# ---- NaN-ignoring reductions ------------------------------------------------------------------

@export(numpy=np.nansum, traced=("a", "initial"))
def nansum(a, axis=None, dtype=None, out=None, keepdims=_NoValue, initial=_NoValue,
           where=_NoValue):
    """np.nansum: sum treating NaN as 0 (gradient 0 at NaN entries).

        >>> fnp.nansum(x, axis=0)
    """
    _unsupported("nansum", where=where)
    a = _asarray(a)
    a = _fill_nan(a, 0)
    return _sum(a, axis=axis, dtype=dtype, keepdims=_kd(keepdims), initial=_initial(initial))


@export(numpy=np.nanprod, traced=("a", "initial"))
def nanprod(a, axis=None, dtype=None, out=None, keepdims=_NoValue, initial=_NoValue,
            where=_NoValue):
    """np.nanprod: product treating NaN as 1 (gradient 0 at NaN entries).

        >>> fnp.nanprod(x, axis=1)
    """
    _unsupported("nanprod", where=where)
    return _prod(_fill_nan(_asarray(a), 1), axis=axis, dtype=dtype, keepdims=_kd(keepdims),
                 initial=_initial(initial))


def _initial(initial):
    return None if initial is _NoValue else initial


def _fill_nan(a, value):
    return _where(isnan(a), value, a) if _inexact(a) else a


def _count(mask, axis, keepdims):
    return _sum(logical_not(mask), axis=axis, dtype=np.intp, keepdims=keepdims)


@export(numpy=np.nanmean, traced=("a",))
def nanmean(a, axis=None, dtype=None, out=None, keepdims=_NoValue, *, where=_NoValue):
    """np.nanmean: mean of the non-NaN entries (NaN for an all-NaN slice).

        >>> fnp.nanmean(x, axis=1)
    """
    _unsupported("nanmean", where=where)
    a = _asarray(a)
    if not _inexact(a):
        return mean(a, axis=axis, dtype=dtype, keepdims=_kd(keepdims))
    mask = isnan(a)
    tot = _sum(_fill_nan(a, 0), axis=axis, dtype=dtype, keepdims=_kd(keepdims))
    return convert(tot / _count(mask, axis, _kd(keepdims)), aval_of(tot).dtype)


def _nan_extreme(reduce, fill, name, a, axis, out, keepdims, initial, where_):
    _unsupported(name, where=where_)
    a = _asarray(a)
    kd, initial = _kd(keepdims), _initial(initial)
    if not _inexact(a):
        return reduce(a, axis=axis, keepdims=kd, initial=initial)
    mask = isnan(a)
    res = reduce(_where(mask, fill, a), axis=axis, keepdims=kd, initial=initial)
    if initial is not None:             # an all-NaN slice gives initial (NumPy)
        return res
    return _where(_all(mask, axis=axis, keepdims=kd), np.nan, res)


@export(numpy=np.nanmax, traced=("a", "initial"))
def nanmax(a, axis=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue):
    """np.nanmax: maximum ignoring NaN (NaN for an all-NaN slice; ties share the gradient).

        >>> fnp.nanmax(x, axis=0)
    """
    return _nan_extreme(_max, -np.inf, "nanmax", a, axis, out, keepdims, initial, where)


@export(numpy=np.nanmin, traced=("a", "initial"))
def nanmin(a, axis=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue):
    """np.nanmin: minimum ignoring NaN (NaN for an all-NaN slice; ties share the gradient).

        >>> fnp.nanmin(x, axis=0)
    """
    return _nan_extreme(_min, np.inf, "nanmin", a, axis, out, keepdims, initial, where)


@export(numpy=np.nanvar, traced=("a", "ddof", "correction"))
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NoValue, *, where=_NoValue,
           mean=_NoValue, correction=_NoValue):
    """np.nanvar: variance of the non-NaN entries (NaN where count - ddof <= 0).

        >>> fnp.nanvar(x, axis=0, ddof=1)
    """
    _unsupported("nanvar", where=where, mean=mean)
    if correction is not _NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    a = _asarray(a)
    if not _inexact(a):
        return _var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=_kd(keepdims))
    mask = isnan(a)
    a0 = _fill_nan(a, 0)
    tot = _sum(a0, axis=axis, dtype=dtype, keepdims=True)
    avg = convert(tot / _count(mask, axis, True), aval_of(tot).dtype)
    centered = _where(mask, 0, a0 - avg)
    var = _sum(centered * centered, axis=axis, dtype=dtype, keepdims=_kd(keepdims))
    dof = _count(mask, axis, _kd(keepdims)) - ddof
    var = convert(var / _where(dof > 0, dof, 1), aval_of(var).dtype)
    return _where(dof > 0, var, np.nan)


@export(numpy=np.nanstd, traced=("a", "ddof", "correction"))
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NoValue, *, where=_NoValue,
           mean=_NoValue, correction=_NoValue):
    """np.nanstd = sqrt(nanvar).

        >>> fnp.nanstd(x, axis=0)
    """
    return sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
                       correction=correction))


# ---- average, ptp -------------------------------------------------------------------------------

@export(numpy=np.average, traced=("a", "weights"))
def average(a, axis=None, weights=None, returned=False, *, keepdims=_NoValue):
    """np.average, optionally weighted (weights the shape of a, or 1-D along `axis`); with
    returned=True also the sum of the weights. Weights may be traced.

        >>> fnp.average(x, axis=0, weights=w)
    """
    a = _asarray(a)
    nd, kd = aval_of(a).ndim, _kd(keepdims)
    axes = None if axis is None else tuple(_axes_in_order(axis, nd))
    if weights is None:
        avg = mean(a, axis=axes, keepdims=kd)
        scl = aval_of(avg).dtype.type(aval_of(a).size / max(aval_of(avg).size, 1))
    else:
        wgt = _asarray(weights)
        ashape, wshape = aval_of(a).shape, aval_of(wgt).shape
        if ashape != wshape:
            if axes is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if wshape != tuple(ashape[ax] for ax in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            wgt = _transpose(wgt, tuple(np.argsort(axes).tolist()))
            wgt = _reshape(wgt, [s if ax in axes else 1 for ax, s in enumerate(ashape)])
        extra = ("f8",) if aval_of(a).dtype.kind in "biu" else ()
        rdt = np.result_type(aval_of(a).dtype, aval_of(wgt).dtype, *extra)
        scl = _sum(wgt, axis=axes, dtype=rdt, keepdims=kd)
        if not isinstance(scl, Traced) and np.any(scl == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        avg = _sum(convert(a, rdt) * convert(wgt, rdt), axis=axes, keepdims=kd) / scl
    if not returned:
        return avg
    if aval_of(scl).shape != aval_of(avg).shape:
        scl = broadcast_to(scl, aval_of(avg).shape)
    return avg, scl


@export(numpy=np.ptp, traced=("a",))
def ptp(a, axis=None, out=None, keepdims=_NoValue):
    """np.ptp: max - min along `axis` (tied extremes share the gradient).

        >>> fnp.ptp(x, axis=1)
    """
    kd = _kd(keepdims)
    return _max(a, axis=axis, keepdims=kd) - _min(a, axis=axis, keepdims=kd)


# ---- median, quantile, percentile ------------------------------------------------------------

def _reduced_first(a, axis):
    """Move the reduced axes first and merge them: -> (array [n, *kept], keepdims shape)."""
    shape = aval_of(a).shape
    axes = normalize_axes(axis, len(shape))
    kept = [i for i in range(len(shape)) if i not in axes]
    n = int(np.prod([shape[i] for i in axes], dtype=np.int64))
    merged = _reshape(_transpose(a, list(axes) + kept), [n] + [shape[i] for i in kept])
    return merged, [1 if i in axes else d for i, d in enumerate(shape)]


@export(numpy=np.median, traced=("a",))
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """np.median: the mean of the middle one or two sorted values (NaN if the slice has NaN);
    the gradient goes to those elements.

        >>> fnp.median(x, axis=0)
    """
    s, kshape = _reduced_first(_asarray(a), axis)
    s = sort(s, axis=0)
    n = aval_of(s).shape[0]
    h = n // 2
    res = mean(slice_axis(s, 0, h, h + 1) if n % 2 else slice_axis(s, 0, h - 1, h + 1), axis=0)
    if _inexact(s) and n:
        res = _where(isnan(getitem(s, -1)), np.nan, res)
    return _reshape(res, kshape) if keepdims else res


_ALPHA_BETA = {"interpolated_inverted_cdf": (0.0, 1.0), "hazen": (0.5, 0.5), "weibull": (0.0, 0.0),
               "median_unbiased": (1 / 3.0, 1 / 3.0), "normal_unbiased": (3 / 8.0, 3 / 8.0)}
_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation", *_ALPHA_BETA,
            "linear", "lower", "higher", "midpoint", "nearest")


def _discrete(index, cond):
    prev = floor(index)
    return maximum(_where(cond(index - prev, index), prev, prev + 1), 0).astype(np.intp)


def _quantile_rule(n, q, method):
    """NumPy's virtual index of quantile q for `method`, and its gamma fix (None: integral).
    Written with funcgrad's functions, so that q may be traced: the index is piecewise linear
    in q (its derivative flows through gamma in _quantile), the rounding steps have derivative 0."""
    same = lambda g, vi: g
    if method == "linear":
        return (n - 1) * q, same
    if method in _ALPHA_BETA:
        al, be = _ALPHA_BETA[method]
        return n * q + (al + q * (1 - al - be)) - 1, same
    rounders = {"lower": floor, "higher": ceil, "nearest": rint}   # np.around rounds half to even
    if method in rounders:
        return rounders[method]((n - 1) * q).astype(np.intp), None
    if method == "midpoint":
        return (0.5 * (floor((n - 1) * q) + ceil((n - 1) * q)),
                lambda g, vi: _where(vi % 1 == 0, 0.0, 0.5))
    if method == "averaged_inverted_cdf":
        return n * q - 1, lambda g, vi: _where(g == 0, 0.5, 1.0)
    if method == "inverted_cdf":
        return _discrete(n * q - 1, lambda g, i: g == 0), None
    if method == "closest_observation":
        return _discrete(n * q - 1 - 0.5, lambda g, i: logical_and(g == 0, floor(i) % 2 == 1)), None
    raise ValueError(f"{method!r} is not a valid method. Use one of: {_METHODS}")


def _quantile(a, q, axis, method, keepdims, weak):
    s, kshape = _reduced_first(_asarray(a), axis)
    s = sort(s, axis=0)
    n, rest = aval_of(s).shape[0], aval_of(s).shape[1:]
    vi, fix = _quantile_rule(n, q, method)
    vi = vi if isinstance(vi, Traced) else np.asarray(vi)
    if fix is None or (method == "linear" and aval_of(vi).dtype.kind in "iu"):
        res = take(s, vi.astype(np.intp), axis=0)
    else:
        above, below, prev = vi >= n - 1, vi < 0, floor(vi)
        prev, nxt = (_where(above, n - 1, _where(below, 0, i)).astype(np.intp)
                     for i in (prev, prev + 1))
        gamma = convert(fix(vi - prev, vi), aval_of(vi).dtype)
        t = float(gamma) if weak else _reshape(gamma, aval_of(gamma).shape + (1,) * len(rest))
        dt = np.result_type(aval_of(s).dtype, t if weak else aval_of(t).dtype)
        lo, hi = convert(take(s, prev, axis=0), dt), convert(take(s, nxt, axis=0), dt)
        diff = hi - lo
        res = _where(t >= 0.5, hi - diff * (1 - t), lo + diff * t)
    if _inexact(s):
        res = _where(isnan(getitem(s, -1)), np.nan, res)
    return _reshape(res, aval_of(vi).shape + tuple(kshape)) if keepdims else res


def _traced_q(q, scale, what):
    """A traced q (or a list holding traced values) as a float array in [0, 1]: the range is
    checked where the trace knows q's value (a decision recorded as a guard); where it does not
    (fg.vmap, loop bodies) an out-of-range q gives NaN -- see _quantile_entry."""
    q = _asarray(q)
    if aval_of(q).dtype.kind not in "fc":
        q = convert(q, np.float64)
    q = q / scale if scale != 1 else q
    ok = logical_and(_all(q >= 0), _all(q <= 1))
    known = ok.known_value("bool") if isinstance(ok, Traced) else np.asarray(ok)
    if known is not None and not known:
        raise ValueError(what)
    return q, (None if known is not None else ok)


def _quantile_entry(name, a, q, axis, out, method, keepdims, weights, scale):
    _unsupported(name, weights=weights)
    what = "Percentiles must be in the range [0, 100]" if scale != 1 else \
        "Quantiles must be in the range [0, 1]"
    if aval_of(_asarray(a)).dtype.kind == "c":
        raise TypeError("a must be an array of real numbers")
    if has_traced(q):
        q, unchecked = _traced_q(q, scale, what)
        res = _quantile(a, q, axis, method, keepdims, False)
        return res if unchecked is None else _where(unchecked, res, np.nan)
    weak = type(q) in (int, float)
    q = np.asanyarray(np.true_divide(q, scale) if scale != 1 else q)
    if not (np.all(0 <= q) and np.all(q <= 1)):
        raise ValueError(what)
    return _quantile(a, q, axis, method, keepdims, weak)


@export(numpy=np.quantile, traced=("a", "q"))
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
             *, weights=None):
    """np.quantile with every NumPy method; the result's gradient goes to the one or two order
    statistics it interpolates between, and to q (the slope between them, for the interpolating
    methods).

        >>> fnp.quantile(x, [0.25, 0.75], axis=0)
    """
    return _quantile_entry("quantile", a, q, axis, out, method, keepdims, weights, 1)


@export(numpy=np.percentile, traced=("a", "q"))
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
    """np.percentile: quantile(a, q / 100).

        >>> fnp.percentile(x, 90, axis=-1)
    """
    return _quantile_entry("percentile", a, q, axis, out, method, keepdims, weights, 100)


# ---- partition -------------------------------------------------------------------------------

def _check_kth(a, kth, axis):
    a = _asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axis(axis, aval_of(a).ndim)
    n = aval_of(a).shape[axis]
    for k in np.atleast_1d(np.asarray(_static(kth, "partition: `kth`"))).tolist():
        if not -n <= operator.index(k) < n:
            raise ValueError(f"kth(={k}) out of bounds ({n})")
    return a, axis


@export(numpy=np.partition, traced=("a",))
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """np.partition. On traced arrays the result is fully sorted along `axis`, which is a
    valid partition for every kth; the gradient flows back to each element's position.

        >>> fnp.partition(x, 2, axis=-1)
    """
    a, axis = _check_kth(a, kth, axis)
    return sort(a, axis=axis)


@export(numpy=np.argpartition, traced=("a",))
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """np.argpartition. On traced arrays these are the (stable) sorting indices along
    `axis`, a valid partition for every kth.

        >>> fnp.argpartition(x, 2)
    """
    a, axis = _check_kth(a, kth, axis)
    return argsort(a, axis=axis)


# ---- cov, corrcoef ------------------------------------------------------------------------------

def _rows(x, dtype, transpose):
    """array(x, ndmin=2, dtype=dtype), transposed if transpose(that array's shape)."""
    x = convert(x, dtype)
    nd = aval_of(x).ndim
    x = _reshape(x, (1, -1) if nd == 1 else (1, 1)) if nd < 2 else x
    return _transpose(x, (1, 0)) if transpose(aval_of(x).shape) else x


@export(numpy=np.cov, traced=("m", "y", "fweights", "aweights"))
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """np.cov: covariance of the rows (variables) of m (and y); fweights/aweights may be traced.

        >>> fnp.cov(X, rowvar=False)
    """
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = _asarray(m)
    y = None if y is None else _asarray(y)
    for v, name in ((m, "m"), (y, "y")):
        if v is not None and aval_of(v).ndim > 2:
            raise ValueError(f"{name} has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(*[aval_of(v).dtype for v in (m, y) if v is not None], np.float64)
    X = _rows(m, dtype, lambda shp: not rowvar and aval_of(m).ndim != 1)
    if aval_of(X).shape[0] == 0:
        return np.array([]).reshape(0, 0)
    if y is not None:
        X = concatenate([X, _rows(y, dtype, lambda shp: not rowvar and shp[0] != 1)], axis=0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    w = None
    for wts in (fweights, aweights):
        if wts is not None:
            wts = convert(_asarray(wts), np.float64)
            if aval_of(wts).ndim > 1 or aval_of(wts).shape[0] != aval_of(X).shape[1]:
                raise RuntimeError("incompatible numbers of samples and weights")
            w = wts if w is None else w * wts
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = getitem(w_sum, 0)
    if w is None:
        fact = aval_of(X).shape[1] - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * _sum(w * convert(_asarray(aweights), np.float64)) / w_sum
    if not isinstance(fact, Traced) and fact <= 0:
        fact = 0.0
    X = X - getitem(avg, (slice(None), None))
    c = dot(X, conj(_transpose(X if w is None else X * w, (1, 0))))
    return squeeze(c * np.true_divide(1, fact) if not isinstance(fact, Traced) else c / fact)


@export(numpy=np.corrcoef, traced=("x", "y"))
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """np.corrcoef: Pearson correlation coefficients, clipped to [-1, 1] as NumPy does.

        >>> fnp.corrcoef(X)
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if aval_of(c).ndim != 2:
        return c / c
    sd = sqrt(real(diagonal(c)))
    c = c / getitem(sd, (slice(None), None))
    c = c / getitem(sd, (None, slice(None)))
    if aval_of(c).dtype.kind == "c":            # NumPy clips the two parts separately
        return convert(clip(real(c), -1, 1), aval_of(c).dtype) + 1j * clip(imag(c), -1, 1)
    return clip(c, -1, 1)
