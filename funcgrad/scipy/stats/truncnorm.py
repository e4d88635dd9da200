"""fg.scipy.stats.truncnorm: the standard normal restricted to [a, b] (in standard
units), shifted by loc and stretched by scale, as scipy.stats.truncnorm.

    >>> fg.scipy.stats.truncnorm.cdf(np.array([-1.0, 0.0, 1.0]), -1.0, 1.0)
    array([0. , 0.5, 1. ])
"""
from __future__ import annotations

import math

import numpy as np

from ... import numpy as fnp
from .. import special
from .norm import _standard as _y

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf"]


def _mass(a, b):
    return special.ndtr(b) - special.ndtr(a)


def logpdf(x, a, b, loc=0, scale=1):
    """scipy.stats.truncnorm.logpdf: the normal log density minus log(Phi(b) - Phi(a)) -
    log(scale) on [a, b], -inf outside; differentiable in x, a, b, loc and scale.

        >>> fg.scipy.stats.truncnorm.logpdf(np.array([0.0, 0.5]), -1.0, 2.0)
    """
    y = _y(x, loc, scale)
    inside = (y >= a) & (y <= b)
    return fnp.where(inside, -0.5 * y * y - 0.5 * math.log(2 * math.pi)
                     - fnp.log(_mass(a, b)), -np.inf) - fnp.log(scale)


def pdf(x, a, b, loc=0, scale=1):
    """scipy.stats.truncnorm.pdf, exp(logpdf).

        >>> fg.scipy.stats.truncnorm.pdf(0.0, -1.0, 1.0)
    """
    return fnp.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
    """scipy.stats.truncnorm.cdf, (Phi(y) - Phi(a)) / (Phi(b) - Phi(a)) clipped to [0, 1].

        >>> fg.scipy.stats.truncnorm.cdf(0.5, -1.0, 2.0)
    """
    y = fnp.clip(_y(x, loc, scale), a, b)
    return (special.ndtr(y) - special.ndtr(a)) / _mass(a, b)


def sf(x, a, b, loc=0, scale=1):
    """scipy.stats.truncnorm.sf, (Phi(b) - Phi(y)) / (Phi(b) - Phi(a)).

        >>> fg.scipy.stats.truncnorm.sf(0.5, -1.0, 2.0)
    """
    y = fnp.clip(_y(x, loc, scale), a, b)
    return (special.ndtr(b) - special.ndtr(y)) / _mass(a, b)


def ppf(q, a, b, loc=0, scale=1):
    """scipy.stats.truncnorm.ppf, loc + scale ndtri(Phi(a) + q (Phi(b) - Phi(a))).

        >>> fg.scipy.stats.truncnorm.ppf(0.5, -1.0, 1.0)    # 0
    """
    return loc + scale * special.ndtri(special.ndtr(a) + fnp.asarray(q) * _mass(a, b))
