"""fg.scipy.stats.norm: the normal distribution N(loc, scale^2), as scipy.stats.norm.

    >>> fg.scipy.stats.norm.cdf(np.array([-1.0, 0.0, 1.0]))
    array([0.15865525, 0.5       , 0.84134475])
"""
from __future__ import annotations

import math

from ... import numpy as fnp
from .. import special

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _standard(x, loc, scale):
    return (fnp.asarray(x) - loc) / scale


def logpdf(x, loc=0, scale=1):
    """scipy.stats.norm.logpdf: -((x - loc) / scale)^2 / 2 - log(scale sqrt(2 pi)).

        >>> fg.scipy.stats.norm.logpdf(np.array([0.0, 2.0]), loc=1.0, scale=2.0)
        array([-1.73708571, -1.73708571])
    """
    y = _standard(x, loc, scale)
    return -0.5 * y * y - _HALF_LOG_2PI - fnp.log(scale)


def pdf(x, loc=0, scale=1):
    """scipy.stats.norm.pdf, exp(logpdf).

        >>> fg.grad(fg.scipy.stats.norm.pdf)(0.5)       # -x pdf(x)
    """
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """scipy.stats.norm.cdf, through fg.scipy.special.ndtr.

        >>> fg.scipy.stats.norm.cdf(1.96)         # about 0.975
    """
    return special.ndtr(_standard(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """scipy.stats.norm.logcdf, through fg.scipy.special.log_ndtr (accurate far into the left
    tail).

        >>> fg.scipy.stats.norm.logcdf(-40.0)      # about -804.6
    """
    return special.log_ndtr(_standard(x, loc, scale))


def sf(x, loc=0, scale=1):
    """scipy.stats.norm.sf, the survival function 1 - cdf without cancellation.

        >>> fg.scipy.stats.norm.sf(10.0)           # about 7.6e-24
    """
    return special.ndtr(-_standard(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """scipy.stats.norm.logsf, log(1 - cdf), accurate far into the right tail.

        >>> fg.scipy.stats.norm.logsf(40.0)
    """
    return special.log_ndtr(-_standard(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """scipy.stats.norm.ppf, the quantile function, loc + scale * ndtri(q).

        >>> fg.scipy.stats.norm.ppf(np.array([0.5, 0.975]), loc=1.0)
        array([1.        , 2.95996398])
    """
    return loc + scale * special.ndtri(q)


def isf(q, loc=0, scale=1):
    """scipy.stats.norm.isf, the inverse survival function, loc - scale * ndtri(q).

        >>> fg.scipy.stats.norm.isf(0.025)        # about 1.96
    """
    return loc - scale * special.ndtri(q)
