"""funcgrad.numpy.linalg functions built from other funcgrad operations: norm (every vector and
matrix order; gradient 0 at x = 0 for the 2-, Frobenius and p >= 1 norms; a traced vector
order p is differentiated), vector_norm,
matrix_norm, cond, lstsq, qr (Householder, LAPACK's signs), matrix_power, multi_dot, and
NumPy 2's aliases of contract.py functions.
Conventions are stated in primitives/linalg.py.
"""
from __future__ import annotations

import operator
from collections import namedtuple

import numpy as np

from .._errors import user_frame, where as where_
from ..ir import Traced, aval_of
from ..primitives.base import broadcast_to, convert, export, normalize_axes, reshape, transpose
from ..primitives.contract import matmul
from ..primitives.elementwise import absolute, multiply, not_equal, sqrt, where
from ..primitives.indexing import at
from ..primitives.linalg import (LinAlgError, _as_float, _mT, _public, _square, inv, pinv,
                                svdvals_p)
from ..primitives.reductions import max as _max, min as _min, sum as _sum
from ..primitives.shape import moveaxis
from ._complex import abs2, conj, real, real_dtype
from ._contract import (cross as _cross, diagonal as _diagonal, outer as _outer,
                        tensordot as _tensordot, trace as _trace)


# ---- norms --------------------------------------------------------------------------------------

def _safe_root(s, p=2):
    """s ** (1/p) with value and gradient 0 where s == 0 (instead of inf/NaN)."""
    zero = s == 0.0
    safe = where(zero, 1.0, s)
    return where(zero, 0.0, sqrt(safe) if _is_two(p) else safe ** (1.0 / p))


def _is_two(p):
    return not isinstance(p, Traced) and p == 2


def _vector_norm(x, ord, axis, keepdims):
    kw = dict(axis=axis, keepdims=keepdims)
    if isinstance(ord, Traced):
        return _traced_p_norm(x, ord, kw)
    if ord in (np.inf, -np.inf):
        return (_max if ord > 0 else _min)(absolute(x), **kw)
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if ord == 0:
        return _sum(convert(not_equal(x, 0), real_dtype(aval_of(x).dtype)), **kw)
    if ord == 1:
        return _sum(absolute(x), **kw)
    if ord is None or ord == 2:
        return _safe_root(_sum(abs2(x), **kw))
    return _safe_root(_sum(absolute(x) ** ord, **kw), float(ord))


def _traced_p_norm(x, p, kw):
    """A vector norm whose order p is traced: (sum |x|^p)^(1/p), differentiable in p too (the
    shortcuts for p = 1 and 2 would drop that derivative); p = +-inf and 0, where the norm is
    not a continuous function of p, are decisions on p's value (guards)."""
    if bool(p == np.inf) or bool(p == -np.inf):
        return (_max if bool(p > 0) else _min)(absolute(x), **kw)
    if bool(p == 0):
        return _sum(convert(not_equal(x, 0), real_dtype(aval_of(x).dtype)), **kw)
    p = convert(p, real_dtype(aval_of(x).dtype))
    return _safe_root(_sum(absolute(x) ** p, **kw), p)


def _matrix_norm(x, ord, row, col):
    if isinstance(ord, Traced):
        raise TypeError(
            f"np.linalg.norm: `ord` is traced{where_(user_frame())}; the order of a matrix norm "
            "selects which norm it is ('fro', 'nuc', 1, 2, inf, ...), so it must be a Python "
            "value (close over it, or make it static with static_argnums). A traced order is "
            "supported for vector norms (its p-norm is differentiable in p).")
    nd = aval_of(x).ndim
    if ord in (2, -2, "nuc"):
        sv = svdvals_p.bind(moveaxis(x, [row, col], [nd - 2, nd - 1]), hermitian=False)
        return {2: _max, -2: _min}.get(ord, _sum)(sv, axis=-1)
    if ord in (1, -1):
        return (_max if ord > 0 else _min)(_sum(absolute(x), axis=row), axis=col - (col > row))
    if ord in (np.inf, -np.inf):
        return (_max if ord > 0 else _min)(_sum(absolute(x), axis=col), axis=row - (row > col))
    if ord in (None, "fro", "f"):
        return _safe_root(_sum(abs2(x), axis=(row, col)))
    raise ValueError("Invalid norm order for matrices.")


@_public
def norm(x, ord=None, axis=None, keepdims=False):
    """np.linalg.norm: vector norms (None/2, 1, inf, -inf, 0, any p) and matrix norms
    (None/'fro', 'nuc', 1, -1, 2, -2, inf, -inf); axis is an int or a 2-tuple. The gradient
    of the 2-norm and the Frobenius norm at 0 is 0.

        >>> fnp.linalg.norm(x)                  # plain np.linalg.norm(x) on traced x too
        >>> fnp.linalg.norm(A, ord="nuc", axis=(-2, -1))
    """
    x = _as_float(x)
    nd = aval_of(x).ndim
    if axis is None:
        if isinstance(ord, Traced):
            if nd == 1:
                return _vector_norm(x, ord, 0, keepdims)
        elif ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            r = _safe_root(_sum(abs2(x)))
            return reshape(r, (1,) * nd) if keepdims else r
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (operator.index(axis),)
        except TypeError:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from None
    if len(axis) == 1:
        return _vector_norm(x, ord, normalize_axes(axis, nd)[0], keepdims)
    if len(axis) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    row, col = (normalize_axes(ax, nd)[0] for ax in axis)
    if row == col:
        raise ValueError("Duplicate axes given.")
    r = _matrix_norm(x, ord, row, col)
    if keepdims:
        r = reshape(r, [1 if i in (row, col) else d for i, d in enumerate(aval_of(x).shape)])
    return r


@_public
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """np.linalg.vector_norm over `axis` (None: all elements; a tuple: those axes together).

        >>> fnp.linalg.vector_norm(X, axis=-1)
    """
    x = _as_float(x)
    shape = aval_of(x).shape
    axes = normalize_axes(axis, len(shape))
    if len(axes) == 1:
        r = _vector_norm(x, ord, axes[0], False)
    else:                   # flatten the axes into one, in front
        rest = [i for i in range(len(shape)) if i not in axes]
        x = reshape(transpose(x, list(axes) + rest), (-1,) + tuple(shape[i] for i in rest))
        r = _vector_norm(x, ord, 0, False)
    return reshape(r, [1 if i in axes else d for i, d in enumerate(shape)]) if keepdims else r


@_public
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """np.linalg.matrix_norm over the last two axes.

        >>> fnp.linalg.matrix_norm(A, ord=2)
    """
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


# ---- cond, lstsq ---------------------------------------------------------------------------------

@_public
def cond(x, p=None):
    """np.linalg.cond: the condition number, s_max / s_min for p None/2 (s_min / s_max for -2),
    else norm(x, p) * norm(inv(x), p) (p in 'fro', 'nuc', 1, -1, inf, -inf).

        >>> fnp.linalg.cond(np.array([[2.0, 0.0], [0.0, 0.5]]))
        4.0
    """
    x = _as_float(x)
    if p is None or p in (2, -2):
        s = svdvals_p.bind(x, hermitian=False)
        big, small = _max(s, axis=-1), _min(s, axis=-1)
        return small / big if p == -2 else big / small
    _square(x)
    return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))


@_public
def lstsq(a, b, rcond=None):
    """np.linalg.lstsq -> (x, residuals, rank, s): the minimum-norm least-squares solution
    through the pseudo-inverse, with NumPy's cutoff (singular values below rcond * s_max
    count as zero; rcond None: eps * max(M, N)). The rank is read from the values (a guard
    under fg.jit) and, as in NumPy, the residuals (squared 2-norm of each column of
    b - a @ x) are returned only when the rank is N < M, else an empty array. The gradient
    assumes a locally constant rank.

        >>> A, b = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]), np.array([1.0, 2.0, 2.0])
        >>> x, residuals, rank, s = fnp.linalg.lstsq(A, b)
    """
    a, b = _as_float(a, b)
    if aval_of(a).ndim != 2 or aval_of(b).ndim not in (1, 2):
        raise LinAlgError(f"lstsq: a must be a matrix and b a vector or matrix, got "
                          f"{aval_of(a)} and {aval_of(b)}")
    m, n = aval_of(a).shape
    if aval_of(b).shape[0] != m:
        raise LinAlgError("Incompatible dimensions")
    eps = np.finfo(aval_of(a).dtype).eps
    cutoff = eps * max(m, n) if rcond is None or rcond < 0 else rcond
    s = svdvals_p.bind(a, hermitian=False)
    x = matmul(pinv(a, rcond=cutoff), b)
    rank = int(_sum(convert(s > cutoff * _max(s), np.int64)))
    if rank == n < m:
        r = matmul(a, x) - b
        residuals = _sum(abs2(r), axis=0)
        residuals = reshape(residuals, (1,)) if aval_of(b).ndim == 1 else residuals
    else:
        residuals = np.zeros((0,), real_dtype(aval_of(x).dtype))
    return x, residuals, np.int32(rank), s


# ---- qr --------------------------------------------------------------------------------------------

QRResult = namedtuple("QRResult", ["Q", "R"])


@_public
def qr(a, mode="reduced"):
    """np.linalg.qr for one matrix, by Householder reflections written with funcgrad operations
    (so every derivative comes from theirs), LAPACK's signs: each diagonal entry of R is minus
    the sign of the (real part of the) column's leading entry times its norm; complex
    matrices get LAPACK's complex reflectors (R's diagonal is real). mode "reduced" (Q m x k, R k x n,
    k = min(m, n)), "complete" (Q m x m, R m x n) or "r" (R only). The gradient assumes a
    full-rank matrix.

        >>> Q, R = fnp.linalg.qr(np.array([[1.0, 2.0], [3.0, 4.0]]))
    """
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete' or 'r' for traced values, "
                         f"got {mode!r}")
    a = _as_float(a)
    if aval_of(a).ndim != 2:
        raise LinAlgError(f"qr: one matrix only for traced values, got {aval_of(a)}")
    m, n = aval_of(a).shape
    k = min(m, n)
    cplx = aval_of(a).dtype.kind == "c"
    r, q = a, np.eye(m, dtype=aval_of(a).dtype)
    # (the last row: no reflection for a real matrix; a complex one gets one that makes the
    # diagonal entry real)
    for j in range(k if cplx else min(k, m - 1)):
        x = r[j:, j]
        lead = x[0]
        alpha = -where(real(lead) < 0, -1.0, 1.0) * _safe_root(_sum(abs2(x)))
        v = x - alpha * (np.arange(m - j) == 0)
        if cplx:
            # LAPACK's zlarfg: H = I - c v v^H with c = -1 / (alpha conj(v0)) and a real
            # alpha, so R's diagonal is real; R <- H^H R, Q <- Q H
            den = alpha * conj(v[0])
            c = where(den != 0, -1.0 / where(den != 0, den, 1.0), 0.0)
            r = at(r)[j:, :].add(-conj(c) * _outer(v, matmul(conj(v), r[j:, :])))
            q = at(q)[:, j:].add(-c * _outer(matmul(q[:, j:], v), conj(v)))
            continue
        vv = _sum(v * v)
        beta = where(vv > 0, 2.0 / where(vv > 0, vv, 1.0), 0.0)
        r = at(r)[j:, :].add(-beta * _outer(v, matmul(v, r[j:, :])))
        q = at(q)[:, j:].add(-beta * _outer(matmul(q[:, j:], v), v))
    keep = np.triu(np.ones((m, n), bool))
    r = where(keep, r, 0.0)
    if mode == "r":
        return r[:k] if m > n else r
    if mode == "reduced":
        return QRResult(q[:, :k], r[:k])
    return QRResult(q, r)


# ---- matrix_power, multi_dot ---------------------------------------------------------------------

@_public
def matrix_power(a, n):
    """np.linalg.matrix_power for an integer n (n < 0 inverts first), by repeated squaring.

        >>> fnp.linalg.matrix_power(A, 3)
    """
    _square(a)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError("exponent must be an integer") from None
    if n == 0:
        av = aval_of(a)
        return broadcast_to(np.eye(av.shape[-1], dtype=av.dtype), av.shape, force=True)
    if n < 0:
        a, n = inv(a), -n
    z = result = None
    while n > 0:
        z = a if z is None else matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


def _chain_order(dims):
    """split[i][j]: where to split the product of arrays i..j (cheapest order, as NumPy)."""
    n = len(dims) - 1
    cost, split = [[0] * n for _ in range(n)], [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j], split[i][j] = q, k
    return split


@_public
def multi_dot(arrays, *, out=None):
    """np.linalg.multi_dot: a chain of matrix products in the cheapest order (the first and
    last arrays may be 1-D).

        >>> fnp.linalg.multi_dot([A, B, C, v])
    """
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    first, last = aval_of(arrays[0]).ndim, aval_of(arrays[-1]).ndim
    if first == 1:
        arrays[0] = reshape(arrays[0], (1, -1))
    if last == 1:
        arrays[-1] = reshape(arrays[-1], (-1, 1))
    if any(aval_of(x).ndim != 2 for x in arrays):
        raise LinAlgError("multi_dot: the arrays in between must be two-dimensional")
    split = _chain_order([aval_of(x).shape[0] for x in arrays] + [aval_of(arrays[-1]).shape[1]])

    def prod(i, j):
        return arrays[i] if i == j else matmul(prod(i, split[i][j]), prod(split[i][j] + 1, j))
    r = prod(0, len(arrays) - 1)
    return reshape(r, () if first == last == 1 else (-1,)) if 1 in (first, last) else r


# ---- NumPy 2 aliases (functions of contract.py with numpy.linalg's signatures) -------------------

export("matmul", linalg=True)(matmul)


@_public
def tensordot(x1, x2, /, *, axes=2):
    """np.linalg.tensordot, e.g. ``fnp.linalg.tensordot(A, B, axes=1)``."""
    return _tensordot(x1, x2, axes)


@_public
def matrix_transpose(x, /):
    """np.linalg.matrix_transpose (swap the last two axes), e.g. ``matrix_transpose(A)``."""
    if aval_of(x).ndim < 2:
        raise ValueError("Input array must be at least 2-dimensional")
    return _mT(x)


@_public
def trace(x, /, *, offset=0, dtype=None):
    """np.linalg.trace over the last two axes, e.g. ``fnp.linalg.trace(A)``."""
    _square(x, square=False)
    return _trace(x, offset, -2, -1, dtype)


@_public
def diagonal(x, /, *, offset=0):
    """np.linalg.diagonal of the last two axes, e.g. ``fnp.linalg.diagonal(A)``."""
    _square(x, square=False)
    return _diagonal(x, offset, -2, -1)


@_public
def outer(x1, x2, /):
    """np.linalg.outer of two 1-D arrays, e.g. ``fnp.linalg.outer(u, v)``."""
    if aval_of(x1).ndim != 1 or aval_of(x2).ndim != 1:
        raise ValueError("Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={aval_of(x1).ndim} and x2.ndim={aval_of(x2).ndim}.")
    return _outer(x1, x2)


@_public
def cross(x1, x2, /, *, axis=-1):
    """np.linalg.cross of (stacks of) 3-vectors, e.g. ``fnp.linalg.cross(u, v)``."""
    if aval_of(x1).shape[axis] != 3 or aval_of(x2).shape[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors")
    return _cross(x1, x2, axis=axis)


@_public
def vecdot(x1, x2, /, *, axis=-1):
    """np.linalg.vecdot, sum(x1 * x2, axis) broadcast, e.g. ``fnp.linalg.vecdot(X, y)``."""
    return _sum(multiply(x1, x2), axis=axis)
