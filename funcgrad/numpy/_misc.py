"""The rest of NumPy's numeric surface that autograd's numpy offers: differences (diff,
gradient), signal helpers (convolve, correlate, interp, polyval, sinc), nan_to_num,
closeness tests (isclose, allclose, array_equal, array_equiv), predicates
(isposinf, ...). The complex-part helpers (real, imag, angle, ...) are in _complex.py. Statistics and partition live in _stats.py; the NaN-ignoring fmax/fmin are
ufunc primitives in primitives/elementwise.py, searchsorted a primitive in
primitives/reductions.py.

Every function here is a composition, so its derivatives of every order come from existing
rules. On plain arrays every function returns what NumPy does. Shape-determining
arguments (n, edge_order, modes, axes) must be concrete.
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir import Traced, aval_of
from ..primitives.base import (NAMESPACE, broadcast_to, convert, dtype_or_pytype, export,
                               float_dtype, full)
from ..primitives.contract import contract
from ..primitives.elementwise import (absolute, clip, equal, greater, isfinite, isinf, isnan, less,
                          less_equal, logical_and, logical_not, logical_or, not_equal, signbit,
                          sin, where)
from ..primitives.indexing import getitem, slice_axis
from ..primitives.reductions import argsort, searchsorted, sum as _sum
from ..primitives.shape import _asarray, _axes_in_order, _axis, concatenate, flip, reshape, take
from ._complex import conj, imag, real
from ._reductions import all as _all
from ._shape import _static

_NoValue = np._NoValue


def _shape(x):
    return aval_of(x).shape


def _ndim(x):
    return aval_of(x).ndim


# ---- differences ------------------------------------------------------------------------------

@export(numpy=np.diff, traced=("a", "prepend", "append"))
def diff(a, n=1, axis=-1, prepend=_NoValue, append=_NoValue):
    """np.diff: n-th discrete difference along `axis` (booleans use !=).

        >>> fnp.diff(x, n=2, axis=0, prepend=0.0)
    """
    n = operator.index(_static(n, "diff: `n`"))
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    a = _asarray(a)
    if _ndim(a) == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = _axis(axis, _ndim(a))
    edge = tuple(1 if i == axis else d for i, d in enumerate(_shape(a)))
    parts = []
    for extra in (prepend, None, append):
        if extra is None:
            parts.append(a)
        elif extra is not _NoValue:
            extra = _asarray(extra)
            parts.append(broadcast_to(extra, edge, force=True) if _ndim(extra) == 0 else extra)
    if len(parts) > 1:
        a = concatenate(parts, axis)
    op = not_equal if aval_of(a).dtype == np.bool_ else (lambda u, v: u - v)
    for _ in range(n):
        a = op(slice_axis(a, axis, 1, None), slice_axis(a, axis, None, -1))
    return a


def _spacing(d, length):
    """A spacing argument of np.gradient -> a scalar step or the 1-D array of coordinate gaps."""
    d = _asarray(d)
    if _ndim(d) == 0:
        return d if isinstance(d, Traced) else d[()]
    if _ndim(d) != 1:
        raise ValueError("distances must be either scalars or 1d")
    if _shape(d)[0] != length:
        raise ValueError("when 1d, distances must match the length of the corresponding dimension")
    if aval_of(d).dtype.kind in "iub":
        d = convert(d, np.float64)
    dx = diff(d)
    if not isinstance(dx, Traced) and (dx == dx[0]).all():
        return dx[0]                            # uniform: NumPy's scalar formulas
    return dx


def _gradient_axis(f, ax, h, edge_order):
    nd = _ndim(f)
    sl = lambda start, stop: slice_axis(f, ax, start, stop)
    if _ndim(h) == 0:
        inner = (sl(2, None) - sl(None, -2)) / (2.0 * h)
        if edge_order == 1:
            first, last = (sl(1, 2) - sl(0, 1)) / h, (sl(-1, None) - sl(-2, -1)) / h
        else:
            first = (-1.5 / h) * sl(0, 1) + (2.0 / h) * sl(1, 2) + (-0.5 / h) * sl(2, 3)
            last = (0.5 / h) * sl(-3, -2) + (-2.0 / h) * sl(-2, -1) + (1.5 / h) * sl(-1, None)
        return concatenate([first, inner, last], ax)
    col = lambda v: reshape(v, [-1 if i == ax else 1 for i in range(nd)])
    dx1, dx2 = slice_axis(h, 0, 0, -1), slice_axis(h, 0, 1, None)
    a, b, c = -dx2 / (dx1 * (dx1 + dx2)), (dx2 - dx1) / (dx1 * dx2), dx1 / (dx2 * (dx1 + dx2))
    inner = col(a) * sl(None, -2) + col(b) * sl(1, -1) + col(c) * sl(2, None)
    if edge_order == 1:
        first = (sl(1, 2) - sl(0, 1)) / getitem(h, 0)
        last = (sl(-1, None) - sl(-2, -1)) / getitem(h, -1)
    else:
        d1, d2 = getitem(h, 0), getitem(h, 1)
        first = (-(2.0 * d1 + d2) / (d1 * (d1 + d2)) * sl(0, 1) + (d1 + d2) / (d1 * d2) * sl(1, 2)
                 - d1 / (d2 * (d1 + d2)) * sl(2, 3))
        d1, d2 = getitem(h, -2), getitem(h, -1)
        last = (d2 / (d1 * (d1 + d2)) * sl(-3, -2) - (d2 + d1) / (d1 * d2) * sl(-2, -1)
                + (2.0 * d2 + d1) / (d2 * (d1 + d2)) * sl(-1, None))
    return concatenate([first, inner, last], ax)


@export(numpy=np.gradient, traced=("f", "varargs"))
def gradient(f, *varargs, axis=None, edge_order=1):
    """np.gradient: central differences inside, one-sided (edge_order 1 or 2) at the ends;
    spacing as one scalar, one scalar per axis, or coordinate arrays (which may be traced).
    Returns one array, or a tuple of arrays when several axes are differentiated.

        >>> dfdx, dfdy = fnp.gradient(f, 0.1, 0.2)
    """
    f = _asarray(f)
    nd = _ndim(f)
    axes = tuple(range(nd)) if axis is None else tuple(_axes_in_order(axis, nd))
    if not varargs:
        dx = [1.0] * len(axes)
    elif len(varargs) == 1 and _ndim(_asarray(varargs[0])) == 0:
        dx = [_spacing(varargs[0], 0)] * len(axes)
    elif len(varargs) == len(axes):
        dx = [_spacing(d, _shape(f)[ax]) for d, ax in zip(varargs, axes)]
    else:
        raise TypeError("invalid number of arguments")
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = aval_of(f).dtype if aval_of(f).dtype.kind in "fc" else np.dtype(np.float64)
    f = convert(f, otype)
    outs = []
    for ax, h in zip(axes, dx):
        if _shape(f)[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
        outs.append(convert(_gradient_axis(f, ax, h, edge_order), otype))
    return outs[0] if len(outs) == 1 else tuple(outs)


# ---- elementwise helpers ----------------------------------------------------------------------

@export(numpy=np.sinc, traced=("x",))
def sinc(x):
    """np.sinc: sin(pi x) / (pi x), 1 at 0; exact derivatives at 0 too (a Taylor branch).

        >>> fnp.sinc(x)
    """
    x = _asarray(x)
    y = np.pi * convert(x, float_dtype(aval_of(x).dtype))
    zero = equal(y, 0)
    safe = where(zero, 1.0, y)
    y2 = y * y
    return where(zero, 1.0 - y2 / 6.0 + y2 * y2 / 120.0, sin(safe) / safe)


@export(numpy=np.nan_to_num, traced=("x", "nan", "posinf", "neginf"))
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """np.nan_to_num: replace NaN, +inf, -inf (defaults 0, the largest and the most negative
    finite value). The derivative is 1 at finite entries and 0 at replaced ones.

        >>> fnp.nan_to_num(x, nan=0.0, posinf=1e6)
    """
    x = _asarray(x)
    dt = aval_of(x).dtype
    if dt.kind != "f":
        if dt.kind == "c":      # NumPy replaces in the real and imaginary parts separately
            part = dict(copy=copy, nan=nan, posinf=posinf, neginf=neginf)
            return (convert(nan_to_num(NAMESPACE["real"](x), **part), dt)
                    + 1j * nan_to_num(NAMESPACE["imag"](x), **part))
        return x
    info = np.finfo(dt)
    fill = lambda v, default: convert(default if v is None else v, dt)
    return where(isnan(x), fill(nan, 0.0), where(
        isposinf(x), fill(posinf, info.max), where(isneginf(x), fill(neginf, info.min), x)))


@export(numpy=np.isposinf, traced=("x",))
def isposinf(x, out=None):
    """np.isposinf (no gradient).

        >>> fnp.isposinf(x)
    """
    return logical_and(isinf(x), logical_not(signbit(x)))


@export(numpy=np.isneginf, traced=("x",))
def isneginf(x, out=None):
    """np.isneginf (no gradient).

        >>> fnp.isneginf(x)
    """
    return logical_and(isinf(x), signbit(x))


# ---- comparisons (no gradient; traced boolean results) ----------------------------------------

@export(numpy=np.isclose, traced=("a", "b", "rtol", "atol"))
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """np.isclose: |a - b| <= atol + rtol |b| elementwise (infinities close only if equal).

        >>> fnp.isclose(x, y, rtol=1e-6)
    """
    x, y = (v if type(v) in (int, float) else _asarray(v) for v in (a, b))
    if type(y) is not float:
        y = float(y) if type(y) is int else convert(y, np.result_type(dtype_or_pytype(y), 1.0))
    close = less_equal(absolute(x - y), atol + rtol * absolute(y))
    result = logical_or(logical_and(close, isfinite(y)), equal(x, y))
    if equal_nan:
        result = logical_or(result, logical_and(isnan(x), isnan(y)))
    return result


@export(numpy=np.allclose, traced=("a", "b", "rtol", "atol"))
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """np.allclose: all(isclose(...)); a traced 0-d boolean when traced.

        >>> fnp.allclose(x, y)
    """
    return _all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


@export(numpy=np.array_equal, traced=("a1", "a2"))
def array_equal(a1, a2, equal_nan=False):
    """np.array_equal: same shape and all elements equal (False if the shapes differ).

        >>> fnp.array_equal(x, y)
    """
    a1, a2 = _asarray(a1), _asarray(a2)
    if _shape(a1) != _shape(a2):
        return False
    eq = equal(a1, a2)
    if equal_nan:
        eq = logical_or(eq, logical_and(isnan(a1), isnan(a2)))
    return _all(eq)


@export(numpy=np.array_equiv, traced=("a1", "a2"))
def array_equiv(a1, a2):
    """np.array_equiv: broadcastable and all elements equal.

        >>> fnp.array_equiv(x, y[None])
    """
    a1, a2 = _asarray(a1), _asarray(a2)
    try:
        np.broadcast_shapes(_shape(a1), _shape(a2))
    except ValueError:
        return False
    return _all(equal(a1, a2))


@export(numpy=np.count_nonzero, traced=("a",))
def count_nonzero(a, axis=None, *, keepdims=False):
    """np.count_nonzero (an integer result).

        >>> fnp.count_nonzero(x > 0, axis=1)
    """
    return _sum(not_equal(_asarray(a), 0), axis=axis, dtype=np.intp, keepdims=keepdims)


# ---- convolve, correlate, interp, polyval ------------------------------------------------------

_MODES = {"full": "full", "f": "full", 2: "full", "same": "same", "s": "same", 1: "same",
          "valid": "valid", "v": "valid", 0: "valid"}


def _convolve(a, v, mode, corr):
    a, v = _asarray(a), _asarray(v)
    a, v = (x if _ndim(x) else getitem(x, None) for x in (a, v))
    if _ndim(a) != 1 or _ndim(v) != 1:
        raise ValueError("object too deep for desired array")
    n, m = _shape(a)[0], _shape(v)[0]
    if n == 0 or m == 0:
        raise ValueError(f"{'a' if n == 0 else 'v'} cannot be empty")
    if mode not in _MODES:
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    mode = _MODES[mode]
    dt = np.result_type(aval_of(a).dtype, aval_of(v).dtype)
    a, v = convert(a, dt), convert(v, dt)
    if corr:                    # real arrays: correlate(a, v) = convolve(a, v[::-1])
        v = flip(v, 0)
    (long, L), (short, S) = ((a, n), (v, m)) if n >= m else ((v, m), (a, n))
    start, length = {"full": (0, L + S - 1), "valid": (S - 1, L - S + 1),
                     "same": ((S - 1) // 2 if n >= m or not corr else S // 2, L)}[mode]
    # out[k] = sum_j long[k - j] short[j]: one gather of the zero-padded long operand
    idx = np.arange(start, start + length)[:, None] - np.arange(S)[None, :]
    if mode != "valid" and S > 1:
        pad = full((S - 1,), 0, dt)
        long, idx = concatenate([pad, long, pad]), idx + (S - 1)
    return contract(getitem(long, idx.astype(np.intp)), short, "kj", "j", "k")


@export(numpy=np.convolve, traced=("a", "v"))
def convolve(a, v, mode="full"):
    """np.convolve of 1-D arrays (modes full, same, valid), as a gather and a contraction.

        >>> fnp.convolve(signal, kernel, mode="same")
    """
    return _convolve(a, v, mode, False)


@export(numpy=np.correlate, traced=("a", "v"))
def correlate(a, v, mode="valid"):
    """np.correlate of 1-D arrays (modes full, same, valid); a complex v is conjugated, as
    NumPy does.

        >>> fnp.correlate(x, template, mode="valid")
    """
    return _convolve(a, conj(v), mode, True)


@export(numpy=np.interp, traced=("x", "xp", "fp", "left", "right", "period"))
def interp(x, xp, fp, left=None, right=None, period=None):
    """np.interp: piecewise-linear interpolation (float64). x, xp and fp may all be traced;
    the gradient w.r.t. x is the segment's slope (0 outside [xp[0], xp[-1]]), w.r.t. fp the
    interpolation weights.

        >>> fnp.interp(x, [0.0, 1.0, 2.0], fp)
    """
    fp = _asarray(fp)
    if aval_of(fp).dtype.kind == "c":         # NumPy: the real and imaginary parts separately
        parts = [interp(x, xp, part(fp), left, right, period) for part in (real, imag)]
        return convert(parts[0], np.complex128) + 1j * parts[1]
    x, xp, fp = (convert(_asarray(t), np.float64) for t in (x, xp, fp))
    if _ndim(xp) != 1 or _ndim(fp) != 1:
        raise ValueError("Data points must be 1D sequences")
    if _shape(xp) != _shape(fp):
        raise ValueError("fp and xp are not of the same length.")
    if _shape(xp)[0] == 0:
        raise ValueError("array of sample points is empty")
    if period is not None:
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period, left, right = abs(period), None, None
        x, xp = x % period, xp % period
        order = argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        ends = lambda v: (getitem(v, slice(-1, None)), getitem(v, slice(0, 1)))
        (xl, xf), (fl, ff) = ends(xp), ends(fp)
        xp, fp = concatenate([xl - period, xp, xf + period]), concatenate([fl, fp, ff])
    n = _shape(xp)[0]
    first, last = getitem(xp, 0), getitem(xp, -1)
    lv = getitem(fp, 0) if left is None else left
    rv = getitem(fp, -1) if right is None else right
    if n == 1:
        res = broadcast_to(getitem(fp, 0), _shape(x), force=True)
    else:
        j = clip(searchsorted(xp, x, side="right") - 1, 0, n - 2)
        x0, x1, f0, f1 = take(xp, j), take(xp, j + 1), take(fp, j), take(fp, j + 1)
        width = x1 - x0
        res = (f1 - f0) / where(width == 0, 1.0, width) * (x - x0) + f0
        res = where(equal(x, last), getitem(fp, -1), res)
    return convert(where(less(x, first), lv, where(greater(x, last), rv, res)), np.float64)


@export(numpy=np.polyval, traced=("p", "x"))
def polyval(p, x):
    """np.polyval by Horner's rule (coefficients highest power first); p and x may be traced.

        >>> fnp.polyval([3.0, 0.0, 1.0], x)
    """
    p, x = _asarray(p), _asarray(x)
    y = full(_shape(x), 0, aval_of(x).dtype) if isinstance(x, Traced) else np.zeros_like(x)
    for i in range(_shape(p)[0] if _ndim(p) else 1):
        y = y * x + (getitem(p, i) if _ndim(p) else p)
    return y
