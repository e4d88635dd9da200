"""fg.scipy.stats.lognorm: the log-normal distribution with shape s (log y ~ N(0, s^2) for
y = (x - loc) / scale), as scipy.stats.lognorm.

    >>> fg.scipy.stats.lognorm.cdf(np.array([0.5, 1.0, 2.0]), s=0.5)
    array([0.08292677, 0.5       , 0.91707323])
"""
from __future__ import annotations

import math

import numpy as np

from ... import numpy as fnp
from .. import special
from .norm import _standard as _y

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf"]


def logpdf(x, s, loc=0, scale=1):
    """scipy.stats.lognorm.logpdf: -log(s y sqrt(2 pi)) - log(y)^2 / (2 s^2) - log(scale) for
    y > 0, -inf elsewhere.

        >>> fg.scipy.stats.lognorm.logpdf(np.array([0.5, 2.0]), 0.7)
    """
    y = _y(x, loc, scale)
    inside = y > 0
    ly = fnp.log(fnp.where(inside, y, 1.0))
    return fnp.where(inside, -ly - fnp.log(s) - 0.5 * math.log(2 * math.pi)
                     - 0.5 * (ly / s) ** 2, -np.inf) - fnp.log(scale)


def pdf(x, s, loc=0, scale=1):
    """scipy.stats.lognorm.pdf, exp(logpdf).

        >>> fg.scipy.stats.lognorm.pdf(1.0, 1.0)
    """
    return fnp.exp(logpdf(x, s, loc, scale))


def cdf(x, s, loc=0, scale=1):
    """scipy.stats.lognorm.cdf, ndtr(log(y) / s) (0 for y <= 0).

        >>> fg.scipy.stats.lognorm.cdf(2.0, 0.5)
    """
    y = _y(x, loc, scale)
    inside = y > 0
    return fnp.where(inside, special.ndtr(fnp.log(fnp.where(inside, y, 1.0)) / s), 0.0)


def sf(x, s, loc=0, scale=1):
    """scipy.stats.lognorm.sf, ndtr(-log(y) / s) (1 for y <= 0).

        >>> fg.scipy.stats.lognorm.sf(2.0, 0.5)
    """
    y = _y(x, loc, scale)
    inside = y > 0
    return fnp.where(inside, special.ndtr(-fnp.log(fnp.where(inside, y, 1.0)) / s), 1.0)


def ppf(q, s, loc=0, scale=1):
    """scipy.stats.lognorm.ppf, loc + scale exp(s ndtri(q)).

        >>> fg.scipy.stats.lognorm.ppf(0.5, 0.5)   # 1
    """
    return loc + scale * fnp.exp(s * special.ndtri(q))
