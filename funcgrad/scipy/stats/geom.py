"""fg.scipy.stats.geom: the geometric distribution (the trial of the first success, k = 1, 2,
...), as scipy.stats.geom; differentiable in p.

    >>> fg.scipy.stats.geom.pmf(np.array([1, 2, 3]), 0.5)
    array([0.5  , 0.25 , 0.125])
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from .. import special

__all__ = ["logpmf", "pmf", "cdf", "sf"]


def logpmf(k, p, loc=0):
    """scipy.stats.geom.logpmf: (k - 1) log(1 - p) + log p for integer k >= 1, -inf elsewhere.

        >>> fg.grad(fg.scipy.stats.geom.logpmf, argnums=1)(3, 0.5)
    """
    k = fnp.asarray(k) - loc
    inside = (k >= 1) & (k == fnp.floor(k))
    return fnp.where(inside, special.xlog1py(k - 1.0, -fnp.asarray(p)) + fnp.log(p), -np.inf)


def pmf(k, p, loc=0):
    """scipy.stats.geom.pmf, exp(logpmf).

        >>> fg.scipy.stats.geom.pmf(2, 0.3)
    """
    return fnp.exp(logpmf(k, p, loc))


def cdf(k, p, loc=0):
    """scipy.stats.geom.cdf, 1 - (1 - p)^floor(k) for k >= 1 (as -expm1: accurate for small
    p), 0 below.

        >>> fg.scipy.stats.geom.cdf(2.5, 0.3)
    """
    k = fnp.floor(fnp.asarray(k) - loc)
    return fnp.where(k >= 1, -fnp.expm1(fnp.maximum(k, 0.0) * fnp.log1p(-fnp.asarray(p))), 0.0)


def sf(k, p, loc=0):
    """scipy.stats.geom.sf, (1 - p)^floor(k) for k >= 1, 1 below.

        >>> fg.scipy.stats.geom.sf(10, 0.3)
    """
    k = fnp.floor(fnp.asarray(k) - loc)
    return fnp.where(k >= 1, fnp.exp(fnp.maximum(k, 0.0) * fnp.log1p(-fnp.asarray(p))), 1.0)
