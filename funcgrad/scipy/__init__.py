"""fg.scipy: SciPy's functions with funcgrad's derivatives. Mirrors SciPy's module names
(`fg.scipy.optimize.minimize`, `fg.scipy.special.gammaln`); the optimizers are also here at
the top (`fg.scipy.minimize`, `fg.scipy.least_squares`).
"""
from . import optimize, special
from .optimize import least_squares, minimize

__all__ = ["optimize", "special", "minimize", "least_squares"]
