"""fg.scipy.stats: scipy.stats distributions' densities, log densities and distribution
functions on traced values, one module per distribution as in jax.scipy.stats
(`fg.scipy.stats.norm.logpdf(x, loc, scale)`), with SciPy's argument names and defaults.
Each is a composition of funcgrad operations and fg.scipy.special functions: differentiable
with respect to x and the distribution's parameters (except where a docstring says otherwise),
compiled by fg.jit and batched by fg.vmap. Parameters are assumed valid (scale > 0, ...):
where SciPy returns NaN for invalid parameters the result here is unspecified.

    >>> fg.grad(fg.scipy.stats.norm.logpdf)(1.0)        # -x
"""
from . import (bernoulli, beta, binom, cauchy, chi2, expon, gamma, geom, laplace,  # noqa: F401
               logistic, lognorm, multivariate_normal, norm, pareto, poisson, t, truncnorm,
               uniform)

__all__ = ["norm", "multivariate_normal", "t", "gamma", "beta", "poisson", "expon", "laplace",
           "logistic", "cauchy", "uniform", "chi2", "lognorm", "pareto", "truncnorm",
           "bernoulli", "geom", "binom"]
