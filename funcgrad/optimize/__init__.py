"""fg.optimize: minimizers compiled as one native loop each (SciPy's names and result fields).

    >>> res = fg.optimize.minimize(loss, x0, args=(X, y), method="lbfgs")

See quasi_newton.py (L-BFGS, BFGS, gradient descent, bounds by projection) and
line_search.py (strong Wolfe), nonlinear.py (root: Newton, Broyden; least_squares:
Levenberg-Marquardt, Gauss-Newton). For SciPy's own algorithms with compiled derivatives use
fg.scipy.minimize.
"""
from .line_search import strong_wolfe
from .nonlinear import least_squares, root
from .quasi_newton import minimize

__all__ = ["minimize", "root", "least_squares", "strong_wolfe"]
