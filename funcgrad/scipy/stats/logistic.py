"""fg.scipy.stats.logistic: the logistic distribution, density e^-y / (1 + e^-y)^2 for
y = (x - loc) / scale, as scipy.stats.logistic.

    >>> fg.scipy.stats.logistic.cdf(np.array([-2.0, 0.0, 2.0]))
    array([0.11920292, 0.5       , 0.88079708])
"""
from __future__ import annotations

from ... import numpy as fnp
from .. import special
from .norm import _standard as _y

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """scipy.stats.logistic.logpdf: -|y| - 2 log(1 + e^-|y|) - log(scale) (stable in both
    tails).

        >>> fg.scipy.stats.logistic.logpdf(np.array([0.0, 800.0]))
    """
    a = fnp.abs(_y(x, loc, scale))
    return -a - 2.0 * fnp.log1p(fnp.exp(-a)) - fnp.log(scale)


def pdf(x, loc=0, scale=1):
    """scipy.stats.logistic.pdf, exp(logpdf).

        >>> fg.scipy.stats.logistic.pdf(0.0)       # 1/4
    """
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """scipy.stats.logistic.cdf, expit(y).

        >>> fg.scipy.stats.logistic.cdf(1.0)
    """
    return special.expit(_y(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """scipy.stats.logistic.logcdf, -log(1 + e^-y) without overflow.

        >>> fg.scipy.stats.logistic.logcdf(-800.0)
    """
    return -fnp.logaddexp(0.0, -_y(x, loc, scale))


def sf(x, loc=0, scale=1):
    """scipy.stats.logistic.sf, expit(-y).

        >>> fg.scipy.stats.logistic.sf(1.0)
    """
    return special.expit(-_y(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """scipy.stats.logistic.logsf, -log(1 + e^y).

        >>> fg.scipy.stats.logistic.logsf(800.0)
    """
    return -fnp.logaddexp(0.0, _y(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """scipy.stats.logistic.ppf, loc + scale logit(q).

        >>> fg.scipy.stats.logistic.ppf(0.75)      # log 3
    """
    return loc + scale * special.logit(q)
