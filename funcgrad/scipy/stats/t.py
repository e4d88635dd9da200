"""fg.scipy.stats.t: Student's t distribution with df degrees of freedom, as scipy.stats.t.

    >>> fg.scipy.stats.t.logpdf(0.0, df=1.0)     # Cauchy: -log(pi)
"""
from __future__ import annotations

import math

from ... import numpy as fnp
from ..special import gammaln

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
    """scipy.stats.t.logpdf: log Gamma((df+1)/2) - log Gamma(df/2) - log(sqrt(df pi) scale)
    - (df+1)/2 log(1 + y^2/df), y = (x - loc) / scale; differentiable in x, df, loc, scale.

        >>> fg.scipy.stats.t.logpdf(np.array([0.0, 1.0]), df=3.0)
        array([-1.00088885, -1.57625299])
    """
    y = (fnp.asarray(x) - loc) / scale
    half = 0.5 * (fnp.asarray(df) + 1.0)
    return (gammaln(half) - gammaln(0.5 * fnp.asarray(df)) - 0.5 * fnp.log(df * math.pi)
            - half * fnp.log1p(y * y / df) - fnp.log(scale))


def pdf(x, df, loc=0, scale=1):
    """scipy.stats.t.pdf, exp(logpdf).

        >>> fg.grad(lambda df: fg.scipy.stats.t.pdf(1.0, df))(4.0)
    """
    return fnp.exp(logpdf(x, df, loc, scale))
