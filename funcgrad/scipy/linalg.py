"""fg.scipy.linalg: scipy.linalg's functions on traced values (named and shaped as in
scipy.linalg and jax.scipy.linalg), differentiable to any order, under fg.jit and fg.vmap.

Every function is a composition of funcgrad.numpy operations, so its derivatives, compiled form
and batching come from theirs:
* solve_triangular masks the triangle SciPy reads and solves with fnp.linalg.solve; a lower
  triangular system is solved with its rows and columns reversed (an upper triangular one),
  where the LU factorization does no pivoting: it is then back substitution, as in LAPACK's
  trtrs. cho_solve and lu_solve are two triangular solves.
* lu_factor of a square matrix is a primitive (LAPACK's getrf; compiled, it calls getrf too)
  with its own derivative rule; of a rectangular one, Gaussian elimination with partial
  pivoting written with fnp operations (the pivot row chosen as getrf does, the first largest
  entry). Either returns SciPy's (lu, piv), differentiated for the pivots chosen.
* expm is scaling and squaring with the degree-13 Pade approximant (Higham 2005): A is scaled
  by 2^-s with s chosen from its 1-norm, then squared back s times (at most max_squarings).
* solve, inv, det, cholesky, eigh, eigvalsh, svd, qr and lstsq are fnp.linalg's with SciPy's
  argument conventions (cholesky returns the upper factor by default, as SciPy does).
* Special matrices (block_diag, toeplitz, ...), matrix functions (expm_frechet, sqrtm, polar,
  cosm, ...), Sylvester and Lyapunov equations, eig and schur are in _linalg_more.py (with
  expm and the helpers this module shares), which says how each is computed; logm, built on
  its sqrtm and expm_frechet, in _logm.py.
Arguments that only tune SciPy's memory use or checks (overwrite_a, overwrite_b, check_finite,
lapack_driver) are accepted and ignored. Gradient conventions (one triangle read, repeated
eigenvalues) are those of fnp.linalg: see funcgrad/primitives/linalg.py.

    >>> c = fg.scipy.linalg.cho_factor(np.array([[4.0, 2.0], [2.0, 3.0]]))
    >>> fg.scipy.linalg.cho_solve(c, np.array([1.0, 2.0]))
"""
from __future__ import annotations

import numpy as np

from .. import numpy as fnp
from ..primitives.linalg import lu_p
from ._linalg_more import (_float, _mT, _square, block_diag, circulant, companion, cosm, coshm,
                           eig, eigh_tridiagonal, eigvals, expm, expm_frechet, hankel, hilbert,
                           orthogonal_procrustes, polar, schur, sinhm, sinm,
                           solve_continuous_lyapunov, solve_sylvester, sqrtm, tanhm, tanm,
                           toeplitz)
from ._logm import logm

__all__ = ["solve_triangular", "cho_factor", "cho_solve", "lu_factor", "lu_solve", "lu", "expm",
           "solve", "inv", "det", "cholesky", "eigh", "eigvalsh", "svd", "qr", "lstsq",
           # from _linalg_more: special matrices, matrix functions and equations, eig, schur
           "block_diag", "toeplitz", "circulant", "hankel", "companion", "hilbert",
           "expm_frechet", "coshm", "sinhm", "tanhm", "cosm", "sinm", "tanm", "sqrtm", "polar",
           "orthogonal_procrustes", "solve_sylvester", "solve_continuous_lyapunov", "eig",
           "eigvals", "eigh_tridiagonal", "schur", "logm"]

_TRANSPOSED = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}


def _symmetric(a, lower):
    """The symmetric matrix SciPy reads from one triangle of a."""
    return fnp.tril(a) + _mT(fnp.tril(a, -1)) if lower else fnp.triu(a) + _mT(fnp.triu(a, 1))


# ---- triangular and Cholesky solves ----------------------------------------------------------

def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """scipy.linalg.solve_triangular: x with a @ x = b (trans 1 or 'T': a.T @ x = b; 2 or 'C':
    a.conj().T @ x = b), reading
    only the lower or upper triangle of a (unit_diagonal: taking its diagonal as ones); b of
    shape (M,) or (M, K). The gradient with respect to a is 0 on the triangle not read.

        >>> fg.scipy.linalg.solve_triangular(np.array([[2.0, 0.0], [1.0, 1.0]]),
        ...                                  np.array([2.0, 3.0]), lower=True)
        array([1., 2.])
    """
    if trans not in _TRANSPOSED:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    a, b = _square(a, "solve_triangular"), _float(b)
    if b.ndim == 0 or b.shape[0 if b.ndim == 1 else -2] != a.shape[-1]:
        raise ValueError(f"solve_triangular: shapes of a {a.shape} and b {b.shape} are "
                         "incompatible")
    tri = fnp.tril(a) if lower else fnp.triu(a)
    if unit_diagonal:
        tri = fnp.where(np.eye(a.shape[-1], dtype=bool), 1.0, tri)
    if _TRANSPOSED[trans]:
        tri, lower = _mT(fnp.conj(tri) if trans in (2, "C") else tri), not lower
    if not lower:
        return fnp.linalg.solve(tri, b)
    rows = 0 if b.ndim == 1 else -2          # reversed rows and columns: upper triangular
    x = fnp.linalg.solve(fnp.flip(tri, (-2, -1)), fnp.flip(b, rows))
    return fnp.flip(x, rows)


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """scipy.linalg.cholesky: the upper factor U with a = U.T @ U by default (lower=True: L
    with a = L @ L.T), reading that triangle of a.

        >>> fg.scipy.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 2.0]]))
        array([[2., 1.],
               [0., 1.]])
    """
    return fnp.linalg.cholesky(_square(a, "cholesky"), upper=not lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """scipy.linalg.cho_factor -> (c, lower), for cho_solve. c is the Cholesky factor of a
    (upper by default); where SciPy leaves arbitrary entries in its other triangle, c has
    zeros (as in JAX).

        >>> c, low = fg.scipy.linalg.cho_factor(np.array([[4.0, 2.0], [2.0, 2.0]]))
    """
    return cholesky(a, lower=lower), bool(lower)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """scipy.linalg.cho_solve: x with a @ x = b, from cho_factor(a) = (c, lower); two
    triangular solves (reading the triangle of c that holds the factor).

        >>> A = np.array([[4.0, 2.0], [2.0, 2.0]])
        >>> x = fg.scipy.linalg.cho_solve(fg.scipy.linalg.cho_factor(A), np.array([1.0, 0.0]))
    """
    c, lower = c_and_lower
    if lower:                                 # L L^T x = b
        return solve_triangular(c, solve_triangular(c, b, lower=True), trans=1, lower=True)
    return solve_triangular(c, solve_triangular(c, b, trans=1))      # U^T U x = b


# ---- LU ------------------------------------------------------------------------------------

def lu_factor(a, overwrite_a=False, check_finite=True):
    """scipy.linalg.lu_factor -> (lu, piv) of an (M, N) matrix: P a = L U with L unit lower
    triangular (below lu's diagonal) and U upper (on and above it); row i was swapped with row
    piv[i] (LAPACK's ipiv, 0-based). A square matrix is one primitive (LAPACK's getrf, as SciPy
    calls it, also in compiled code; its derivative is P^T L^-T (tril(L^T C, -1) + triu(C U^T))
    U^-T for the pivots chosen); a rectangular one is Gaussian elimination with partial
    pivoting written with funcgrad operations, differentiated through.

        >>> lu, piv = fg.scipy.linalg.lu_factor(np.array([[1.0, 2.0], [3.0, 4.0]]))
        >>> piv
        array([1, 1], dtype=int32)
    """
    a = _float(a)
    if a.ndim != 2:
        raise ValueError(f"lu_factor: expected a matrix, got shape {a.shape}")
    m, n = a.shape
    if m == n:
        lu_, piv, _ = lu_p.bind(a)
        return lu_, piv
    rows, cols = np.arange(m), np.arange(n)
    piv = []
    for j in range(min(m, n)):
        p = fnp.argmax(fnp.where(rows >= j, fnp.abs(a[:, j]), -1.0))     # first largest
        picked, row_j = a[p], a[j]
        a = fnp.where((rows == j)[:, None], picked, fnp.where((rows == p)[:, None], row_j, a))
        pivot = picked[j]
        below = rows > j
        mult = fnp.where(below, a[:, j] / fnp.where(pivot == 0, 1.0, pivot), 0.0)
        a = a - fnp.outer(mult, fnp.where(cols > j, picked, 0.0))
        a = fnp.where(below[:, None] & (cols == j), mult[:, None], a)
        piv.append(p)
    return a, fnp.stack(piv).astype(np.int32) if piv else np.zeros(0, np.int32)


def _row_order(piv, n, inverse=False):
    """Indices r with (P b) = b[r] for the row swaps piv (inverse: those of P^T b)."""
    order = np.arange(n)
    steps = range(len(piv))
    for i in (reversed(steps) if inverse else steps):
        p = piv[i]
        at_i, at_p = order[i], fnp.take(order, p)
        order = fnp.where(np.arange(n) == i, at_p, fnp.where(np.arange(n) == p, at_i, order))
    return order


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """scipy.linalg.lu_solve: x with a @ x = b (trans 1 or 'T': a.T @ x = b) from
    lu_factor(a) = (lu, piv); b of shape (N,) or (N, K).

        >>> A = np.array([[1.0, 2.0], [3.0, 4.0]])
        >>> fg.scipy.linalg.lu_solve(fg.scipy.linalg.lu_factor(A), np.array([5.0, 11.0]))
        array([1., 2.])
    """
    if trans not in _TRANSPOSED:
        raise ValueError(f"lu_solve: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    lu, piv = lu_and_piv
    n = fnp.shape(lu)[0]
    b = _float(b)
    # the pivots are integers (no derivative), traced when a is: the rows are permuted by
    # fnp.take, whatever b is (a NumPy b indexed by traced pivots would need their values)
    if not _TRANSPOSED[trans]:                # P^T L U x = b
        pb = fnp.take(b, _row_order(piv, n), axis=0)
        y = solve_triangular(lu, pb, lower=True, unit_diagonal=True)
        return solve_triangular(lu, y)
    z = solve_triangular(lu, b, trans=trans)  # U^T L^T P x = b
    w = solve_triangular(lu, z, trans=trans, lower=True, unit_diagonal=True)
    return fnp.take(w, _row_order(piv, n, inverse=True), axis=0)


def lu(a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    """scipy.linalg.lu -> (p, l, u) with a = p @ l @ u (permute_l: (p @ l, u); p_indices: p as
    the row indices with a = l[p] @ u), from lu_factor.

        >>> p, l, u = fg.scipy.linalg.lu(np.array([[1.0, 2.0], [3.0, 4.0]]))
    """
    packed, piv = lu_factor(a)
    m, n = fnp.shape(packed)
    k = min(m, n)
    low = fnp.tril(packed[:, :k], -1) + np.eye(m, k)
    up = fnp.triu(packed[:k])
    order = _row_order(piv, m, inverse=True)          # p @ x = x[order]
    if permute_l:
        return low[order], up
    if p_indices:
        return order, low, up
    perm = _row_order(piv, m)
    return (perm[None, :] == np.arange(m)[:, None]) * 1.0, low, up


# ---- fnp.linalg with SciPy's conventions -------------------------------------------------------

_STRUCTURES = {"general", "symmetric", "hermitian", "positive definite", "diagonal",
               "tridiagonal", "banded", "lower triangular", "upper triangular"}


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a=None, transposed=False):
    """scipy.linalg.solve: x with a @ x = b (transposed: a.T @ x = b); b of shape (N,) or
    (N, K). assume_a 'sym'/'her'/'pos' reads one triangle of a (the upper one unless lower),
    'lower triangular'/'upper triangular' solve_triangular's, 'diagonal' the diagonal; every
    other structure is solved as a general matrix.

        >>> fg.scipy.linalg.solve(np.array([[3.0, 1.0], [1.0, 2.0]]), np.array([9.0, 8.0]))
        array([2., 3.])
    """
    a, b = _square(a, "solve"), _float(b)
    kind = {"gen": "general", "sym": "symmetric", "her": "hermitian",
            "pos": "positive definite", None: "general"}.get(assume_a, assume_a)
    if kind not in _STRUCTURES:
        raise ValueError(f"solve: assume_a must be one of {sorted(_STRUCTURES)} (or 'gen', "
                         f"'sym', 'her', 'pos'), got {assume_a!r}")
    if kind in ("symmetric", "hermitian", "positive definite"):
        a = _symmetric(a, lower)
    elif kind in ("lower triangular", "upper triangular"):
        return solve_triangular(a, b, trans=int(bool(transposed)),
                                lower=kind == "lower triangular")
    elif kind == "diagonal":
        d = fnp.diagonal(a, axis1=-2, axis2=-1)
        return b / (d if b.ndim == 1 else d[..., None])
    return fnp.linalg.solve(_mT(a) if transposed else a, b)


def inv(a, overwrite_a=False, check_finite=True):
    """scipy.linalg.inv, the inverse of a square matrix.

        >>> fg.scipy.linalg.inv(np.array([[2.0, 0.0], [0.0, 4.0]]))
        array([[0.5 , 0.  ],
               [0.  , 0.25]])
    """
    return fnp.linalg.inv(_square(a, "inv"))


def det(a, overwrite_a=False, check_finite=True):
    """scipy.linalg.det; its gradient is the cofactor matrix (see fnp.linalg.det).

        >>> fg.grad(fg.scipy.linalg.det)(np.array([[2.0, 1.0], [1.0, 3.0]]))
    """
    return fnp.linalg.det(_square(a, "det"))


def eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         type=1, check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    """scipy.linalg.eigh -> (w, v), or w for eigvals_only: eigenvalues ascending and
    eigenvectors as columns of the symmetric matrix read from one triangle of a (the lower one
    unless lower=False). With b, the generalized problem a v = w b v (type 1) through b's
    Cholesky factor, with v.T @ b @ v = I. subset_by_index=(lo, hi) keeps eigenvalues lo..hi.

        >>> w, v = fg.scipy.linalg.eigh(np.array([[2.0, 1.0], [1.0, 2.0]]))
        >>> w
        array([1., 3.])
    """
    if subset_by_value is not None or type != 1:
        raise NotImplementedError("eigh: subset_by_value and type 2/3 are not supported on "
                                  "traced values")
    a = _square(a, "eigh")
    factor = None
    if b is not None:                         # C = L^-1 A L^-T, v = L^-T y
        factor = cholesky(b, lower=True) if lower else _mT(cholesky(b))
        x = solve_triangular(factor, _symmetric(a, lower), lower=True)
        a, lower = solve_triangular(factor, _mT(x), lower=True), True
    w, v = fnp.linalg.eigh(a, UPLO="L" if lower else "U")
    if factor is not None:
        v = solve_triangular(factor, v, trans=1, lower=True)
    if subset_by_index is not None:
        lo, hi = (int(i) for i in subset_by_index)
        w, v = w[..., lo:hi + 1], v[..., lo:hi + 1]
    return w if eigvals_only else (w, v)


def eigvalsh(a, b=None, *, lower=True, overwrite_a=False, overwrite_b=False, type=1,
             check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    """scipy.linalg.eigvalsh: eigh's eigenvalues (ascending), with eigh's arguments.

        >>> fg.scipy.linalg.eigvalsh(np.array([[2.0, 1.0], [1.0, 2.0]]))
        array([1., 3.])
    """
    return eigh(a, b, lower=lower, eigvals_only=True, type=type,
                subset_by_index=subset_by_index, subset_by_value=subset_by_value)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
    """scipy.linalg.svd -> (U, s, Vh), or s for compute_uv=False.

        >>> fg.scipy.linalg.svd(np.array([[3.0, 0.0], [0.0, -2.0]]), compute_uv=False)
        array([3., 2.])
    """
    out = fnp.linalg.svd(_float(a), full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """scipy.linalg.qr -> (Q, R): mode 'full' (Q M x M, R M x N), 'economic' (Q M x K,
    R K x N, K = min(M, N)) or 'r' (the tuple (R,), R M x N). Householder reflections as
    fnp.linalg.qr; column pivoting and mode 'raw' are not supported.

        >>> Q, R = fg.scipy.linalg.qr(np.array([[1.0, 2.0], [3.0, 4.0]]))
    """
    modes = {"full": "complete", "economic": "reduced", "r": "complete"}
    if pivoting or mode not in modes:
        raise NotImplementedError(f"qr: pivoting=True and mode={mode!r} are not supported on "
                                  "traced values; use mode 'full', 'economic' or 'r'")
    q, r = fnp.linalg.qr(_float(a), mode=modes[mode])
    return (r,) if mode == "r" else (q, r)


def lstsq(a, b, cond=None, overwrite_a=False, overwrite_b=False, check_finite=True,
          lapack_driver=None):
    """scipy.linalg.lstsq -> (x, residues, rank, s): the minimum-norm least-squares solution
    (singular values below cond * s_max count as zero; cond None: machine epsilon). residues
    are the squared norms of the columns of b - a @ x when M > N and the rank is N (a scalar
    for a 1-D b), else an empty array. The gradient assumes a locally constant rank.

        >>> A = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
        >>> x, residues, rank, s = fg.scipy.linalg.lstsq(A, np.array([1.0, 2.0, 2.0]))
    """
    a, b = _float(a), _float(b)
    rcond = np.finfo(a.dtype).eps if cond is None else cond
    x, residues, rank, s = fnp.linalg.lstsq(a, b, rcond=rcond)
    if b.ndim == 1 and fnp.shape(residues) == (1,):
        residues = residues[0]
    return x, residues, int(rank), s
