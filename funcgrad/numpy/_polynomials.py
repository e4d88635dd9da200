"""NumPy's polynomial functions on coefficient arrays (highest power first, as np.polyval):
polyfit (least squares on the Vandermonde matrix, differentiable in x and y), polyder,
polyint, polyadd, polysub, polymul, polydiv, poly (from roots), roots (companion matrix
eigenvalues). (polyval and vander: _misc.py, _arrange.py.)
"""
from __future__ import annotations

import numpy as np

from ..ir import aval_of
from ..primitives.base import export
from ..primitives.elementwise import sqrt
from ..primitives.reductions import sum as fsum
from ..primitives.linalg import eigvals
from ..primitives.shape import _asarray, concatenate, stack
from ._linalg_compositions import lstsq
from ._complex import real
from ._misc import convolve


def _coefficients(p):
    p = _asarray(p)
    if aval_of(p).ndim != 1:
        raise ValueError("a polynomial is a 1-D array of coefficients, highest power first")
    return p


@export(numpy=np.polyder, traced=("p",))
def polyder(p, m=1):
    """np.polyder: the coefficients of the m-th derivative.

        >>> fnp.polyder(np.array([1.0, 2.0, 3.0]))      # 2x + 2
    """
    p = _coefficients(p)
    for _ in range(int(m)):
        n = aval_of(p).shape[0] - 1
        if n <= 0:
            return p[:0] + np.zeros(1)
        p = p[:-1] * np.arange(n, 0, -1)
    return p


@export(numpy=np.polyint, traced=("p", "k"))
def polyint(p, m=1, k=None):
    """np.polyint: the coefficients of the m-th antiderivative, integration constants k (0 by
    default; one per integration, the first for the first).

        >>> fnp.polyint(np.array([3.0, 2.0]))           # x^3... : [1, 1, 0]
    """
    p = _coefficients(p)
    ks = np.zeros(int(m)) if k is None else _asarray(k).reshape(-1) if np.ndim(k) else \
        _asarray(k).reshape(1) + np.zeros(int(m))
    for i in range(int(m)):
        n = aval_of(p).shape[0]
        p = concatenate([p / np.arange(n, 0, -1), ks[i:i + 1]])
    return p


def _padded(a, n):
    a = _coefficients(a)
    extra = n - aval_of(a).shape[0]
    return concatenate([np.zeros(extra, aval_of(a).dtype), a]) if extra else a


@export(numpy=np.polyadd, traced=("a1", "a2"))
def polyadd(a1, a2):
    """np.polyadd: the sum of two polynomials.

        >>> fnp.polyadd(np.array([1.0, 2.0]), np.array([1.0, 0.0, 0.0]))
    """
    n = max(aval_of(_asarray(a1)).shape[0], aval_of(_asarray(a2)).shape[0])
    return _padded(a1, n) + _padded(a2, n)


@export(numpy=np.polysub, traced=("a1", "a2"))
def polysub(a1, a2):
    """np.polysub: the difference of two polynomials.

        >>> fnp.polysub(np.array([1.0, 2.0]), np.array([1.0, 0.0, 0.0]))
    """
    n = max(aval_of(_asarray(a1)).shape[0], aval_of(_asarray(a2)).shape[0])
    return _padded(a1, n) - _padded(a2, n)


@export(numpy=np.polymul, traced=("a1", "a2"))
def polymul(a1, a2):
    """np.polymul: the product of two polynomials (the convolution of their coefficients).

        >>> fnp.polymul(np.array([1.0, 1.0]), np.array([1.0, -1.0]))   # x^2 - 1
    """
    return convolve(_coefficients(a1), _coefficients(a2))


@export(numpy=np.polyfit, traced=("x", "y", "w"))
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """np.polyfit: the least-squares polynomial of degree deg through (x, y) (y may be 2-D: one
    fit per column), weights w; differentiable in x, y and w. full=True and cov are NumPy's
    only (plain arrays).

        >>> fnp.polyfit(x, 2.0 * x + 1.0, 1)            # [2, 1]
    """
    if full or cov:
        raise NotImplementedError("polyfit(full=True) / polyfit(cov=...) on traced values; "
                                  "the coefficients (full=False) are supported")
    x, y = _asarray(x), _asarray(y)
    a = x[:, None] ** np.arange(int(deg), -1, -1)
    if w is not None:
        w = _asarray(w)
        a, y = a * w[:, None], (y * w if aval_of(y).ndim == 1 else y * w[:, None])
    if rcond is None:                               # NumPy's default cutoff, and its scaling
        rcond = aval_of(x).shape[0] * np.finfo(np.float64).eps
    scale = sqrt(fsum(a * a, axis=0))               # of the columns (better conditioned)
    c = lstsq(a / scale, y, rcond=rcond)[0]
    return c / (scale if aval_of(c).ndim == 1 else scale[:, None])


@export(numpy=np.poly, traced=("seq_of_zeros",))
def poly(seq_of_zeros):
    """np.poly: the monic polynomial with these roots, highest power first (for a square
    matrix, its characteristic polynomial, from its eigenvalues); differentiable in the roots.

        >>> fnp.poly(np.array([1.0, 2.0]))              # x^2 - 3x + 2
    """
    z = _asarray(seq_of_zeros)
    real_matrix = aval_of(z).ndim == 2 and aval_of(z).dtype.kind != "c"
    if aval_of(z).ndim == 2 and aval_of(z).shape[0] == aval_of(z).shape[1] > 0:
        z = eigvals(z)
    elif aval_of(z).ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    one = np.ones(1, np.result_type(aval_of(z).dtype, np.float64))
    p = one
    for k in range(aval_of(z).shape[0]):
        p = convolve(p, concatenate([one, -z[k:k + 1]]))
    return real(p) if real_matrix else p       # (a real matrix's polynomial is real)


@export(numpy=np.polydiv, traced=("u", "v"))
def polydiv(u, v):
    """np.polydiv: (quotient, remainder) of u divided by v, by long division; differentiable
    in both. NumPy strips the remainder's leading coefficients that round to zero, a length
    that depends on the values: traced, the remainder has len(v) - 1 coefficients (1 if v is
    a constant), the degree it can have.

        >>> q, r = fnp.polydiv(np.array([1.0, -3.0, 2.0]), np.array([1.0, -1.0]))  # x-2, 0
    """
    u, v = _coefficients(u) * 1.0, _coefficients(v) * 1.0
    m, n = aval_of(u).shape[0] - 1, aval_of(v).shape[0] - 1
    if m < n:                        # (NumPy: quotient 0, remainder u)
        return u[:1] * 0.0, u
    r = [u[i] for i in range(m + 1)]
    q = []
    for k in range(m - n + 1):
        d = r[k] / v[0]
        q.append(d)
        for i in range(n + 1):
            r[k + i] = r[k + i] - d * v[i]
    rest = r[m - n + 1:] if n else [r[m] * 0.0]
    return stack(q), stack(rest)


@export(numpy=np.roots, traced=("p",))
def roots(p):
    """np.roots: the roots of a polynomial (highest power first), the eigenvalues of its
    companion matrix, differentiable in the coefficients where the roots are simple. Traced,
    they are complex, in the order the eigenvalue solver gives, and the leading coefficient
    must not be zero (NumPy strips leading and trailing zeros, a length that depends on the
    values; strip them before tracing).

        >>> fnp.roots(np.array([1.0, -3.0, 2.0]))       # 2 and 1
    """
    p = _coefficients(p)
    n = aval_of(p).shape[0] - 1
    if n < 1:
        return p[:0] * 1j
    top = -p[1:] / p[0]
    below = np.eye(n - 1, n) if n > 1 else np.zeros((0, 1))
    return eigvals(concatenate([top[None, :], below.astype(aval_of(top).dtype)]))
