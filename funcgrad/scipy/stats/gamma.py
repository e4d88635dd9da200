"""fg.scipy.stats.gamma: the gamma distribution with shape a, as scipy.stats.gamma (density
x^(a-1) e^-x / Gamma(a) for x >= 0, shifted by loc and stretched by scale).

    >>> fg.scipy.stats.gamma.pdf(np.array([-1.0, 1.0]), a=2.0)     # 0 below the support
    array([0.        , 0.36787944])
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from ..special import gammainc, gammaincc, gammaln, xlogy

__all__ = ["logpdf", "pdf", "cdf", "sf"]


def logpdf(x, a, loc=0, scale=1):
    """scipy.stats.gamma.logpdf: (a-1) log y - y - log Gamma(a) - log(scale) for
    y = (x - loc) / scale >= 0, -inf below; differentiable in x, a, loc and scale.

        >>> fg.grad(lambda a: fg.scipy.stats.gamma.logpdf(2.0, a))(3.0)     # log 2 - digamma(3)
    """
    y = (fnp.asarray(x) - loc) / scale
    inside = y >= 0
    y = fnp.where(inside, y, 1.0)             # (no NaN from the branch not taken)
    return fnp.where(inside, xlogy(a - 1.0, y) - y - gammaln(a), -np.inf) - fnp.log(scale)


def pdf(x, a, loc=0, scale=1):
    """scipy.stats.gamma.pdf, exp(logpdf).

        >>> fg.scipy.stats.gamma.pdf(1.0, a=1.0, scale=2.0)       # exp(-1/2) / 2
    """
    return fnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    """scipy.stats.gamma.cdf, the regularized incomplete gamma function P(a, y),
    y = max((x - loc) / scale, 0). Differentiable in x, loc and scale; the derivative with
    respect to a is not implemented (fg.scipy.special.gammainc): it raises where a is
    differentiated.

        >>> fg.grad(lambda x: fg.scipy.stats.gamma.cdf(x, a=2.0))(1.0)   # the pdf, 1/e
    """
    return gammainc(a, fnp.maximum((fnp.asarray(x) - loc) / scale, 0.0))


def sf(x, a, loc=0, scale=1):
    """scipy.stats.gamma.sf, 1 - cdf without cancellation (gammaincc); differentiable as cdf.

        >>> fg.scipy.stats.gamma.sf(np.array([0.0, 2.0]), a=1.0)       # 1, e^-2
        array([1.        , 0.13533528])
    """
    return gammaincc(a, fnp.maximum((fnp.asarray(x) - loc) / scale, 0.0))
