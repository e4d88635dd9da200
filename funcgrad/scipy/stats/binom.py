"""fg.scipy.stats.binom: the binomial distribution (successes in n trials of probability p),
as scipy.stats.binom; differentiable in p (and n, through log Gamma).

    >>> fg.scipy.stats.binom.pmf(np.array([0, 1, 2]), 2, 0.5)
    array([0.25, 0.5 , 0.25])
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from .. import special

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """scipy.stats.binom.logpmf: log C(n, k) + k log p + (n - k) log(1 - p) for integer
    0 <= k <= n, -inf elsewhere.

        >>> fg.grad(fg.scipy.stats.binom.logpmf, argnums=2)(3, 10, 0.4)   # k/p - (n-k)/(1-p)
    """
    k = fnp.asarray(k) - loc
    inside = (k >= 0) & (k <= n) & (k == fnp.floor(k))
    kk = fnp.where(inside, k, 0.0)
    log_choose = special.gammaln(n + 1.0) - special.gammaln(kk + 1.0) - special.gammaln(n - kk + 1.0)
    return fnp.where(inside, log_choose + special.xlogy(kk, p)
                     + special.xlog1py(n - kk, -fnp.asarray(p)), -np.inf)


def pmf(k, n, p, loc=0):
    """scipy.stats.binom.pmf, exp(logpmf).

        >>> fg.scipy.stats.binom.pmf(5, 10, 0.5)
    """
    return fnp.exp(logpmf(k, n, p, loc))
