"""fg.scipy.stats.pareto: the Pareto distribution with shape b, density b / y^(b + 1) for
y = (x - loc) / scale >= 1, as scipy.stats.pareto.

    >>> fg.scipy.stats.pareto.cdf(np.array([0.5, 1.0, 2.0]), b=2.0)
    array([0.  , 0.  , 0.75])
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from .norm import _standard as _y

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf"]


def logpdf(x, b, loc=0, scale=1):
    """scipy.stats.pareto.logpdf: log b - (b + 1) log y - log(scale) for y >= 1, -inf below.

        >>> fg.scipy.stats.pareto.logpdf(np.array([1.5, 3.0]), 2.5)
    """
    y = _y(x, loc, scale)
    inside = y >= 1
    return fnp.where(inside, fnp.log(b) - (b + 1.0) * fnp.log(fnp.where(inside, y, 1.0)),
                     -np.inf) - fnp.log(scale)


def pdf(x, b, loc=0, scale=1):
    """scipy.stats.pareto.pdf, exp(logpdf).

        >>> fg.scipy.stats.pareto.pdf(2.0, 1.0)
    """
    return fnp.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    """scipy.stats.pareto.cdf, 1 - y^-b for y >= 1.

        >>> fg.scipy.stats.pareto.cdf(2.0, 3.0)
    """
    return 1.0 - sf(x, b, loc, scale)


def sf(x, b, loc=0, scale=1):
    """scipy.stats.pareto.sf, y^-b for y >= 1, 1 below.

        >>> fg.scipy.stats.pareto.sf(10.0, 2.0)
    """
    y = _y(x, loc, scale)
    inside = y >= 1
    return fnp.where(inside, fnp.exp(-b * fnp.log(fnp.where(inside, y, 1.0))), 1.0)


def ppf(q, b, loc=0, scale=1):
    """scipy.stats.pareto.ppf, loc + scale (1 - q)^(-1/b).

        >>> fg.scipy.stats.pareto.ppf(0.75, 2.0)   # 2
    """
    return loc + scale * fnp.exp(-fnp.log1p(-fnp.asarray(q)) / b)
