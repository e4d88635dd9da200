"""fg.scipy.stats.multivariate_normal: the multivariate normal distribution N(mean, cov), as
scipy.stats.multivariate_normal.

    >>> fg.scipy.stats.multivariate_normal.logpdf(np.zeros(2), np.zeros(2), np.eye(2))  # -log 2 pi
"""
from __future__ import annotations

import math

from ... import numpy as fnp
from ..linalg import solve_triangular

__all__ = ["logpdf", "pdf"]


def logpdf(x, mean=None, cov=1, allow_singular=False):
    """scipy.stats.multivariate_normal.logpdf: -(d log 2 pi + log det cov + r^T cov^-1 r) / 2,
    r = x - mean, with the Cholesky factor of cov. x has the dimension d on its last axis (for
    d = 1, a 1-D x holds points); the result has x's other axes (SciPy also drops axes of
    length 1). cov is a matrix (its lower triangle is read, as SciPy does), a vector (the
    diagonal) or a number (times the identity); mean defaults to 0. Differentiable in x, mean
    and cov; allow_singular=True is not supported.

        >>> fg.grad(lambda m: fg.scipy.stats.multivariate_normal.logpdf(
        ...     np.ones(2), m, np.eye(2)))(np.zeros(2))      # x - mean
        array([1., 1.])
    """
    if allow_singular:
        raise NotImplementedError("multivariate_normal: allow_singular=True is not supported")
    x, cov = fnp.asarray(x) * 1.0, fnp.asarray(cov) * 1.0
    mean = 0.0 if mean is None else fnp.asarray(mean) * 1.0
    dim = (fnp.shape(mean)[-1] if fnp.ndim(mean) else fnp.shape(cov)[-1] if fnp.ndim(cov)
           else 1)
    points = None
    if dim == 1 and fnp.ndim(x) <= 1:         # (n,) or (): n points (one) in one dimension
        points, x = fnp.shape(x), fnp.reshape(x, (-1, 1))
    r = x - mean
    points = fnp.shape(r)[:-1] if points is None else points
    if fnp.ndim(cov) < 2:                     # diagonal: cov is the variances
        var = cov * fnp.ones(dim)
        maha = fnp.sum(r * r / var, axis=-1)
        logdet = fnp.sum(fnp.log(var))
    else:
        low = fnp.linalg.cholesky(cov)
        z = solve_triangular(low, fnp.reshape(r, (-1, dim)).T, lower=True)
        maha = fnp.sum(z * z, axis=0)
        logdet = 2.0 * fnp.sum(fnp.log(fnp.diagonal(low)))
    out = -0.5 * (dim * math.log(2 * math.pi) + logdet + maha)
    return fnp.reshape(out, points)


def pdf(x, mean=None, cov=1, allow_singular=False):
    """scipy.stats.multivariate_normal.pdf, exp(logpdf).

        >>> fg.scipy.stats.multivariate_normal.pdf(np.zeros(2), cov=np.array([1.0, 4.0]))
    """
    return fnp.exp(logpdf(x, mean, cov, allow_singular))
