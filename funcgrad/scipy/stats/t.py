"""fg.scipy.stats.t: Student's t distribution with df degrees of freedom, as scipy.stats.t.

    >>> fg.scipy.stats.t.logpdf(0.0, df=1.0)     # Cauchy: -log(pi)

The log density is written in forms that stay accurate, value and derivatives, as df grows
to infinity (where it becomes the normal's; df = inf is allowed): with a = df / 2 and
u = y^2 / df,

    logpdf = R(a) - log(2 pi) / 2 - (y^2 L(u) + log1p(u)) / 2 - log(scale),
    R(a) = log Gamma(a + 1/2) - log Gamma(a) - log(a) / 2,   L(u) = log1p(u) / u,

R by its asymptotic series for large a (Bernoulli numbers) and L by its Taylor series for
small u, so that neither subtracts nearly equal numbers (nor does their derivative: the
textbook form's derivative in df cancels to a relative error of about eps * df).
"""
from __future__ import annotations

import math
from fractions import Fraction

from ... import numpy as fnp
from ..special import gammaln

__all__ = ["logpdf", "pdf"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)

# R(a) ~ sum over even k of c_k / a^(k-1), c_k = (-1)^(k+1) B_k (2 - 2^(1-k)) / (k (k-1)):
# the difference of the Stirling series of log Gamma(a + 1/2) and log Gamma(a).
_BERNOULLI = {2: Fraction(1, 6), 4: Fraction(-1, 30), 6: Fraction(1, 42), 8: Fraction(-1, 30),
              10: Fraction(5, 66), 12: Fraction(-691, 2730), 14: Fraction(7, 6),
              16: Fraction(-3617, 510)}
_R_SERIES = [float((-1) ** (k + 1) * b * (2 - Fraction(2) ** (1 - k)) / (k * (k - 1)))
             for k, b in sorted(_BERNOULLI.items())]
_R_FROM = 10.0            # the series for a >= 10 (its error there: ~1e-17)
_L_BELOW = 0.05           # the Taylor series of L for u < 0.05 (to u^13: error ~5e-20)
_L_TERMS = 14


def _ratio(a):
    """R(a) = log Gamma(a + 1/2) - log Gamma(a) - log(a) / 2 (-> 0 as a -> inf)."""
    big = a >= _R_FROM
    s = 1.0 / fnp.where(big, a, _R_FROM)           # (each branch only where it is taken)
    s2, series = s * s, 0.0
    for c in reversed(_R_SERIES):                   # Horner's scheme in 1/a^2
        series = series * s2 + c
    small = fnp.where(big, 1.0, a)
    direct = gammaln(small + 0.5) - gammaln(small) - 0.5 * fnp.log(small)
    return fnp.where(big, s * series, direct)


def _log1p_over(u):
    """L(u) = log1p(u) / u (1 at u = 0)."""
    tiny = u < _L_BELOW
    v = fnp.where(tiny, u, 1.0)
    series = 0.0
    for k in reversed(range(_L_TERMS)):             # sum of (-v)^k / (k + 1), Horner's scheme
        series = 1.0 / (k + 1) - v * series
    w = fnp.where(tiny, 1.0, u)
    return fnp.where(tiny, series, fnp.log1p(w) / w)


def logpdf(x, df, loc=0, scale=1):
    """scipy.stats.t.logpdf: log Gamma((df+1)/2) - log Gamma(df/2) - log(sqrt(df pi) scale)
    - (df+1)/2 log(1 + y^2/df), y = (x - loc) / scale; differentiable in x, df, loc, scale,
    accurate (values and derivatives) for every df up to inf (the normal's).

        >>> fg.scipy.stats.t.logpdf(np.array([0.0, 1.0]), df=3.0)
        array([-1.00088885, -1.57625299])
    """
    y = (fnp.asarray(x) - loc) / scale
    df = fnp.asarray(df) * 1.0
    y2 = y * y
    u = y2 / df
    return (_ratio(0.5 * df) - _HALF_LOG_2PI - 0.5 * (y2 * _log1p_over(u) + fnp.log1p(u))
            - fnp.log(scale))


def pdf(x, df, loc=0, scale=1):
    """scipy.stats.t.pdf, exp(logpdf).

        >>> fg.grad(lambda df: fg.scipy.stats.t.pdf(1.0, df))(4.0)
    """
    return fnp.exp(logpdf(x, df, loc, scale))

