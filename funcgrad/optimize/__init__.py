"""fg.optimize: minimizers compiled as one native loop each (SciPy's names and result fields).

    >>> loss = lambda w, X, y: fnp.sum((X @ w - y) ** 2)
    >>> X, y = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]), np.array([1.0, 3.0, 5.0])
    >>> res = fg.optimize.minimize(loss, np.zeros(2), args=(X, y), method="lbfgs")
    >>> res.success, np.round(res.x, 6)
    (True, array([1., 2.]))

See quasi_newton.py (L-BFGS, BFGS, gradient descent, bounds by projection) and
line_search.py (strong Wolfe), nonlinear.py (root: Newton, Broyden; least_squares:
Levenberg-Marquardt, Gauss-Newton). For SciPy's own algorithms with compiled derivatives use
fg.scipy.minimize.

x0 may be a pytree. Integer and bool leaves are made float64 (as SciPy does); float32
leaves stay float32: the function sees them in float32, the iteration itself runs in float64
and `res.x` comes back float32.
"""
from .line_search import strong_wolfe
from .nonlinear import least_squares, root
from .quasi_newton import minimize

__all__ = ["minimize", "root", "least_squares", "strong_wolfe"]
