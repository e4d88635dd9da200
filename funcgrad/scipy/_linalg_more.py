"""fg.scipy.linalg, continued: special matrices, matrix functions and matrix equations. Every
name here is re-exported by funcgrad/scipy/linalg.py, which imports this module (and its
helpers and expm); this module imports nothing from linalg.py.

Special matrices (block_diag, toeplitz, circulant, hankel, companion) gather their entries
from the arguments (fnp.take, concatenate): linear maps, differentiable to any order, batched
over leading dimensions as SciPy 1.17 batches them (hankel as SciPy 1.19 will). hilbert is
a constant NumPy array, as in SciPy.

Matrix functions:
* expm: scaling and squaring with the degree-13 Pade approximant (Higham 2005).
* expm_frechet(A, E): the Frechet derivative L(A, E) of expm, the top-right block of
  expm([[A, E], [0, A]]) (Higham 2008, Functions of Matrices, (3.16)), with E scaled to A's
  1-norm first (L is linear in E) so that the block's norm, and the squarings, stay A's.
* coshm, sinhm, tanhm, cosm, sinm, tanm: from expm (cosm, sinm of a real matrix as the real
  and imaginary parts of expm(iA)).
* sqrtm: the principal square root by the scaled product form of the Denman-Beavers
  iteration (Higham 2008, (6.29): determinant scaling while far from convergence), run until
  ||M_k - I||_F <= 4 n eps (or 64 steps), then one Newton step (a Sylvester solve) that takes
  the residual ||X X - A|| / ||A||, which the iteration leaves at about cond(A)^(1/2) eps, to
  a few eps (kept where it lowers the residual). A real matrix gives the real root, which
  exists when no eigenvalue is real and negative (else NaN: pass a complex matrix for the
  complex root); a singular matrix is refused (fnp.linalg.inv's LinAlgError). The derivative
  is not that of the iteration but implicit: X dX + dX X = dA, a Sylvester equation in dX.
* polar(a): from the SVD a = W S Vh: u = W Vh, p = Vh^H S Vh (side 'right') or W S W^H.
* orthogonal_procrustes: the SVD of A^T B.
Matrix equations:
* solve_sylvester(a, b, q), a x + x b = q: up to 64 unknowns (M N), one dense solve of the
  Kronecker form (I (x) a + b^T (x) I) vec x = vec q, backward stable. Larger: with the
  eigendecompositions a = U Da U^-1, b = V Db V^-1 in place of Bartels and Stewart's Schur
  forms, y = (U^-1 q V) / (da_i + db_j), x = U y V^-1, plus one step of iterative refinement
  with the same factors: accurate for well-conditioned eigenvector matrices (normal or nearly
  normal a and b), not for strongly non-normal ones (SciPy's Schur method is). The derivative
  is implicit (another Sylvester solve, with a^T and b^T), not eig's.
* solve_continuous_lyapunov(a, q) = solve_sylvester(a, a^H, q).
Decompositions: eig, eigvals (complex, through fnp.linalg.eig), eigh_tridiagonal (fnp's eigh
of the tridiagonal matrix), schur (SciPy's, called back: no derivative).

sqrtm's and solve_sylvester's rules recompute the value in the backward pass from the
inputs (a residual computed inside fwd would carry fwd's own operations, the iteration, into
second derivatives); derivatives are for real matrices.
"""
from __future__ import annotations

import numpy as np

from .. import numpy as fnp
from .._errors import UnsupportedFunctionError
from ..higher_order import custom_vjp, fori_loop, pure_callback, stop_gradient, while_loop

__all__ = ["block_diag", "toeplitz", "circulant", "hankel", "companion", "hilbert",
           "expm_frechet", "coshm", "sinhm", "tanhm", "cosm", "sinm", "tanm", "sqrtm",
           "polar", "orthogonal_procrustes", "solve_sylvester", "solve_continuous_lyapunov",
           "eig", "eigvals", "eigh_tridiagonal", "schur"]


def _float(x):
    return fnp.asarray(x) * 1.0


def _square(a, name):
    a = _float(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: expected a square matrix, got shape {a.shape}")
    return a


def _mT(x):
    return fnp.swapaxes(x, -1, -2)


def _mH(x):
    return _mT(fnp.conj(x)) if fnp.iscomplexobj(x) else _mT(x)


def _dtype(*xs):
    return np.result_type(*(x.dtype for x in xs))


def _is_complex(*xs):
    return any(fnp.iscomplexobj(x) for x in xs)


# ---- special matrices --------------------------------------------------------------------------

def block_diag(*arrs):
    """scipy.linalg.block_diag: the matrices (0-D and 1-D arrays as one-row matrices) along
    the diagonal of one matrix, zeros elsewhere.

        >>> fg.scipy.linalg.block_diag(np.array([[1.0, 2.0]]), 3.0)
        array([[1., 2., 0.],
               [0., 0., 3.]])
    """
    if not arrs:
        return np.zeros((1, 0))
    blocks = [fnp.atleast_2d(fnp.asarray(a)) for a in arrs]
    bad = [i for i, b in enumerate(blocks) if b.ndim > 2]
    if bad:
        raise ValueError(f"block_diag: arguments {bad} have more than 2 dimensions")
    dtype = _dtype(*blocks)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        rows.append(fnp.concatenate([np.zeros((r, left), dtype), b.astype(dtype),
                                     np.zeros((r, width - left - c), dtype)], axis=1))
        left += c
    return fnp.concatenate(rows, axis=0)


def _batched_pair(c, r):
    """c and r as 1-D or stacked rows with their leading dimensions broadcast together."""
    c, r = fnp.atleast_1d(fnp.asarray(c)), fnp.atleast_1d(fnp.asarray(r))
    lead = np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    return (fnp.broadcast_to(c, lead + c.shape[-1:]), fnp.broadcast_to(r, lead + r.shape[-1:]))


def toeplitz(c, r=None):
    """scipy.linalg.toeplitz: the matrix with first column c and first row r (r[0] ignored;
    r None: conj(c)), t[i, j] = c[i - j] for i >= j, r[j - i] above; stacked c and r (leading
    dimensions) give stacked matrices.

        >>> fg.scipy.linalg.toeplitz(np.array([1.0, 2.0, 3.0]), np.array([1.0, 4.0]))
        array([[1., 4.],
               [2., 1.],
               [3., 2.]])
    """
    c = fnp.asarray(c)
    c, r = _batched_pair(c, fnp.conj(c) if r is None else r)
    n, m = c.shape[-1], r.shape[-1]
    vals = fnp.concatenate([fnp.flip(r[..., 1:], -1), c.astype(_dtype(c, r))], axis=-1)
    return fnp.take(vals, (m - 1) + np.arange(n)[:, None] - np.arange(m), axis=-1)


def circulant(c):
    """scipy.linalg.circulant: the matrix whose first column is c and each next column c
    rolled down by one, a[i, j] = c[(i - j) mod n]; stacked c gives stacked matrices.

        >>> fg.scipy.linalg.circulant(np.array([1.0, 2.0, 3.0]))
        array([[1., 3., 2.],
               [2., 1., 3.],
               [3., 2., 1.]])
    """
    c = fnp.atleast_1d(fnp.asarray(c))
    n = c.shape[-1]
    return fnp.take(c, (np.arange(n)[:, None] - np.arange(n)) % n, axis=-1)


def hankel(c, r=None):
    """scipy.linalg.hankel: the matrix with first column c and last row r (r[0] ignored;
    r None: zeros), h[i, j] = c[i + j] while i + j < len(c), r[i + j - len(c) + 1] after.
    Stacked c and r give stacked matrices (SciPy 1.17 flattens them instead, with a warning
    that 1.19 will stack).

        >>> fg.scipy.linalg.hankel(np.array([1.0, 2.0, 3.0]), np.array([3.0, 4.0]))
        array([[1., 2.],
               [2., 3.],
               [3., 4.]])
    """
    c = fnp.asarray(c)
    c, r = _batched_pair(c, fnp.zeros_like(c) if r is None else r)
    n, m = c.shape[-1], r.shape[-1]
    vals = fnp.concatenate([c.astype(_dtype(c, r)), r[..., 1:]], axis=-1)
    return fnp.take(vals, np.arange(n)[:, None] + np.arange(m), axis=-1)


def companion(a):
    """scipy.linalg.companion: the (N-1, N-1) companion matrix of the polynomial with
    coefficients a (highest power first, a[0] nonzero), whose eigenvalues are its roots:
    first row -a[1:] / a[0], ones below the diagonal. Stacked a gives stacked matrices.

        >>> fg.scipy.linalg.companion(np.array([1.0, -3.0, 2.0]))
        array([[ 3., -2.],
               [ 1.,  0.]])
    """
    a = _float(fnp.atleast_1d(fnp.asarray(a)))
    n = a.shape[-1]
    if n < 2:
        raise ValueError("companion: the length of a must be at least 2")
    first = -a[..., None, 1:] / a[..., None, :1]
    below = np.eye(n - 1, k=-1)[1:]
    return fnp.concatenate([first, fnp.broadcast_to(below, a.shape[:-1] + below.shape)], -2)


def hilbert(n):
    """scipy.linalg.hilbert: the n x n Hilbert matrix, h[i, j] = 1 / (i + j + 1) (a NumPy
    array: it has no inputs to differentiate).

        >>> fg.scipy.linalg.hilbert(2)
        array([[1.        , 0.5       ],
               [0.5       , 0.33333333]])
    """
    i = np.arange(n)
    return 1.0 / (i[:, None] + i + 1.0)


# ---- the exponential and functions of it --------------------------------------------------

_THETA_13 = 5.371920351148152         # Higham (2005), table 2.3: the 1-norm bound for degree 13
# the degree-13 Pade coefficients b_0..b_13 (Higham 2005, (2.12)) over b_0, so that V is
# I + O(A^2) and a zero matrix gives exactly I
_PADE_13 = tuple(b / 64764752532480000.0 for b in (
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
    129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
    40840800.0, 960960.0, 16380.0, 182.0, 1.0))


def _norm1(a):
    return fnp.max(fnp.sum(fnp.abs(a), axis=-2), axis=-1)


def expm(A, *, max_squarings=16):
    """scipy.linalg.expm, the matrix exponential of a square matrix (or a stack of them), by
    scaling and squaring with the degree-13 Pade approximant (Higham 2005). A matrix that
    would need more than max_squarings squarings (1-norm above about 5.4 * 2**max_squarings)
    gives NaN, as in JAX.

        >>> fg.scipy.linalg.expm(np.array([[0.0, 1.0], [0.0, 0.0]]))
        array([[1., 1.],
               [0., 1.]])
    """
    a = _square(A, "expm")
    eye = np.eye(a.shape[-1])
    s = stop_gradient(fnp.ceil(fnp.log2(fnp.maximum(_norm1(a) / _THETA_13, 1.0))))
    s = fnp.reshape(s, fnp.shape(s) + (1, 1))
    a = a * 2.0 ** -s
    b = _PADE_13
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
             + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    r = fnp.linalg.solve(v - u, v + u)
    r = fori_loop(0, max_squarings, lambda i, r: fnp.where(s > i, r @ r, r), r)
    return fnp.where(s > max_squarings, np.nan, r)


def expm_frechet(A, E, method=None, compute_expm=True, check_finite=True):
    """scipy.linalg.expm_frechet -> (expm(A), L) or, compute_expm=False, L: the Frechet
    derivative of expm at A in the direction E, L = d/dt expm(A + t E) at t = 0. It is the
    top-right block of expm([[A, E], [0, A]]) (E scaled to A's norm first), and expm(A) its
    top-left block; method is ignored. Stacks of matrices give stacks.

        >>> A, E = np.array([[1.0, 2.0], [0.0, 3.0]]), np.array([[0.0, 1.0], [0.0, 0.0]])
        >>> expA, L = fg.scipy.linalg.expm_frechet(A, E)
    """
    a, e = _square(A, "expm_frechet"), _square(E, "expm_frechet")
    if a.shape[-2:] != e.shape[-2:]:
        raise ValueError(f"expm_frechet: A {a.shape} and E {e.shape} must have the same shape")
    a, e = fnp.broadcast_arrays(a, e)
    n = a.shape[-1]
    ne = _norm1(e)
    scale = stop_gradient(fnp.where(ne > 0, fnp.maximum(_norm1(a), 1.0)
                                    / fnp.where(ne > 0, ne, 1.0), 1.0))[..., None, None]
    block = fnp.concatenate([fnp.concatenate([a, scale * e], -1),
                             fnp.concatenate([fnp.zeros_like(a), a], -1)], -2)
    big = expm(block)
    frechet = big[..., :n, n:] / scale
    return (big[..., :n, :n], frechet) if compute_expm else frechet


def coshm(A):
    """scipy.linalg.coshm, (expm(A) + expm(-A)) / 2.

        >>> c = fg.scipy.linalg.coshm(np.array([[0.0, 1.0], [1.0, 0.0]]))
    """
    a = _square(A, "coshm")
    return 0.5 * (expm(a) + expm(-a))


def sinhm(A):
    """scipy.linalg.sinhm, (expm(A) - expm(-A)) / 2.

        >>> s = fg.scipy.linalg.sinhm(np.array([[0.0, 1.0], [1.0, 0.0]]))
    """
    a = _square(A, "sinhm")
    return 0.5 * (expm(a) - expm(-a))


def tanhm(A):
    """scipy.linalg.tanhm, coshm(A)^-1 sinhm(A).

        >>> t = fg.scipy.linalg.tanhm(np.array([[0.0, 1.0], [1.0, 0.0]]))
    """
    a = _square(A, "tanhm")
    p, m = expm(a), expm(-a)
    return fnp.linalg.solve(p + m, p - m)


def _cos_sin(a):
    """(cosm(a), sinm(a)) from expm(i a) (and expm(-i a) for a complex matrix)."""
    plus = expm(1j * a)
    if not fnp.iscomplexobj(a):
        return fnp.real(plus), fnp.imag(plus)
    minus = expm(-1j * a)
    return 0.5 * (plus + minus), -0.5j * (plus - minus)


def cosm(A):
    """scipy.linalg.cosm, the matrix cosine (real for a real matrix: the real part of
    expm(iA)).

        >>> c = fg.scipy.linalg.cosm(np.array([[0.0, 1.0], [-1.0, 0.0]]))
    """
    return _cos_sin(_square(A, "cosm"))[0]


def sinm(A):
    """scipy.linalg.sinm, the matrix sine (real for a real matrix: the imaginary part of
    expm(iA)).

        >>> s = fg.scipy.linalg.sinm(np.array([[0.0, 1.0], [-1.0, 0.0]]))
    """
    return _cos_sin(_square(A, "sinm"))[1]


def tanm(A):
    """scipy.linalg.tanm, cosm(A)^-1 sinm(A).

        >>> t = fg.scipy.linalg.tanm(np.array([[0.1, 0.2], [0.0, 0.3]]))
    """
    c, s = _cos_sin(_square(A, "tanm"))
    return fnp.linalg.solve(c, s)


# ---- Sylvester equations ---------------------------------------------------------------------

_KRONECKER_MAX = 64      # unknowns up to which a Sylvester equation is one dense solve


def _sylvester_value(a, b, q):
    """a x + x b = q: as one dense system (I (x) a + b^T (x) I) vec x = vec q while it has
    at most _KRONECKER_MAX unknowns (backward stable, whatever the eigenvectors), else through
    the eigendecompositions of a and b, refined once."""
    n, m = q.shape[-2:]
    if n * m <= _KRONECKER_MAX:
        eye_n, eye_m = np.eye(n), np.eye(m)          # row-major vec: x[i, j] at i * m + j
        k = (a[..., :, None, :, None] * eye_m[:, None, :]
             + eye_n[:, None, :, None] * _mT(b)[..., None, :, None, :])
        k = fnp.reshape(k, k.shape[:-4] + (n * m, n * m))
        return fnp.reshape(fnp.linalg.solve(k, fnp.reshape(q, q.shape[:-2] + (n * m, 1))),
                           q.shape)
    wa, ua = fnp.linalg.eig(a)
    wb, ub = fnp.linalg.eig(b)
    denom = wa[..., :, None] + wb[..., None, :]
    real = not _is_complex(a, b, q)

    def solve(rhs):                  # x = U ((U^-1 rhs V) / (da_i + db_j)) V^-1
        y = fnp.linalg.solve(ua, rhs @ ub) / denom
        x = ua @ _mT(fnp.linalg.solve(_mT(ub), _mT(y)))
        return fnp.real(x) if real else x
    x = solve(q)
    return x + solve(q - (a @ x + x @ b))


def _sylvester_fwd(a, b, q):
    return _sylvester(a, b, q), (a, b, q)


def _sylvester_bwd(res, ct):
    # a dx + dx b = dq - da x - x db: lam = L^-T ct (L^T y = a^T y + y b^T) is q's cotangent,
    # -lam x^T a's and -x^T lam b's; x is recomputed (see the module docstring)
    a, b, q = res
    x = _sylvester(a, b, q)
    lam = _sylvester(_mT(a), _mT(b), ct)
    return -lam @ _mT(x), -_mT(x) @ lam, lam


_sylvester = custom_vjp(_sylvester_value).defvjp(_sylvester_fwd, _sylvester_bwd)


def solve_sylvester(a, b, q):
    """scipy.linalg.solve_sylvester: x with a @ x + x @ b = q, a (M, M), b (N, N), q (M, N)
    (or stacks of them): a dense solve of its Kronecker form up to 64 unknowns (M N), else
    through the eigendecompositions of a and b, refined once, accurate where their
    eigenvector matrices are well conditioned (nearly normal a and b; SciPy's Schur method is
    better for strongly non-normal ones). Its derivative is implicit (another Sylvester
    solve). Needs a and -b to share no eigenvalue.

        >>> fg.scipy.linalg.solve_sylvester(np.array([[2.0, 0.0], [0.0, 3.0]]),
        ...                                 np.array([[1.0]]), np.array([[3.0], [8.0]]))
        array([[1.],
               [2.]])
    """
    a, b, q = (_square(a, "solve_sylvester"), _square(b, "solve_sylvester"), _float(q))
    if q.ndim < 2 or q.shape[-2:] != (a.shape[-1], b.shape[-1]):
        raise ValueError(f"solve_sylvester: q of shape {q.shape} does not match a {a.shape} "
                         f"and b {b.shape}")
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], q.shape[:-2])
    a, b, q = (fnp.broadcast_to(x, lead + x.shape[-2:]) for x in (a, b, q))
    return _sylvester(a, b, q)


def solve_continuous_lyapunov(a, q):
    """scipy.linalg.solve_continuous_lyapunov: x with a @ x + x @ a^H = q, as
    solve_sylvester(a, a^H, q).

        >>> A = np.array([[-2.0, 1.0], [0.0, -1.0]])
        >>> x = fg.scipy.linalg.solve_continuous_lyapunov(A, -np.eye(2))
    """
    a = _square(a, "solve_continuous_lyapunov")
    return solve_sylvester(a, _mH(a), q)


# ---- square root, polar decomposition ------------------------------------------------------

_DB_STEPS = 64
# A complex matrix is turned by this angle before its root is taken (and its root back by half
# of it): the Newton/Denman-Beavers iteration never converges for an eigenvalue on the negative
# real axis (|(z - i r) / (z + i r)| stays 1), and turned it converges in about log2(1 / angle)
# steps to the root on arg pi/2, SciPy's. Eigenvalues within the angle below the axis get that
# root too, the negative of their principal root.
_TURN = 2.0 ** -20


def _sqrtm_value(a):
    """The scaled product Denman-Beavers iteration, M -> I, Y -> a^(1/2), then one Newton step
    (the residual, which the iteration leaves at about cond(a)^(1/2) eps, down to eps); NaN
    where it did not converge (a real matrix with a negative eigenvalue)."""
    n = a.shape[-1]
    eye = np.eye(n)
    tol = 4.0 * n * np.finfo(np.float64).eps

    def more(carry):
        k, _, _, err = carry
        return (k < _DB_STEPS) & fnp.any(err > tol)

    def step(carry):
        k, m, y, err = carry
        m_inv = fnp.linalg.inv(m)
        far = (err > 1e-2)[..., None, None]          # determinant scaling only while far off
        mu2 = fnp.where(far, fnp.exp(-fnp.linalg.slogdet(m)[1] / n)[..., None, None], 1.0)
        y = 0.5 * fnp.sqrt(mu2) * (y @ (eye + m_inv / mu2))
        m = 0.5 * (eye + 0.5 * (mu2 * m + m_inv / mu2))
        return k + 1, m, y, fnp.linalg.norm(m - eye, axis=(-2, -1))
    start = fnp.full(a.shape[:-2], np.inf)
    _, _, y, err = while_loop(more, step, (0, a, a, start))
    done = (err <= 1e-8)[..., None, None]
    y = fnp.where(done, y, eye)            # (eig refuses NaN)
    residual = a - y @ y                     # one Newton step: Y dY + dY Y = A - Y^2, kept
    y_new = y + _sylvester_value(y, y, residual)       # where it helps (not where Y's
    norm = fnp.linalg.norm                             # eigenvectors are too ill-conditioned)
    better = norm(a - y_new @ y_new, axis=(-2, -1)) < norm(residual, axis=(-2, -1))
    return fnp.where(done, fnp.where(better[..., None, None], y_new, y), np.nan)


def _sqrtm_fwd(a):
    return _sqrtm(a), a


def _sqrtm_bwd(a, ct):
    x = _sqrtm(a)                     # dA = X dX + dX X: dX = L^-1 dA, a's cotangent L^-T ct
    return (_sylvester(_mT(x), _mT(x), ct),)


_sqrtm = custom_vjp(_sqrtm_value).defvjp(_sqrtm_fwd, _sqrtm_bwd)


def sqrtm(A, disp=True, blocksize=64):
    """scipy.linalg.sqrtm, the principal square root X (X @ X = A, eigenvalues in the right
    half plane) by the scaled Denman-Beavers iteration and one Newton step (a relative
    residual ||X X - A||_F / ||A||_F of a few eps unless A's eigenvectors are very
    ill-conditioned); disp=False -> (X, that residual). A real A gives the real root (NaN: a
    negative eigenvalue; pass a complex A for the complex root, i sqrt(-w) for a negative w,
    as SciPy's); a singular A is refused (LinAlgError). The derivative is implicit: it solves
    the Sylvester equation X dX + dX X = dA. blocksize is ignored.

        >>> fg.scipy.linalg.sqrtm(np.array([[4.0, 1.0], [0.0, 9.0]]))
        array([[2. , 0.2],
               [0. , 3. ]])
    """
    a = _square(A, "sqrtm")
    if fnp.iscomplexobj(a):          # negative eigenvalues: turned off the branch cut
        x = _sqrtm(a * np.exp(-1j * _TURN)) * np.exp(0.5j * _TURN)
    else:
        x = _sqrtm(a)
    if disp:
        return x
    norm = fnp.linalg.norm
    return x, norm(x @ x - a, axis=(-2, -1)) / norm(a, axis=(-2, -1))


def polar(a, side="right"):
    """scipy.linalg.polar -> (u, p): a = u @ p (side 'right') or p @ u ('left'), u with
    orthonormal columns (rows, for a wide a), p symmetric positive semidefinite, from the SVD
    (its derivative needs distinct singular values).

        >>> u, p = fg.scipy.linalg.polar(np.array([[2.0, 0.0], [0.0, -3.0]]))
        >>> p
        array([[2., 0.],
               [0., 3.]])
    """
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
    w, s, vh = fnp.linalg.svd(_float(a), full_matrices=False)
    if side == "right":
        return w @ vh, _mH(vh) @ (s[..., :, None] * vh)
    return w @ vh, (w * s[..., None, :]) @ _mH(w)


def orthogonal_procrustes(A, B, check_finite=True):
    """scipy.linalg.orthogonal_procrustes -> (R, scale): the orthogonal R closest to mapping
    A onto B (minimizing ||A @ R - B||_F), from the SVD U S Vh of A^H B: R = U Vh, scale the
    sum of S.

        >>> R, scale = fg.scipy.linalg.orthogonal_procrustes(np.eye(2), np.array([[0.0, 1.0],
        ...                                                               [-1.0, 0.0]]))
    """
    a, b = _float(A), _float(B)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"orthogonal_procrustes: A {a.shape} and B {b.shape} must be "
                         "matrices of the same shape")
    u, s, vh = fnp.linalg.svd(_mH(a) @ b, full_matrices=False)
    return u @ vh, fnp.sum(s)


# ---- eigenvalue problems, Schur ---------------------------------------------------------------

def eig(a, b=None, left=False, right=True, overwrite_a=False, overwrite_b=False,
        check_finite=True, homogeneous_eigvals=False):
    """scipy.linalg.eig -> w, (w, vr), (w, vl) or (w, vl, vr) as left and right ask: the
    eigenvalues (complex) and unit right eigenvectors a vr = w vr, left ones vl^H a = w vl^H,
    as columns; with b, of the generalized problem a v = w b v (through b^-1 a, b
    nonsingular). homogeneous_eigvals: w as the rows (w, 1). Derivatives: see
    fnp.linalg.eig (distinct eigenvalues; eigenvectors up to phase).

        >>> w = fg.scipy.linalg.eig(np.array([[2.0, 1.0], [0.0, 3.0]]), right=False)
    """
    a = _square(a, "eig")
    if b is not None:
        a = fnp.linalg.solve(_square(b, "eig"), a)
    w, vr = fnp.linalg.eig(a)
    w = w.astype(np.result_type(w.dtype, np.complex64))
    if homogeneous_eigvals:
        w = fnp.stack([w, fnp.ones_like(w)], axis=-2)
    out = [w]
    if left:
        vl = _mH(fnp.linalg.inv(vr))
        out.append(vl / fnp.linalg.norm(vl, axis=-2, keepdims=True))
    if right:
        out.append(vr)
    return out[0] if len(out) == 1 else tuple(out)


def eigvals(a, b=None, overwrite_a=False, check_finite=True, homogeneous_eigvals=False):
    """scipy.linalg.eigvals: eig's eigenvalues (complex).

        >>> fg.scipy.linalg.eigvals(np.array([[0.0, -1.0], [1.0, 0.0]]))
        array([0.+1.j, 0.-1.j])
    """
    return eig(a, b, right=False, homogeneous_eigvals=homogeneous_eigvals)


def eigh_tridiagonal(d, e, eigvals_only=False, select="a", select_range=None,
                     check_finite=True, tol=0.0, lapack_driver="auto"):
    """scipy.linalg.eigh_tridiagonal -> (w, v), or w for eigvals_only: the eigenvalues
    (ascending) and eigenvectors of the symmetric tridiagonal matrix with diagonal d and
    off-diagonal e (stacks of them too), through fnp.linalg.eigh of that matrix.
    select='i' with select_range=(lo, hi) keeps eigenvalues lo..hi; select='v' (a count that
    depends on the values) is not supported.

        >>> fg.scipy.linalg.eigh_tridiagonal(np.array([2.0, 2.0]), np.array([1.0]),
        ...                                  eigvals_only=True)
        array([1., 3.])
    """
    d, e = _float(d), _float(e)
    n = d.shape[-1]
    if e.shape[-1] != n - 1:
        raise ValueError(f"eigh_tridiagonal: e must have length {n - 1}, got {e.shape[-1]}")
    if select not in ("a", "all", 0, "i", "index", 2):
        raise NotImplementedError(f"eigh_tridiagonal: select={select!r} is not supported on "
                                  "traced values; use 'a' or 'i'")
    d, e = _batched_pair(d, e)
    below = e[..., :, None] * np.eye(n - 1)            # e on the subdiagonal
    lead = e.shape[:-1]
    below = fnp.concatenate([np.zeros(lead + (1, n - 1)), below], -2)
    below = fnp.concatenate([below, np.zeros(lead + (n, 1))], -1)
    w, v = fnp.linalg.eigh(d[..., :, None] * np.eye(n) + below)
    if select in ("i", "index", 2):
        lo, hi = (int(i) for i in select_range)
        w, v = w[..., lo:hi + 1], v[..., lo:hi + 1]
    return w if eigvals_only else (w, v)


def _schur_numpy(a, output):
    import scipy.linalg

    out = np.empty(a.shape[:-2] + (2,) + a.shape[-2:], np.result_type(
        a.dtype, np.complex128 if output == "complex" else a.dtype))
    for i in np.ndindex(*a.shape[:-2]):
        out[i] = scipy.linalg.schur(a[i], output=output)
    return out


def _schur_fwd(a, output):
    return _schur(a, output), None


def _schur_bwd(output, res, ct):
    raise UnsupportedFunctionError(
        "fg.scipy.linalg.schur has no derivative: it is SciPy's, called back, and its Schur "
        "vectors are not unique. Differentiate through fg.scipy.linalg.eig or eigh "
        "(eigenvalues and eigenvectors), or use sqrtm, expm or solve_sylvester, whose "
        "derivatives do not go through a Schur form; or apply fg.stop_gradient to schur's input.")


def _schur_call(a, output):
    dtype = np.result_type(a.dtype, np.complex128 if output == "complex" else a.dtype)
    both = pure_callback(lambda x: _schur_numpy(x, output),
                         np.empty(a.shape[:-2] + (2,) + a.shape[-2:], dtype), stop_gradient(a))
    return both[..., 0, :, :], both[..., 1, :, :]


_schur = custom_vjp(_schur_call, nondiff_argnums=(1,)).defvjp(_schur_fwd, _schur_bwd)


def schur(a, output="real", lwork=None, overwrite_a=False, sort=None, check_finite=True):
    """scipy.linalg.schur -> (T, Z) with a = Z T Z^H, Z unitary, T upper triangular (output
    'complex') or quasi-triangular with 2 x 2 blocks for complex pairs ('real', of a real
    matrix): SciPy's, called back (fg.pure_callback), also for stacks of matrices. It has no
    derivative: differentiating it raises, naming eig, eigh, sqrtm and solve_sylvester.
    sort is not supported.

        >>> T, Z = fg.scipy.linalg.schur(np.array([[1.0, 2.0], [0.5, 3.0]]))
    """
    output = {"r": "real", "c": "complex"}.get(output, output)
    if output not in ("real", "complex"):
        raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
    if sort is not None:
        raise NotImplementedError("schur: sort is not supported (the reordering and sdim "
                                  "depend on the values); sort the eigenvalues of eig instead")
    return _schur(_square(a, "schur"), output)
