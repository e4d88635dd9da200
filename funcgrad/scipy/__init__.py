"""fg.scipy: SciPy's functions with funcgrad's derivatives. Mirrors SciPy's module names
(`fg.scipy.optimize.minimize`); the optimizers are also here at the top
(`fg.scipy.minimize`, `fg.scipy.least_squares`).
"""
from . import optimize
from .optimize import least_squares, minimize

__all__ = ["optimize", "minimize", "least_squares"]
