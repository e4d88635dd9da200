"""fg.scipy: SciPy's functions with funcgrad's derivatives. Mirrors SciPy's module names
(`fg.scipy.optimize.minimize`, `fg.scipy.special.gammaln`, `fg.scipy.linalg.expm`,
`fg.scipy.stats.norm.logpdf`); the optimizers are also here at the top (`fg.scipy.minimize`,
`fg.scipy.least_squares`). A SciPy function called on a traced value is reported with the
user's line and its fg.scipy equivalent (_foreign.py).
"""
from . import _foreign, linalg, optimize, special, stats  # noqa: F401  (_foreign: the hook)
from .optimize import least_squares, minimize

__all__ = ["linalg", "optimize", "special", "stats", "minimize", "least_squares"]
