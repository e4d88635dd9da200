"""fg.scipy.stats.cauchy: the Cauchy distribution, density 1 / (pi (1 + y^2)) for
y = (x - loc) / scale, as scipy.stats.cauchy.

    >>> fg.scipy.stats.cauchy.cdf(np.array([-1.0, 0.0, 1.0]))
    array([0.25, 0.5 , 0.75])
"""
from __future__ import annotations

import math

from ... import numpy as fnp
from .norm import _standard as _y

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """scipy.stats.cauchy.logpdf: -log(pi scale (1 + y^2)).

        >>> fg.scipy.stats.cauchy.logpdf(np.array([0.0, 1.0]))
    """
    y = _y(x, loc, scale)
    return -fnp.log1p(y * y) - math.log(math.pi) - fnp.log(scale)


def pdf(x, loc=0, scale=1):
    """scipy.stats.cauchy.pdf, exp(logpdf).

        >>> fg.scipy.stats.cauchy.pdf(0.0)         # 1 / pi
    """
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """scipy.stats.cauchy.cdf, 1/2 + arctan(y) / pi.

        >>> fg.scipy.stats.cauchy.cdf(1.0)
    """
    return 0.5 + fnp.arctan(_y(x, loc, scale)) / math.pi


def sf(x, loc=0, scale=1):
    """scipy.stats.cauchy.sf, 1/2 - arctan(y) / pi.

        >>> fg.scipy.stats.cauchy.sf(1.0)
    """
    return 0.5 - fnp.arctan(_y(x, loc, scale)) / math.pi


def ppf(q, loc=0, scale=1):
    """scipy.stats.cauchy.ppf, loc + scale tan(pi (q - 1/2)).

        >>> fg.scipy.stats.cauchy.ppf(0.75)        # 1
    """
    return loc + scale * fnp.tan(math.pi * (fnp.asarray(q) - 0.5))
