"""fg.scipy.stats.bernoulli: the Bernoulli distribution (1 with probability p, else 0), as
scipy.stats.bernoulli; differentiable in p.

    >>> fg.scipy.stats.bernoulli.pmf(np.array([0, 1, 2]), 0.3)
    array([0.7, 0.3, 0. ])
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp

__all__ = ["logpmf", "pmf", "cdf", "sf"]


def logpmf(k, p, loc=0):
    """scipy.stats.bernoulli.logpmf: log p at 1, log(1 - p) at 0, -inf elsewhere.

        >>> fg.grad(fg.scipy.stats.bernoulli.logpmf, argnums=1)(1, 0.25)    # 1 / p
    """
    k = fnp.asarray(k) - loc
    return fnp.where(k == 1, fnp.log(p), fnp.where(k == 0, fnp.log1p(-fnp.asarray(p)), -np.inf))


def pmf(k, p, loc=0):
    """scipy.stats.bernoulli.pmf, exp(logpmf).

        >>> fg.scipy.stats.bernoulli.pmf(1, 0.25)
    """
    return fnp.exp(logpmf(k, p, loc))


def cdf(k, p, loc=0):
    """scipy.stats.bernoulli.cdf: 0 below 0, 1 - p on [0, 1), 1 from 1 on.

        >>> fg.scipy.stats.bernoulli.cdf(0.5, 0.25)
    """
    k = fnp.asarray(k) - loc
    return fnp.where(k < 0, 0.0, fnp.where(k < 1, 1.0 - fnp.asarray(p), 1.0))


def sf(k, p, loc=0):
    """scipy.stats.bernoulli.sf, 1 - cdf.

        >>> fg.scipy.stats.bernoulli.sf(0.5, 0.25)
    """
    k = fnp.asarray(k) - loc
    return fnp.where(k < 0, 1.0, fnp.where(k < 1, fnp.asarray(p) + 0.0, 0.0))
