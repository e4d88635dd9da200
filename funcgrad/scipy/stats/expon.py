"""fg.scipy.stats.expon: the exponential distribution, density exp(-y) for y = (x - loc) / scale
>= 0, as scipy.stats.expon.

    >>> fg.scipy.stats.expon.cdf(np.array([-1.0, 1.0]))
    array([0.        , 0.63212056])
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from .norm import _standard as _y

__all__ = ["logpdf", "pdf", "cdf", "sf", "logsf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """scipy.stats.expon.logpdf: -y - log(scale) for y >= 0, -inf below.

        >>> fg.grad(fg.scipy.stats.expon.logpdf, argnums=2)(1.0, 0.0, 2.0)   # (y - 1) / scale
    """
    y = _y(x, loc, scale)
    return fnp.where(y >= 0, -y, -np.inf) - fnp.log(scale)


def pdf(x, loc=0, scale=1):
    """scipy.stats.expon.pdf, exp(logpdf).

        >>> fg.scipy.stats.expon.pdf(np.array([0.5, 2.0]), scale=2.0)
    """
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """scipy.stats.expon.cdf, 1 - exp(-y) (as -expm1(-y): accurate near 0).

        >>> fg.scipy.stats.expon.cdf(1e-10)
    """
    y = _y(x, loc, scale)
    return fnp.where(y >= 0, -fnp.expm1(-fnp.maximum(y, 0.0)), 0.0)


def sf(x, loc=0, scale=1):
    """scipy.stats.expon.sf, exp(-y).

        >>> fg.scipy.stats.expon.sf(50.0)
    """
    return fnp.exp(logsf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """scipy.stats.expon.logsf, -y (0 below the support).

        >>> fg.scipy.stats.expon.logsf(3.0)
    """
    return -fnp.maximum(_y(x, loc, scale), 0.0)


def ppf(q, loc=0, scale=1):
    """scipy.stats.expon.ppf, loc - scale log(1 - q).

        >>> fg.scipy.stats.expon.ppf(0.5)          # log 2
    """
    return loc - scale * fnp.log1p(-fnp.asarray(q))
