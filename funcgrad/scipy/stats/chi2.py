"""fg.scipy.stats.chi2: the chi-squared distribution with df degrees of freedom, as
scipy.stats.chi2 (the gamma distribution with shape df / 2 and scale 2).

    >>> fg.scipy.stats.chi2.cdf(np.array([1.0, 3.84]), df=1)
    array([0.68268949, 0.94995648])
"""
from __future__ import annotations

import math

import numpy as np

from ... import numpy as fnp
from .. import special
from .norm import _standard as _y

__all__ = ["logpdf", "pdf", "cdf", "sf"]


def logpdf(x, df, loc=0, scale=1):
    """scipy.stats.chi2.logpdf: (df/2 - 1) log y - y/2 - (df/2) log 2 - log Gamma(df/2) -
    log(scale), -inf below 0; differentiable in x, df, loc and scale.

        >>> fg.grad(fg.scipy.stats.chi2.logpdf, argnums=1)(2.0, 3.0)
    """
    y = _y(x, loc, scale)
    inside = y >= 0
    y = fnp.where(inside, y, 1.0)
    k = 0.5 * fnp.asarray(df)
    return fnp.where(inside, special.xlogy(k - 1.0, y) - 0.5 * y - k * math.log(2.0)
                     - special.gammaln(k), -np.inf) - fnp.log(scale)


def pdf(x, df, loc=0, scale=1):
    """scipy.stats.chi2.pdf, exp(logpdf).

        >>> fg.scipy.stats.chi2.pdf(1.0, df=2)
    """
    return fnp.exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
    """scipy.stats.chi2.cdf, the regularized lower incomplete gamma P(df/2, y/2);
    differentiable in x, loc and scale (not in df).

        >>> fg.scipy.stats.chi2.cdf(3.84, df=1)    # about 0.95
    """
    y = fnp.maximum(_y(x, loc, scale), 0.0)
    return special.gammainc(0.5 * fnp.asarray(df), 0.5 * y)


def sf(x, df, loc=0, scale=1):
    """scipy.stats.chi2.sf, Q(df/2, y/2) (no cancellation in the right tail).

        >>> fg.scipy.stats.chi2.sf(30.0, df=2)
    """
    y = fnp.maximum(_y(x, loc, scale), 0.0)
    return special.gammaincc(0.5 * fnp.asarray(df), 0.5 * y)
