"""fg.scipy.linalg.logm (re-exported by funcgrad/scipy/linalg.py; built on _linalg_more's
sqrtm iteration and expm_frechet, and importing nothing from linalg.py).

The value is inverse scaling and squaring (Kenney and Laub 1989; Higham 2008, Functions of
Matrices, 11.5): square roots (sqrtm's Denman-Beavers iteration and Newton step) until
||X - I||_1 <= 1/4, after k of them, then log(I + Y) = integral over t in [0, 1] of
Y (I + t Y)^-1, by the 8-point Gauss-Legendre rule (which is the [8/8] Pade approximant,
accurate to double precision for ||Y|| <= 0.34: Higham's table 11.1), times 2^k. The
derivative is implicit: X = logm(A) has expm(X) = A, so L(X, dX) = dA with L the Frechet
derivative of expm; reverse mode solves L(X^T, Z) = ct for A's cotangent Z, with L's n^2 x n^2
matrix from expm_frechet in the n^2 unit directions (O(n^5): small matrices).
"""
from __future__ import annotations

import numpy as np

from .. import numpy as fnp
from ..higher_order import custom_vjp, while_loop
from ._linalg_more import _TURN, _mT, _norm1, _sqrtm_value, _square, expm, expm_frechet

__all__ = ["logm"]

_X, _W = np.polynomial.legendre.leggauss(8)
_NODES, _WEIGHTS = (_X + 1.0) / 2.0, _W / 2.0    # the rule moved from [-1, 1] to [0, 1]
_ROOTS = 40                                      # at most this many square roots


def _logm_value(a):
    """Inverse scaling and squaring; NaN where a root has none (a real matrix with a negative
    eigenvalue) or more than _ROOTS are needed."""
    eye = np.eye(a.shape[-1])

    def far(x):
        return (_norm1(x - eye) > 0.25)[..., None, None]

    def more(carry):
        k, x, _ = carry
        return (k < _ROOTS) & fnp.any(far(x))

    def root(carry):                  # the matrices of a stack each take the roots they need
        k, x, roots = carry
        go = far(x)
        return k + 1, fnp.where(go, _sqrtm_value(fnp.where(go, x, eye)), x), roots + go
    _, x, roots = while_loop(more, root, (0, a, fnp.zeros(a.shape[:-2] + (1, 1))))
    y = x - eye
    log = sum(w * fnp.linalg.solve(eye + t * y, y) for t, w in zip(_NODES, _WEIGHTS))
    return fnp.where(far(x), np.nan, log * 2.0 ** roots)


def _logm_fwd(a):
    return _logm(a), a


def _logm_bwd(a, ct):
    # L(X, dX) = dA: A's cotangent Z solves L(X^T, Z) = ct (L(X, .)^T = L(X^T, .))
    x = _logm(a)                                 # (recomputed: see _linalg_more's docstring)
    n = x.shape[-1]
    units = np.eye(n * n).reshape(n * n, n, n)
    columns = expm_frechet(_mT(x)[..., None, :, :], units, compute_expm=False)
    matrix = _mT(fnp.reshape(columns, columns.shape[:-3] + (n * n, n * n)))
    z = fnp.linalg.solve(matrix, fnp.reshape(ct, ct.shape[:-2] + (n * n, 1)))
    return (fnp.reshape(z, ct.shape),)


_logm = custom_vjp(_logm_value).defvjp(_logm_fwd, _logm_bwd)


def logm(A, disp=True):
    """scipy.linalg.logm, the principal logarithm X (expm(X) = A, eigenvalues with imaginary
    parts in (-pi, pi]) by inverse scaling and squaring: square roots until A^(1/2^k) is
    within 1/4 of I, then the [8/8] Pade approximant of its logarithm, times 2^k. A real A
    gives the real logarithm (NaN where none exists: a negative eigenvalue; pass a complex A
    for the complex one, i pi + log(-w) for a negative w, as SciPy's); a singular A is
    refused (LinAlgError). disp=False -> (X, ||expm(X) - A||_1 / ||A||_1). The derivative is
    implicit, through the Frechet derivative of expm (an n^2 x n^2 solve: small matrices).

        >>> fg.scipy.linalg.logm(np.array([[1.0, 1.0], [0.0, 1.0]]))
        array([[0., 1.],
               [0., 0.]])
    """
    a = _square(A, "logm")
    if fnp.iscomplexobj(a):          # negative eigenvalues: turned off the branch cut
        x = _logm(a * np.exp(-1j * _TURN)) + 1j * _TURN * np.eye(a.shape[-1])
    else:
        x = _logm(a)
    if disp:
        return x
    return x, _norm1(expm(x) - a) / _norm1(a)
