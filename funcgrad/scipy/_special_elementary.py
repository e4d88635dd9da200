"""fg.scipy.special's elementary functions, compositions of funcgrad operations (they compile
like any other code): entr, rel_entr, kl_div, huber, pseudo_huber, log_expit, softmax,
log_softmax, boxcox, boxcox1p, inv_boxcox, inv_boxcox1p, exp10, exp2, cbrt, expm1, log1p.

At the points where SciPy's definition switches to a constant (x == 0 in entr, rel_entr and
kl_div), the derivative is that of the constant, as for fg.scipy.special.xlogy. Re-exported by
fg.scipy.special (through _special_more).
"""
from __future__ import annotations

import numpy as np

from .. import nn
from .. import numpy as fnp
from ..higher_order import stop_gradient

__all__ = ["entr", "rel_entr", "kl_div", "huber", "pseudo_huber", "log_expit", "softmax",
           "log_softmax", "boxcox", "boxcox1p", "inv_boxcox", "inv_boxcox1p", "exp10", "exp2",
           "cbrt", "expm1", "log1p"]

def _nan_if_nan(out, *xs):
    """out, NaN where any of xs is NaN (SciPy's functions pass NaN through every branch)."""
    bad = fnp.isnan(xs[0])
    for x in xs[1:]:
        bad = bad | fnp.isnan(x)
    return fnp.where(bad, np.nan, out)


def entr(x):
    """scipy.special.entr, the elementwise entropy -x log(x) for x > 0, 0 at x = 0 and -inf
    for x < 0. Derivative -log(x) - 1 (0 at x = 0).

        >>> fg.scipy.special.entr(np.array([0.0, 0.5, -1.0]))
        array([0.        , 0.34657359,       -inf])
    """
    x = fnp.asarray(x) * 1.0
    positive = x > 0
    inner = -x * fnp.log(fnp.where(positive, x, 1.0))
    return fnp.where(positive, inner, fnp.where(x < 0, -np.inf, 0.0 * x))   # (0 * NaN: NaN)


def _relative(x, y):
    """(x > 0 and y > 0, x log(x / y) there, x == 0 and y >= 0)."""
    x, y = fnp.asarray(x) * 1.0, fnp.asarray(y) * 1.0
    both = (x > 0) & (y > 0)
    ratio = fnp.where(both, x, 1.0) / fnp.where(both, y, 1.0)
    return x, y, both, x * fnp.log(ratio), (x == 0) & (y >= 0)


def rel_entr(x, y):
    """scipy.special.rel_entr, x log(x / y) for x, y > 0; 0 for x = 0, y >= 0; inf otherwise.
    Derivatives log(x / y) + 1 and -x / y (0 and 0 where x = 0).

        >>> fg.scipy.special.rel_entr(np.array([1.0, 0.0, 1.0]), np.array([0.5, 2.0, 0.0]))
        array([0.69314718, 0.        ,        inf])
    """
    x, y, both, inner, edge = _relative(x, y)
    return _nan_if_nan(fnp.where(both, inner, fnp.where(edge, 0.0 * x, np.inf)), x, y)


def kl_div(x, y):
    """scipy.special.kl_div, x log(x / y) - x + y for x, y > 0; y for x = 0, y >= 0; inf
    otherwise (summed over a distribution it is its Kullback-Leibler divergence).

        >>> fg.scipy.special.kl_div(np.array([1.0, 0.0]), np.array([0.5, 2.0]))
        array([0.19314718, 2.        ])
    """
    x, y, both, inner, edge = _relative(x, y)
    return _nan_if_nan(fnp.where(both, inner - x + y, fnp.where(edge, y, np.inf)), x, y)


def huber(delta, r):
    """scipy.special.huber: r^2 / 2 for |r| <= delta, delta (|r| - delta / 2) beyond, inf for
    delta < 0.

        >>> fg.scipy.special.huber(1.0, np.array([0.5, 3.0]))
        array([0.125, 2.5  ])
    """
    delta, r = fnp.asarray(delta) * 1.0, fnp.asarray(r) * 1.0
    size = fnp.abs(r)
    out = fnp.where(size <= delta, 0.5 * r * r, delta * (size - 0.5 * delta))
    return fnp.where(delta < 0, np.inf, out)


def pseudo_huber(delta, r):
    """scipy.special.pseudo_huber, delta^2 (sqrt(1 + (r / delta)^2) - 1), computed as
    r (r / (1 + hypot(1, r / delta))) (no cancellation for small r, no overflow for large r
    or tiny delta, where SciPy's overflows to inf); inf for delta < 0 and |r| = inf, 0 for
    delta = 0 or r = 0. For delta = inf it gives the limit r^2 / 2 (SciPy gives NaN).

        >>> fg.scipy.special.pseudo_huber(2.0, np.array([0.0, 1e-10, 2.0]))
        array([0.00000000e+00, 5.00000000e-21, 1.65685425e+00])
    """
    delta, r = fnp.asarray(delta) * 1.0, fnp.asarray(r) * 1.0
    positive = delta > 0
    inner = positive & fnp.isfinite(r)
    t = r / fnp.where(inner, delta, 1.0)
    safe = fnp.where(inner, r, 0.0)
    # r * (r / ...): no overflow where delta |r| is finite; r = 0 too (curvature 1 there)
    out = safe * (safe / (1.0 + fnp.hypot(1.0, t)))
    edge = fnp.where((delta == 0) | (r == 0), 0.0, fnp.where(positive, fnp.abs(r), np.nan))
    return fnp.where(delta < 0, np.inf, fnp.where(inner, out, edge))


def log_expit(x):
    """scipy.special.log_expit, log(expit(x)) accurate in both tails (fg.nn.log_sigmoid).

        >>> fg.scipy.special.log_expit(np.array([-1000.0, 0.0, 40.0]))
        array([-1.00000000e+03, -6.93147181e-01, -4.24835426e-18])
    """
    return nn.log_sigmoid(fnp.asarray(x) * 1.0)


def softmax(x, axis=None):
    """scipy.special.softmax: exp(x) / sum(exp(x)) over `axis` (None: over all entries, as
    SciPy's default), without overflow: x is shifted by its maximum (SciPy's NaN where that
    is infinite).

        >>> fg.scipy.special.softmax(np.array([[1000.0, 1000.0], [0.0, 0.0]]))
        array([[0.5, 0.5],
               [0. , 0. ]])
    """
    x = fnp.asarray(x) * 1.0
    e = fnp.exp(x - stop_gradient(fnp.max(x, axis=axis, keepdims=True)))
    return e / fnp.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=None):
    """scipy.special.log_softmax: x - logsumexp(x) over `axis` (None: over all entries).

        >>> fg.scipy.special.log_softmax(np.array([0.0, 1000.0]))
        array([-1000.,     0.])
    """
    return nn.log_softmax(fnp.asarray(x) * 1.0, axis=axis)


def _boxcox(log_x, lmbda):
    """expm1(lmbda log_x) / lmbda, and at lmbda == 0 its limit log_x written as the start of
    its series in lmbda, log_x (1 + lmbda log_x / 2 (1 + lmbda log_x / 3)): the same value,
    with the right first and second derivatives in lmbda there."""
    lmbda = fnp.asarray(lmbda) * 1.0
    zero = lmbda == 0
    u = lmbda * log_x
    series = fnp.where(fnp.isinf(log_x), log_x, log_x * (1.0 + 0.5 * u * (1.0 + u / 3.0)))
    return fnp.where(zero, series, fnp.expm1(u) / fnp.where(zero, 1.0, lmbda))


def _inv_boxcox(y, lmbda):
    """log1p(lmbda y) / lmbda (the log of inv_boxcox), and at lmbda == 0 its limit y as the
    start of its series, y (1 - lmbda y / 2 + (lmbda y)^2 / 3)."""
    y, lmbda = fnp.asarray(y) * 1.0, fnp.asarray(lmbda) * 1.0
    zero = lmbda == 0
    u = lmbda * y
    series = fnp.where(fnp.isinf(y), y, y * (1.0 - 0.5 * u + u * u / 3.0))
    return fnp.where(zero, series, fnp.log1p(u) / fnp.where(zero, 1.0, lmbda))


def boxcox(x, lmbda):
    """scipy.special.boxcox, the Box-Cox transform (x^lmbda - 1) / lmbda, log(x) at
    lmbda = 0; NaN for x < 0. Differentiable in x and lmbda (also at lmbda = 0).

        >>> fg.scipy.special.boxcox(np.array([1.0, 4.0, 4.0]), np.array([2.0, 0.5, 0.0]))
        array([0.        , 2.        , 1.38629436])
    """
    return _boxcox(fnp.log(fnp.asarray(x) * 1.0), lmbda)


def boxcox1p(x, lmbda):
    """scipy.special.boxcox1p, the Box-Cox transform of 1 + x, accurate for small x:
    ((1 + x)^lmbda - 1) / lmbda, log1p(x) at lmbda = 0.

        >>> fg.scipy.special.boxcox1p(np.array([1e-20, 3.0]), np.array([0.5, 0.0]))
        array([1.00000000e-20, 1.38629436e+00])
    """
    return _boxcox(fnp.log1p(fnp.asarray(x) * 1.0), lmbda)


def inv_boxcox(y, lmbda):
    """scipy.special.inv_boxcox, the inverse of boxcox: (1 + lmbda y)^(1 / lmbda), exp(y) at
    lmbda = 0.

        >>> fg.scipy.special.inv_boxcox(np.array([0.0, 2.0]), np.array([2.0, 0.5]))
        array([1., 4.])
    """
    return fnp.exp(_inv_boxcox(y, lmbda))


def inv_boxcox1p(y, lmbda):
    """scipy.special.inv_boxcox1p, the inverse of boxcox1p: (1 + lmbda y)^(1 / lmbda) - 1,
    expm1(y) at lmbda = 0, accurate for small results.

        >>> fg.scipy.special.inv_boxcox1p(np.array([1e-20, 2.0]), np.array([0.5, 0.5]))
        array([1.e-20, 3.e+00])
    """
    return fnp.expm1(_inv_boxcox(y, lmbda))


def exp10(x):
    """scipy.special.exp10, 10^x.

        >>> fg.scipy.special.exp10(np.array([-2.0, 3.0]))
        array([1.e-02, 1.e+03])
    """
    return fnp.power(10.0, fnp.asarray(x) * 1.0)


def exp2(x):
    """scipy.special.exp2, 2^x (fnp.exp2).

        >>> fg.scipy.special.exp2(np.array([-1.0, 10.0]))
        array([5.000e-01, 1.024e+03])
    """
    return fnp.exp2(x)


def cbrt(x):
    """scipy.special.cbrt, the real cube root, negative for x < 0 (fnp.cbrt).

        >>> fg.scipy.special.cbrt(np.array([-8.0, 27.0]))
        array([-2.,  3.])
    """
    return fnp.cbrt(x)


def expm1(x):
    """scipy.special.expm1, exp(x) - 1 accurate for small x (fnp.expm1).

        >>> fg.scipy.special.expm1(np.array([1e-20, 1.0]))
        array([1.00000000e-20, 1.71828183e+00])
    """
    return fnp.expm1(x)


def log1p(x):
    """scipy.special.log1p, log(1 + x) accurate for small x (fnp.log1p).

        >>> fg.scipy.special.log1p(np.array([1e-20, np.e - 1]))
        array([1.e-20, 1.e+00])
    """
    return fnp.log1p(x)
