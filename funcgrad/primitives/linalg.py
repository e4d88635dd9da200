"""`funcgrad.numpy.linalg`: NumPy's linear algebra, traceable and differentiable.

Primitives (each evaluated with the NumPy function of the same name, batched over leading
dimensions): solve, inv, det, slogdet, cholesky, eigh, eigvalsh, svd, svdvals, pinv, eig,
and lu (scipy.linalg.lu_factor's, for fg.scipy.linalg).
norm, matrix_power, multi_dot and NumPy 2's aliases are compositions, in
funcgrad/numpy/_linalg_compositions.py. Every vjp rule is written with funcgrad operations
(matmul, solve, inv, where, ...), so derived programs can be differentiated again.

Gradient conventions:
* Symmetric inputs. eigh, eigvalsh, cholesky, and svd/pinv with hermitian=True read only one
  triangle of `a` (the lower one; the upper one for UPLO='U' / upper=True), as NumPy does, and
  the gradient is that of the function NumPy computes: 0 on the unread triangle, S_ij + S_ji on
  an off-diagonal entry of the read one (it stands for both (i, j) and (j, i)), S_ii on the
  diagonal, where S is the gradient along symmetric perturbations. So <grad, V> is the exact
  directional derivative for every V, symmetric or not. For a symmetric gradient (JAX's
  convention) symmetrize the input yourself: eigh((A + A.T) / 2).
* eigh/svd gradients use F_ij = 1/(w_j - w_i) (1/(s_j**2 - s_i**2) for svd): they are
  undefined (inf/nan) for repeated eigenvalues/singular values, except for the eigenvalues or
  singular values alone (eigvalsh, svd(compute_uv=False)). The svd gradient for m != n also
  needs nonzero singular values. Eigenvectors and singular vectors are defined only up to sign,
  so only functions that do not depend on the signs have meaningful gradients.
* svd(full_matrices=True) with m != n: the extra columns of U (rows of Vh) are an arbitrary
  basis of the orthogonal complement; their cotangent is taken along the gauge that keeps the
  complement's basis fixed inside it (dU_perp = -U dU^T U_perp). This is exact for functions of
  the complement that do not depend on the basis chosen (e.g. of U_perp @ U_perp.T).
* slogdet's sign has no gradient; det/slogdet/inv/solve gradients need a nonsingular matrix.
* norm: the vector 2-norm, the Frobenius norm and general p-norms (p >= 1) have gradient 0 at
  x = 0 (not NaN); elsewhere derivatives of all orders are exact.
* pinv's gradient (Golub & Pereyra) holds where the rank is locally constant (full rank).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..ir import Aval, Traced, aval_of
from .base import (all_batched, broadcast_shapes, broadcast_to, convert, define, export,
                   operands_batch, real_dtype, reduce_sum, reshape, transpose)
from .contract import matmul
from .elementwise import conjugate, where
from .indexing import getitem
from .shape import expand_dims

STACKED = operands_batch()      # batch rule: NumPy's linalg already maps over leading axes

LinAlgError = np.linalg.LinAlgError
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


# ---- helpers ----------------------------------------------------------------------------------

def _public(fn):
    """Export fn as funcgrad.numpy.linalg.<name>; unless an argument holds a traced value,
    NumPy's own function runs."""
    np_fn = getattr(np.linalg, fn.__name__, fn)     # (NumPy 1.x lacks the NumPy 2 names)
    return export(fn.__name__, linalg=True, numpy=np_fn)(fn)


def _as_float(*xs):
    """Convert to the common floating dtype NumPy's linalg computes in (ints -> float64)."""
    dt = np.result_type(*[d if d.kind in "fc" else np.float64
                          for d in (aval_of(x).dtype for x in xs)])
    out = [convert(x if isinstance(x, Traced) else np.asarray(x), dt) for x in xs]
    return out[0] if len(out) == 1 else out


def _square(a, square=True):
    """Check that a is a (stack of) square matrices (any matrices if not square); as float."""
    shape = aval_of(a).shape
    if len(shape) < 2:
        raise LinAlgError(f"{len(shape)}-dimensional array given. Array must be at least "
                          "two-dimensional")
    if square and shape[-1] != shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    return _as_float(a)


def _mT(x):
    nd = aval_of(x).ndim
    return transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _cols(x, v):       # x * v[..., None, :]: scale column j by v_j
    return x * expand_dims(v, -2)


def _rows(x, v):       # x * v[..., :, None]: scale row i by v_i
    return x * expand_dims(v, -1)


def _diag_embed(v):
    return _cols(np.eye(aval_of(v).shape[-1], dtype=aval_of(v).dtype), v)


def _inv_diff(w):
    """F[..., i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it."""
    eye = np.eye(aval_of(w).shape[-1], dtype=bool)
    return where(eye, 0.0, 1.0 / where(eye, 1.0, expand_dims(w, -2) - expand_dims(w, -1)))


def _tril_half(n, dtype):
    """Lower-triangular ones with 1/2 on the diagonal."""
    return (np.tril(np.ones((n, n))) - 0.5 * np.eye(n)).astype(dtype)


def _conj(x):
    return conjugate(x) if aval_of(x).dtype.kind == "c" else x


def _fold(s, uplo):
    """Gradient S along symmetric (Hermitian) perturbations -> gradient w.r.t. the triangle
    NumPy reads: S_ij + conj(S_ji) below (above) the diagonal, Re S_ii on it (LAPACK ignores
    the imaginary part of a Hermitian matrix's diagonal)."""
    if uplo is None:
        return s
    w = _tril_half(aval_of(s).shape[-1], real_dtype(aval_of(s).dtype))
    return (s + _conj(_mT(s))) * (w if uplo == "L" else w.T)


def _add(x, y):
    return y if x is None else x + y


# ---- solve, inv, det, slogdet -----------------------------------------------------------------

def _solve_abstract(a, b):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or b.ndim != a.ndim \
            or b.shape[:-2] != a.shape[:-2] or b.shape[-2] != a.shape[-1]:
        raise ValueError(f"solve: incompatible operands {a} and {b}")
    return Aval(b.shape, np.result_type(a.dtype, b.dtype))


def _solve_vjp(ct, a, b, *, out):
    gb = solve_p.bind(_mT(a), ct)
    return -matmul(gb, _mT(out)), gb


def _solve_batch(ins, fl, size):
    a, b = all_batched(ins, fl, size)
    if aval_of(b).ndim == 2:                   # a vector per example: solve as a 1-column matrix
        x = solve_p.bind(a, reshape(b, aval_of(b).shape + (1,)))
        return reshape(x, aval_of(x).shape[:-1])
    return solve_p.bind(a, b)


solve_p = define("solve", impl=lambda a, b: np.asarray(np.linalg.solve(a, b)),
                 abstract=_solve_abstract, vjp=_solve_vjp, batch=_solve_batch)


@_public
def solve(a, b):
    """np.linalg.solve with NumPy 2 semantics: b is a vector only if it is 1-D, else a stack
    of (M, K) matrices; batch dimensions broadcast.

        >>> x = fnp.linalg.solve(A, b)     # A @ x == b
    """
    a, b = _as_float(a, b)
    _square(a)
    sa, sb = aval_of(a).shape, aval_of(b).shape
    vec = len(sb) == 1
    if vec:
        b, sb = reshape(b, sb + (1,)), sb + (1,)
    if len(sb) < 2 or sb[-2] != sa[-1]:
        raise ValueError(f"solve: b of shape {aval_of(b).shape} does not match a of shape {sa}")
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    x = solve_p.bind(broadcast_to(a, batch + sa[-2:], force=True),
                     broadcast_to(b, batch + sb[-2:], force=True))
    return reshape(x, batch + sa[-1:]) if vec else x


inv_p = define("inv", batch=STACKED, impl=lambda a: np.asarray(np.linalg.inv(a)), abstract=lambda a: a,
               vjp=lambda ct, a, *, out: (-matmul(matmul(_mT(out), ct), _mT(out)),))


@_public
def inv(a):
    """np.linalg.inv (batched); d inv(A) = -inv(A) dA inv(A).

        >>> fnp.linalg.inv(A) @ A     # identity
    """
    return inv_p.bind(_square(a))


def _times_inv_t(c, a):
    """c[..., None, None] * inv(a).T, the gradient of det (c = det) and of logabsdet (c = 1)."""
    return expand_dims(expand_dims(c, -1), -1) * _mT(inv_p.bind(a))


def _cofactor(a):
    """The cofactor matrix of a (stacked): det(A) inv(A).T where A is invertible, and its
    continuous extension where it is not. From the SVD A = U S V^T: cof(A) = det(U) det(V)
    U adj(S) V^T, with adj(S)_ii the product of the other singular values; exact at
    singular matrices (rank n-1 gives a rank-1 cofactor matrix, lower ranks zero)."""
    a = np.asarray(a)
    if a.shape[-1] == 0:
        return np.zeros_like(a)
    u, s, vh = np.linalg.svd(a)
    ones = np.ones_like(s[..., :1])
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    sign = np.linalg.det(u) * np.linalg.det(vh)      # complex A = U S Vh: conj(U) adj(S) conj(Vh)
    return sign[..., None, None] * ((np.conj(u) * (before * after)[..., None, :]) @ np.conj(vh))


def _cofactor_vjp(ct, a, *, out):
    # d cof = (tr(cof^T dA) cof - cof dA^T cof) / det(A): needs A invertible (second order)
    if aval_of(a).shape[-1] <= 1:
        return (None,)
    d = expand_dims(expand_dims(det_p.bind(a), -1), -1)
    dot = expand_dims(expand_dims((ct * out).sum(axis=(-2, -1)), -1), -1)
    return ((dot * out - matmul(matmul(out, _mT(ct)), out)) / d,)


cofactor_p = define("cofactor", batch=STACKED, impl=_cofactor, abstract=lambda a: a,
                    vjp=_cofactor_vjp)

det_p = define("det", batch=STACKED, impl=lambda a: np.asarray(np.linalg.det(a)),
               abstract=lambda a: Aval(a.shape[:-2], a.dtype),
               vjp=lambda ct, a, *, out: (expand_dims(expand_dims(ct, -1), -1)
                                          * cofactor_p.bind(a),))


@_public
def det(a):
    """np.linalg.det; d det(A)/dA is the cofactor matrix of A (det(A) inv(A).T where A is
    invertible; defined at singular matrices too, second derivatives need A invertible).

        >>> fnp.linalg.det(A)
    """
    return det_p.bind(_square(a))


slogdet_p = define(     # a real sign is piecewise constant: its cotangent cts[0] is dropped
    "slogdet", batch=STACKED, impl=lambda a: tuple(np.asarray(r) for r in np.linalg.slogdet(a)),
    abstract=lambda a: (Aval(a.shape[:-2], a.dtype), Aval(a.shape[:-2], real_dtype(a.dtype))),
    multiple_results=True,
    vjp=lambda cts, a, *, out: _slogdet_vjp(cts, a, out[0]))


def _slogdet_vjp(cts, a, sign):
    # with t = tr(inv(A) dA): d logabsdet = Re t, and for complex A d sign = i sign Im t, so the
    # cotangent is c inv(A)^T with c = ct_logabsdet + i Im(ct_sign sign) (real A: sign is +-1)
    c = cts[1]
    if cts[0] is not None and aval_of(a).dtype.kind == "c":
        phase = 1j * convert(-1j * (cts[0] * sign), real_dtype(aval_of(a).dtype))
        c = phase if c is None else c + phase
    return (None if c is None else _times_inv_t(c, a),)


@_public
def slogdet(a):
    """np.linalg.slogdet -> (sign, logabsdet); sign has no gradient, d logabsdet/dA = inv(A).T.

        >>> sign, logdet = fnp.linalg.slogdet(A)
    """
    return SlogdetResult(*slogdet_p.bind(_square(a)))


# ---- cholesky, eigh, eigvalsh -----------------------------------------------------------------

def _cholesky_vjp(ct, a, *, out, upper):
    # Murray (2016): A = L L^T  =>  S = L^-T Phi(L^T Lbar) L^-1, Phi = tril with half diagonal
    # complex A = L L^H: S = L^-T Phi(L^T Lbar) conj(L)^-1; upper: L = U^H, Lbar = conj(Ubar^T)
    lo, lbar = (_conj(_mT(out)), _conj(_mT(ct))) if upper else (out, ct)
    phi = matmul(_mT(lo), lbar) * _tril_half(aval_of(a).shape[-1], real_dtype(aval_of(a).dtype))
    x = solve_p.bind(_mT(lo), phi)                    # X = L^-T Phi
    s = _mT(solve_p.bind(_conj(_mT(lo)), _mT(x)))     # X conj(L)^-1 = (conj(L)^-T X^T)^T
    return (_fold(s, "U" if upper else "L"),)


cholesky_p = define("cholesky", batch=STACKED,
                    impl=lambda a, *, upper: np.asarray(
                        np.linalg.cholesky(a, upper=True) if upper else np.linalg.cholesky(a)),
                    abstract=lambda a, *, upper: a, vjp=_cholesky_vjp)


@_public
def cholesky(a, /, *, upper=False):
    """np.linalg.cholesky: lower L with A = L @ L.T (upper=True: U with A = U.T @ U). Reads one
    triangle of A, as NumPy does (gradient convention: see the module docstring).

        >>> L = fnp.linalg.cholesky(A)
    """
    return cholesky_p.bind(_square(a), upper=bool(upper))


def _uplo(UPLO):
    if str(UPLO).upper() not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return str(UPLO).upper()


def _eigh_vjp(cts, a, *, out, UPLO):
    (ct_w, ct_v), (w, v) = cts, out
    inner = None if ct_v is None else _inv_diff(w) * matmul(_mT(v), ct_v)
    if ct_w is not None:
        inner = _add(inner, _diag_embed(ct_w))
    return (_fold(matmul(matmul(_conj(v), inner), _mT(v)), UPLO),)      # complex: conj(V) . V^T


eigh_p = define("eigh", batch=STACKED, impl=lambda a, *, UPLO: tuple(np.linalg.eigh(a, UPLO=UPLO)),
                abstract=lambda a, *, UPLO: (Aval(a.shape[:-1], real_dtype(a.dtype)), a),
                vjp=_eigh_vjp, multiple_results=True)


@_public
def eigh(a, UPLO="L"):
    """np.linalg.eigh -> (eigenvalues ascending, eigenvectors as columns). Gradients are
    undefined for repeated eigenvalues and meaningful only for sign-invariant functions.

        >>> w, V = fnp.linalg.eigh(A)
    """
    return EighResult(*eigh_p.bind(_square(a), UPLO=_uplo(UPLO)))


def _eigvalsh_vjp(ct, a, *, out, UPLO):
    v = eigh_p.bind(a, UPLO=UPLO)[1]      # d w_i = v_i^T dA v_i
    return (_fold(matmul(_cols(_conj(v), ct), _mT(v)), UPLO),)


eigvalsh_p = define("eigvalsh", batch=STACKED, impl=lambda a, *, UPLO: np.linalg.eigvalsh(a, UPLO=UPLO),
                    abstract=lambda a, *, UPLO: Aval(a.shape[:-1], real_dtype(a.dtype)),
                    vjp=_eigvalsh_vjp)


@_public
def eigvalsh(a, UPLO="L"):
    """np.linalg.eigvalsh (ascending); the gradient of w_i is v_i v_i^T, folded as for eigh.

        >>> fnp.linalg.eigvalsh(A)
    """
    return eigvalsh_p.bind(_square(a), UPLO=_uplo(UPLO))


# ---- svd, svdvals, pinv -----------------------------------------------------------------------

def _split_basis(q, ct, k):
    """Full U (or V) -> its first k columns, with the cotangent of the other columns (a basis of
    the complement, fixed up to rotations inside it) moved onto them: dQ_perp = -Q dQ^T Q_perp."""
    qk, qp = getitem(q, (Ellipsis, slice(None, k))), getitem(q, (Ellipsis, slice(k, None)))
    if ct is not None:
        ctk, ctp = getitem(ct, (Ellipsis, slice(None, k))), getitem(ct, (Ellipsis, slice(k, None)))
        ct = ctk - _conj(matmul(qp, matmul(_mT(ctp), qk)))     # complex: dQ_perp = -Q dQ^H Q_perp
    return qk, ct


def _svd_vjp(cts, a, *, out, full_matrices, hermitian):
    # A = U S V^H; the real formulas with conjugates where a transpose meets the conjugated
    # side (for real A every _conj is the identity). Complex singular vectors carry a phase
    # each (u_i, v_i -> e^it u_i, e^it v_i): the gauge is fixed by V^H dV having a zero
    # diagonal, which only phase-invariant functions of U and Vh do not notice.
    (ct_u, ct_s, ct_vh), (u, s, vh) = cts, out
    v, ct_v = _conj(_mT(vh)), None if ct_vh is None else _conj(_mT(ct_vh))
    m, n = aval_of(a).shape[-2:]
    k = min(m, n)
    if full_matrices and m > k:
        u, ct_u = _split_basis(u, ct_u, k)
    if full_matrices and n > k:
        v, ct_v = _split_basis(v, ct_v, k)
    # Townsend (2016): Abar = U [J S + diag(sbar) + S K] V^T + the terms for m != n
    inner = None if ct_s is None else _diag_embed(ct_s)
    if ct_u is not None:
        utg = matmul(_mT(u), ct_u)
        inner = _add(inner, _cols(_inv_diff(s * s) * (utg - _conj(_mT(utg))), s))
        if aval_of(u).dtype.kind == "c":      # the phase of u_i: i Im(u_i^T ubar_i) / s_i
            eye = np.eye(k, dtype=bool)
            diag = reduce_sum(where(eye, utg, 0.0), (aval_of(utg).ndim - 1,))
            inner = inner + _diag_embed(1j * convert(-1j * diag, aval_of(s).dtype) / s)
    if ct_v is not None:
        vtg = matmul(_mT(v), ct_v)
        inner = _add(inner, _rows(_inv_diff(s * s) * (vtg - _conj(_mT(vtg))), s))
    g = matmul(matmul(_conj(u), inner), _mT(v))
    if ct_u is not None and m > k:       # (I - conj(U) U^T) Ubar S^-1 V^T
        x = _cols(ct_u, 1.0 / s)
        g = g + matmul(x - matmul(_conj(u), matmul(_mT(u), x)), _mT(v))
    if ct_v is not None and n > k:       # conj(U) ((I - V V^H) conj(Vbar S^-1))^T
        y = _conj(_cols(ct_v, 1.0 / s))
        g = g + matmul(_conj(u), _mT(y - matmul(v, matmul(_conj(_mT(v)), y))))
    return (_fold(g, "L" if hermitian else None),)


def _svd_abstract(a, *, full_matrices, hermitian):
    (m, n), b = a.shape[-2:], a.shape[:-2]
    k = min(m, n)
    return (Aval(b + (m, m if full_matrices else k), a.dtype), Aval(b + (k,), real_dtype(a.dtype)),
            Aval(b + (n if full_matrices else k, n), a.dtype))


svd_p = define("svd", batch=STACKED, impl=lambda a, *, full_matrices, hermitian: tuple(
    np.linalg.svd(a, full_matrices=full_matrices, hermitian=hermitian)),
    abstract=_svd_abstract, vjp=_svd_vjp, multiple_results=True)


def _svdvals_vjp(ct, a, *, out, hermitian):
    u, _, vh = svd_p.bind(a, full_matrices=False, hermitian=hermitian)   # d s_i = u_i^T dA v_i
    # d s_i = Re(u_i^H dA v_i): conj(U) diag(ct) V^T, V^T = conj(Vh)
    return (_fold(_conj(matmul(_cols(u, ct), vh)), "L" if hermitian else None),)


svdvals_p = define("svdvals", batch=STACKED, impl=lambda a, *, hermitian: np.asarray(
    np.linalg.svd(a, compute_uv=False, hermitian=hermitian)),
    abstract=lambda a, *, hermitian: Aval(a.shape[:-2] + (min(a.shape[-2:]),), real_dtype(a.dtype)),
    vjp=_svdvals_vjp)


@_public
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """np.linalg.svd -> (U, S, Vh), or S for compute_uv=False. Gradients: see the module
    docstring (distinct singular values; sign-invariant functions of U and Vh).

        >>> U, s, Vh = fnp.linalg.svd(A, full_matrices=False)
    """
    a = _square(a, square=bool(hermitian))
    if not compute_uv:
        return svdvals_p.bind(a, hermitian=bool(hermitian))
    return SVDResult(*svd_p.bind(a, full_matrices=bool(full_matrices), hermitian=bool(hermitian)))


@_public
def svdvals(x, /):
    """np.linalg.svdvals: the singular values, descending.

        >>> fnp.linalg.svdvals(A)
    """
    return svdvals_p.bind(_square(x, square=False), hermitian=False)


def _pinv_vjp(ct, a, *, out, kw, hermitian):
    # Golub & Pereyra: dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P; the two
    # terms in dA^H transpose to conjugates
    p, pt, ctt = out, _mT(out), _mT(ct)
    ph = _conj(pt)
    g = _conj(matmul(ctt - matmul(matmul(a, p), ctt), matmul(p, ph))) - matmul(matmul(pt, ct), pt)
    g = g + _conj(matmul(matmul(ph, p), ctt - matmul(ctt, matmul(p, a))))
    return (_fold(g, "L" if hermitian else None),)


pinv_p = define("pinv", batch=STACKED, impl=lambda a, *, kw, hermitian: np.asarray(
    np.linalg.pinv(a, hermitian=hermitian, **dict(kw))),
    abstract=lambda a, *, kw, hermitian: Aval(a.shape[:-2] + a.shape[:-3:-1], a.dtype),
    vjp=_pinv_vjp)
_NOVALUE = object()


@_public
def pinv(a, rcond=None, hermitian=False, *, rtol=_NOVALUE):
    """np.linalg.pinv (SVD-based, NumPy's cutoffs); the gradient assumes locally constant rank.
    rcond and rtol must be numbers or None when a is traced.

        >>> fnp.linalg.pinv(A) @ b       # least-squares solution
    """
    kw = {"rcond": rcond} if rtol is _NOVALUE else {"rcond": rcond, "rtol": rtol}
    if any(v is not None and np.ndim(v) != 0 for v in kw.values()):
        raise NotImplementedError("pinv: array-valued rcond/rtol are not supported on traced "
                                  "values; pass a number")
    kw = tuple((k, None if v is None else float(v)) for k, v in kw.items())
    return pinv_p.bind(_square(a, square=False), kw=kw, hermitian=bool(hermitian))


# ---- eig, eigvals (general matrices: complex results) ------------------------------------------

def _eig_impl(a):
    w, v = np.linalg.eig(a)
    dt = np.result_type(a.dtype, np.complex64)
    return np.asarray(w, dt), np.asarray(v, dt)


def _eig_vjp(cts, a, *, out):
    # dA = V^-T (diag(ct_w) + F * (V^T ct_v)) V^T, F_ij = 1 / (w_j - w_i) (Magnus 1985); the
    # eigenvectors are unit vectors (NumPy's normalization): ct_v loses the component whose
    # transpose is the normalization's, v Re(v^H dv). Their phase is LAPACK's choice, so only
    # phase-invariant functions of them have meaningful derivatives.
    (ct_w, ct_v), (w, v) = cts, out
    inner = None if ct_w is None else _diag_embed(ct_w)
    if ct_v is not None:
        along = convert(reduce_sum(ct_v * v, (aval_of(v).ndim - 2,)), real_dtype(aval_of(v).dtype))
        ct_v = ct_v - conjugate(v) * expand_dims(along, -2)
        inner = _add(inner, _inv_diff(w) * matmul(_mT(v), ct_v))
    g = matmul(solve_p.bind(_mT(v), inner), _mT(v))
    return (convert(g, aval_of(a).dtype),)          # a real matrix: the real part


eig_p = define("eig", batch=STACKED, impl=_eig_impl, multiple_results=True, vjp=_eig_vjp,
               abstract=lambda a: (Aval(a.shape[:-1], np.result_type(a.dtype, np.complex64)),
                                   Aval(a.shape, np.result_type(a.dtype, np.complex64))))


@_public
def eig(a):
    """np.linalg.eig -> (eigenvalues, unit eigenvectors as columns), always complex for traced
    values (NumPy returns real arrays when every eigenvalue happens to be real; a traced
    result's dtype cannot depend on values). Differentiable where the eigenvalues are
    distinct; eigenvector derivatives are meaningful for phase-invariant functions only.

        >>> w, V = fnp.linalg.eig(A)
    """
    return EigResult(*eig_p.bind(_square(a)))


@_public
def eigvals(a):
    """np.linalg.eigvals: eig's eigenvalues (complex for traced values); d w_i = (V^-1 dA V)_ii.

        >>> fnp.linalg.eigvals(A)
    """
    return eig_p.bind(_square(a))[0]


# ---- LU with partial pivoting (scipy.linalg.lu_factor's; fg.scipy.linalg builds on it) -------

def _lu_impl(a):
    """(lu, piv, perm) of each square a[..., :, :]: SciPy's packed factors and 0-based pivots
    (getrf, as SciPy calls it), and the rows perm with (P a)[i] = a[perm[i]]."""
    import warnings

    import scipy.linalg
    a = np.asarray(a)
    n = a.shape[-1]
    lu, piv = np.empty_like(a), np.empty(a.shape[:-1], np.int32)
    perm = np.empty(a.shape[:-1], np.int64)
    for at in np.ndindex(a.shape[:-2] if n else (0,)):
        with warnings.catch_warnings():       # (an exact zero pivot: the factors still hold)
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            lu[at], piv[at] = scipy.linalg.lu_factor(a[at], check_finite=False)
        order = np.arange(n)
        for i, p in enumerate(piv[at]):
            order[[i, p]] = order[[p, i]]
        perm[at] = order
    return lu, piv, perm


def _lu_vjp(cts, a, *, out):
    # P A = L U, L unit lower, U upper, packed as lu = (L - I) + U. With F = L^-1 P dA U^-1,
    # dL = L tril(F, -1) and dU = triu(F) U, so for the cotangent C of lu:
    # Abar = P^T L^-T (tril(L^T C, -1) + triu(C U^T)) U^-T (transposes, not adjoints, as in
    # every rule here: the pairing is bilinear)
    ct, (lu, _, perm) = cts[0], out
    if ct is None:
        return (None,)
    n, dt = aval_of(a).shape[-1], aval_of(a).dtype
    strict = np.tril(np.ones((n, n), dtype=real_dtype(dt)), -1)
    low, up = lu * strict + np.eye(n, dtype=dt), lu * (1 - strict)
    g = matmul(_mT(low), ct) * strict + matmul(ct, _mT(up)) * (1 - strict)
    x = _mT(solve_p.bind(up, _mT(solve_p.bind(_mT(low), g))))          # L^-T G U^-T
    rows = convert(expand_dims(perm, -1) == np.arange(n), dt)          # P: rows[i, perm[i]] = 1
    return (matmul(_mT(rows), x),)


lu_p = define("lu", batch=STACKED, impl=_lu_impl, multiple_results=True, vjp=_lu_vjp,
              abstract=lambda a: (a, Aval(a.shape[:-1], np.int32), Aval(a.shape[:-1], np.int64)))
