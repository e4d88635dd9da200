"""fg.scipy.stats.beta: the beta distribution with shapes a and b, as scipy.stats.beta
(density y^(a-1) (1-y)^(b-1) / B(a, b) on 0 <= y <= 1, y = (x - loc) / scale).

    >>> fg.scipy.stats.beta.pdf(np.array([0.25, 0.5]), 2.0, 2.0)     # 6 y (1 - y)
    array([1.125, 1.5  ])
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from ..special import betaln, xlog1py, xlogy

__all__ = ["logpdf", "pdf"]


def logpdf(x, a, b, loc=0, scale=1):
    """scipy.stats.beta.logpdf: (a-1) log y + (b-1) log(1-y) - log B(a, b) - log(scale) on
    0 <= y <= 1, -inf outside; differentiable in x, a, b, loc and scale.

        >>> fg.grad(lambda a: fg.scipy.stats.beta.logpdf(0.5, a, 2.0))(2.0)
    """
    y = (fnp.asarray(x) - loc) / scale
    inside = fnp.logical_and(y >= 0, y <= 1)
    y = fnp.where(inside, y, 0.5)             # (no NaN from the branch not taken)
    value = xlogy(a - 1.0, y) + xlog1py(b - 1.0, -y) - betaln(a, b)
    return fnp.where(inside, value, -np.inf) - fnp.log(scale)


def pdf(x, a, b, loc=0, scale=1):
    """scipy.stats.beta.pdf, exp(logpdf).

        >>> fg.scipy.stats.beta.pdf(0.5, 1.0, 1.0)          # uniform: 1
    """
    return fnp.exp(logpdf(x, a, b, loc, scale))
