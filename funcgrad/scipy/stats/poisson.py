"""fg.scipy.stats.poisson: the Poisson distribution with mean mu, as scipy.stats.poisson
(probability mu^k e^-mu / k! at the integers k >= loc).

    >>> fg.scipy.stats.poisson.pmf(np.array([0, 1, 2]), 2.0)
    array([0.13533528, 0.27067057, 0.27067057])
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from ...higher_order import stop_gradient
from ..special import gammaincc, gammaln, xlogy

__all__ = ["logpmf", "pmf", "cdf"]


def logpmf(k, mu, loc=0):
    """scipy.stats.poisson.logpmf: k log mu - log k! - mu at the integers k - loc >= 0, -inf
    elsewhere; differentiable in mu (in k: the derivative of the continuous extension, as
    in JAX).

        >>> fg.grad(lambda mu: fg.scipy.stats.poisson.logpmf(3, mu))(2.0)    # k / mu - 1 = 0.5
    """
    k = fnp.asarray(k) - loc
    ok = fnp.logical_and(k >= 0, k == fnp.floor(k))
    k = fnp.where(ok, k, 0.0)
    return fnp.where(ok, xlogy(k, mu) - gammaln(k + 1.0) - mu, -np.inf)


def pmf(k, mu, loc=0):
    """scipy.stats.poisson.pmf, exp(logpmf).

        >>> fg.scipy.stats.poisson.pmf(0, 1.0)        # e^-1
    """
    return fnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """scipy.stats.poisson.cdf, P(K <= k) = gammaincc(floor(k - loc) + 1, mu) (0 below loc);
    differentiable in mu (-pmf(floor(k - loc), mu)), piecewise constant in k.

        >>> fg.grad(lambda mu: fg.scipy.stats.poisson.cdf(0, mu))(1.0)     # -e^-1
    """
    k = fnp.floor(fnp.asarray(k) - loc)
    ok = k >= 0
    return fnp.where(ok, gammaincc(stop_gradient(fnp.where(ok, k, 0.0) + 1.0), mu), 0.0)
