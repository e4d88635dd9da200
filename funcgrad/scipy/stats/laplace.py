"""fg.scipy.stats.laplace: the Laplace (double exponential) distribution, density
exp(-|y|) / 2 for y = (x - loc) / scale, as scipy.stats.laplace.

    >>> fg.scipy.stats.laplace.cdf(np.array([-1.0, 0.0, 1.0]))
    array([0.18393972, 0.5       , 0.81606028])
"""
from __future__ import annotations

from ... import numpy as fnp
from .norm import _standard as _y

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """scipy.stats.laplace.logpdf: -|y| - log(2 scale).

        >>> fg.scipy.stats.laplace.logpdf(np.array([0.0, 2.0]))
    """
    return -fnp.abs(_y(x, loc, scale)) - fnp.log(2.0 * scale)


def pdf(x, loc=0, scale=1):
    """scipy.stats.laplace.pdf, exp(logpdf).

        >>> fg.scipy.stats.laplace.pdf(0.0)
    """
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """scipy.stats.laplace.cdf: exp(y) / 2 below loc, 1 - exp(-y) / 2 above.

        >>> fg.scipy.stats.laplace.cdf(1.0)
    """
    y = _y(x, loc, scale)
    return fnp.where(y < 0, 0.5 * fnp.exp(fnp.minimum(y, 0.0)), 1.0 - 0.5 * fnp.exp(-fnp.maximum(y, 0.0)))


def sf(x, loc=0, scale=1):
    """scipy.stats.laplace.sf, cdf of the mirrored point (no cancellation).

        >>> fg.scipy.stats.laplace.sf(30.0)
    """
    return cdf(-_y(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """scipy.stats.laplace.ppf: loc - scale sign(q - 1/2) log(1 - 2 |q - 1/2|).

        >>> fg.scipy.stats.laplace.ppf(np.array([0.25, 0.75]))
    """
    d = fnp.asarray(q) - 0.5
    return loc - scale * fnp.sign(d) * fnp.log1p(-2.0 * fnp.abs(d))
