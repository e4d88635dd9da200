"""fg.scipy.stats.uniform: the uniform distribution on [loc, loc + scale], as
scipy.stats.uniform.

    >>> fg.scipy.stats.uniform.cdf(np.array([-1.0, 0.25, 2.0]))
    array([0.  , 0.25, 1.  ])
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from .norm import _standard as _y

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """scipy.stats.uniform.logpdf: -log(scale) on the support, -inf outside.

        >>> fg.scipy.stats.uniform.logpdf(np.array([0.5, 3.0]), scale=2.0)
    """
    y = _y(x, loc, scale)
    return fnp.where((y >= 0) & (y <= 1), 0.0, -np.inf) - fnp.log(scale)


def pdf(x, loc=0, scale=1):
    """scipy.stats.uniform.pdf, 1 / scale on the support.

        >>> fg.scipy.stats.uniform.pdf(0.5)
    """
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """scipy.stats.uniform.cdf, y clipped to [0, 1]; differentiable in x, loc and scale.

        >>> fg.grad(fg.scipy.stats.uniform.cdf, argnums=2)(0.5, 0.0, 2.0)   # -x / scale^2
    """
    return fnp.clip(_y(x, loc, scale), 0.0, 1.0)


def sf(x, loc=0, scale=1):
    """scipy.stats.uniform.sf, 1 - cdf.

        >>> fg.scipy.stats.uniform.sf(0.25)
    """
    return 1.0 - cdf(x, loc, scale)


def ppf(q, loc=0, scale=1):
    """scipy.stats.uniform.ppf, loc + scale q.

        >>> fg.scipy.stats.uniform.ppf(0.3, loc=1.0, scale=2.0)
    """
    return loc + scale * fnp.asarray(q)
