"""Dense linear algebra for kernels, calling LAPACK the way NumPy does, compiled once per machine.

Numba's own np.linalg functions refuse a matrix holding NaN or infinity ("Array must not
contain infs or NaNs") where NumPy runs LAPACK and returns what LAPACK returns (NaN entries,
usually): a kernel using them would raise where the interpreter answers. The functions here
call the routines NumPy calls -- gesv for solve and inv, getrf for det and slogdet (and for
scipy.linalg.lu_factor, as SciPy calls it), potrf for cholesky, syevd/heevd for eigh and
eigvalsh, gesdd for svd, pinv and det's gradient (the cofactor matrix) -- through Numba's
LAPACK entry points (SciPy's LAPACK), on Fortran-ordered copies, and fail where NumPy fails:
solve and inv of a singular matrix, cholesky of a matrix that is not positive definite and
eigh that does not converge return a flag (their last result, True) on which the kernel raises
NumPy's LinAlgError, marked with the value it computes so that its caller names the user's
line (compile.py); a singular matrix has det 0 and slogdet (0, -inf), as in NumPy.

Each takes a stack of C-contiguous matrices, shape (batch, n, n) (one matrix is a stack of
one), so a function has one signature per dtype whatever the rank of the program's arrays;
all are in Numba's disk cache (`cache=True`), so only a machine's first process compiles
them (runtime.py says why). Kernels call them through vecmath (`_vm.lapack_solve`, ...).

The entry points are private names of numba.np.linalg (unchanged since Numba 0.30); where
they are missing, AVAILABLE is False and these primitives stay in object mode.
"""
import numba
import numpy as np
from numba import types
from numba.extending import overload

try:
    from numba.np.linalg import F_INT_nptype, _LAPACK, ensure_lapack, get_blas_kind
    AVAILABLE = True
except ImportError:                                  # (a Numba without them: objmode)
    AVAILABLE = False

_cached = numba.njit(cache=True, error_model="numpy", nogil=True)


def _entry(name, dtype):
    ensure_lapack()
    return getattr(_LAPACK(), name)(dtype), ord(get_blas_kind(dtype, name))


# Typed calls of the LAPACK entry points. Arguments are Fortran-ordered: a C-contiguous array
# `at` holding a matrix's transpose (at[j, i] = A[i, j]) is A in Fortran order.

def _gesv(at, ipiv, bt):
    """Solve A X = B in place of bt (B's transpose, nrhs x n): LAPACK's info."""


def _getrf(at, ipiv):
    """LU factors of A with partial pivoting, in place: LAPACK's info."""


def _potrf(at, lower):
    """The Cholesky factor in the lower (or upper) triangle of A, in place: info."""


def _evd(at, w, vectors, lower):
    """Eigenvalues of Hermitian A into w (eigenvectors into at when `vectors`): info."""


def _gesdd(at, s, uf, vf, job, m, n):
    """Singular values of A (m x n) into s and, for job 1 (reduced) or 2 (full), U and V^H
    into uf and vf in Fortran order (job 0: values only): info."""


def _rgeev(at, wr, wi, vf):
    """Eigenvalues (wr + i wi) and right eigenvectors (the columns of vf's transpose, LAPACK's
    real packing of conjugate pairs) of a real A, in place: info."""


def _cgeev(at, w, vf):
    """Eigenvalues and right eigenvectors of a complex A: info."""


if AVAILABLE:
    @overload(_rgeev)
    def _rgeev_typed(at, wr, wi, vf):
        fn, kind = _entry("numba_ez_rgeev", at.dtype)
        nv, v = ord("N"), ord("V")

        def geev(at, wr, wi, vf):
            n = at.shape[0]
            return fn(kind, nv, v, n, at.ctypes, n, wr.ctypes, wi.ctypes, vf.ctypes, 1,
                      vf.ctypes, n)
        return geev

    @overload(_cgeev)
    def _cgeev_typed(at, w, vf):
        fn, kind = _entry("numba_ez_cgeev", at.dtype)
        nv, v = ord("N"), ord("V")

        def geev(at, w, vf):
            n = at.shape[0]
            return fn(kind, nv, v, n, at.ctypes, n, w.ctypes, vf.ctypes, 1, vf.ctypes, n)
        return geev

    @overload(_gesv)
    def _gesv_typed(at, ipiv, bt):
        fn, kind = _entry("numba_xgesv", at.dtype)
        return lambda at, ipiv, bt: fn(kind, at.shape[0], bt.shape[0], at.ctypes, at.shape[0],
                                       ipiv.ctypes, bt.ctypes, at.shape[0])

    @overload(_getrf)
    def _getrf_typed(at, ipiv):
        fn, kind = _entry("numba_xxgetrf", at.dtype)
        return lambda at, ipiv: fn(kind, at.shape[0], at.shape[0], at.ctypes, at.shape[0],
                                   ipiv.ctypes)

    @overload(_potrf)
    def _potrf_typed(at, lower):
        fn, kind = _entry("numba_xxpotrf", at.dtype)
        lo, up = ord("L"), ord("U")

        def potrf(at, lower):
            n = at.shape[0]
            return fn(kind, lo, n, at.ctypes, n) if lower else fn(kind, up, n, at.ctypes, n)
        return potrf

    @overload(_evd)
    def _evd_typed(at, w, vectors, lower):
        fn, kind = _entry("numba_ez_xxxevd", at.dtype)
        v, nv, lo, up = ord("V"), ord("N"), ord("L"), ord("U")

        def evd(at, w, vectors, lower):
            n, job, uplo = at.shape[0], v if vectors else nv, lo if lower else up
            return fn(kind, job, uplo, n, at.ctypes, n, w.ctypes)
        return evd

    @overload(_gesdd)
    def _gesdd_typed(at, s, uf, vf, job, m, n):
        fn, kind = _entry("numba_ez_gesdd", at.dtype)
        jobs = (ord("N"), ord("S"), ord("A"))

        def gesdd(at, s, uf, vf, job, m, n):
            return fn(kind, jobs[job], m, n, at.ctypes, m, s.ctypes, uf.ctypes, uf.shape[1],
                      vf.ctypes, vf.shape[1])
        return gesdd


def _phase(v):
    """The sign NumPy's slogdet gives one pivot: -1 or 1 for real v (1 for NaN), v / |v|."""


@overload(_phase)
def _phase_typed(v):
    if isinstance(v, types.Complex):
        return lambda v: v / abs(v)
    return lambda v: -1.0 if v < 0 else 1.0


@numba.njit(inline="always")
def _transposed(a):
    """A new C-contiguous copy of a 2-d a's transpose: a in Fortran order."""
    n, m = a.shape
    at = np.empty((m, n), a.dtype)
    for i in range(n):
        for j in range(m):
            at[j, i] = a[i, j]
    return at


@_cached
def lapack_solve(a, b):
    """np.linalg.solve of each a[i] (n x n) with its right-hand sides b[i] (n x k): gesv;
    (x, singular)."""
    batch, n, k = b.shape
    out = np.empty(b.shape, b.dtype)
    ipiv = np.empty(n, F_INT_nptype)
    for s in range(batch if n else 0):
        at, bt = _transposed(a[s]), _transposed(b[s])
        if _gesv(at, ipiv, bt) != 0:
            return out, True
        for i in range(n):
            for j in range(k):
                out[s, i, j] = bt[j, i]
    return out, False


@_cached
def lapack_inv(a):
    """np.linalg.inv of each a[i]: gesv with the identity as right-hand side, as NumPy does;
    (inverses, singular)."""
    eye = np.zeros(a.shape, a.dtype)
    for s in range(a.shape[0]):
        for i in range(a.shape[1]):
            eye[s, i, i] = 1
    return lapack_solve(a, eye)


@_cached
def lapack_slogdet(a):
    """np.linalg.slogdet of each a[i] -> (signs, log absolute determinants): getrf, then the
    pivots' signs and the diagonal's logs; (0, -inf) where getrf finds a zero pivot."""
    batch, n, _ = a.shape
    one = np.ones(1, a.dtype)[0]
    sign = np.empty(batch, a.dtype)
    logdet = np.empty(batch, np.abs(np.empty(0, a.dtype)).dtype)
    ipiv = np.empty(n, F_INT_nptype)
    for s in range(batch):
        sign[s], logdet[s] = one, 0.0
        if n == 0:
            continue
        at = _transposed(a[s])
        if _getrf(at, ipiv) > 0:
            sign[s], logdet[s] = 0 * one, -np.inf
            continue
        flips = 0
        for k in range(n):
            flips += ipiv[k] != k + 1
            v = at[k, k]
            sign[s] *= _phase(v)
            logdet[s] += np.log(abs(v))
        if flips % 2:
            sign[s] = -sign[s]
    return sign, logdet


@_cached
def lapack_lu(a):
    """scipy.linalg.lu_factor of each a[i] (n x n): getrf -> (lu, piv, perm): the packed
    factors, the 0-based pivots (int32, as SciPy's) and the rows with (P a)[i] = a[perm[i]].
    An exact zero pivot is no failure here (SciPy warns and returns the factors)."""
    batch, n, _ = a.shape
    lu = np.empty(a.shape, a.dtype)
    piv = np.empty((batch, n), np.int32)
    perm = np.empty((batch, n), np.int64)
    ipiv = np.empty(n, F_INT_nptype)
    for s in range(batch if n else 0):
        at = _transposed(a[s])
        _getrf(at, ipiv)
        for i in range(n):
            for j in range(n):
                lu[s, i, j] = at[j, i]
            piv[s, i] = ipiv[i] - 1
            perm[s, i] = i
        for i in range(n):
            p = piv[s, i]
            perm[s, i], perm[s, p] = perm[s, p], perm[s, i]
    return lu, piv, perm


@_cached
def lapack_det(a):
    """np.linalg.det of each a[i]: sign * exp(logabsdet), as NumPy computes it."""
    sign, logdet = lapack_slogdet(a)
    return sign * np.exp(logdet)


@_cached
def lapack_cholesky(a, lower):
    """np.linalg.cholesky of each a[i]: L (lower) or U = L^H (upper=True), reading that
    triangle of a[i] only; (factors, not positive definite)."""
    batch, n, _ = a.shape
    out = np.zeros(a.shape, a.dtype)
    for s in range(batch if n else 0):
        at = _transposed(a[s])
        if _potrf(at, lower) != 0:
            return out, True
        for i in range(n):
            for j in range(i + 1) if lower else range(i, n):
                out[s, i, j] = at[j, i]
    return out, False


@_cached
def lapack_eigh(a, lower, vectors):
    """np.linalg.eigh (vectors) or eigvalsh of each a[i], reading its lower (or upper)
    triangle: (eigenvalues ascending, eigenvectors as columns (empty when not asked for),
    not converged)."""
    batch, n, _ = a.shape
    w = np.empty((batch, n), np.abs(np.empty(0, a.dtype)).dtype)
    v = np.empty((batch, n, n) if vectors else (0, n, n), a.dtype)
    for s in range(batch if n else 0):
        at = _transposed(a[s])
        if _evd(at, w[s], vectors, lower) != 0:
            return w, v, True
        if vectors:
            for i in range(n):
                for j in range(n):
                    v[s, i, j] = at[j, i]
    return w, v, False


@_cached
def lapack_svd(a, full, vectors):
    """np.linalg.svd of each a[i] (m x n, not empty): (singular values descending, U, V^H,
    not converged), U and V^H m x m and n x n (full), m x k and k x n (k = min(m, n)), or
    empty when not asked for (`vectors` False: np.linalg.svd(compute_uv=False)); gesdd."""
    batch, m, n = a.shape
    k = min(m, n)
    ucol, vrow = (m, n) if full else (k, k)
    job = 0 if not vectors else 2 if full else 1
    s = np.empty((batch, k), np.abs(np.empty(0, a.dtype)).dtype)
    u = np.empty((batch, m, ucol) if vectors else (0, m, ucol), a.dtype)
    vt = np.empty((batch, vrow, n) if vectors else (0, vrow, n), a.dtype)
    uf = np.empty((ucol, m) if vectors else (1, 1), a.dtype)    # U (m x ucol) in Fortran order
    vf = np.empty((n, vrow) if vectors else (1, 1), a.dtype)    # V^H (vrow x n), likewise
    for b in range(batch):
        if _gesdd(_transposed(a[b]), s[b], uf, vf, job, m, n) != 0:
            return s, u, vt, True
        if vectors:
            for i in range(m):
                for j in range(ucol):
                    u[b, i, j] = uf[j, i]
            for i in range(vrow):
                for j in range(n):
                    vt[b, i, j] = vf[j, i]
    return s, u, vt, False


@_cached
def lapack_pinv(a, rcond):
    """np.linalg.pinv of each a[i] (m x n, not empty; not hermitian) as NumPy computes it:
    the reduced svd of conj(a[i]), 1/s where s > rcond * max(s) (else 0), and
    V @ (s^-1 * U^T) (transposes of conj(a)'s factors); (pseudo-inverses, not converged)."""
    batch, m, n = a.shape
    s, u, vt, failed = lapack_svd(np.conj(a), False, True)
    out = np.empty((batch, n, m), a.dtype)
    if failed:
        return out, True
    k, one = s.shape[1], np.ones(1, s.dtype)[0]
    for b in range(batch):
        cutoff = rcond * np.max(s[b])
        scaled = np.empty((k, m), a.dtype)              # s^-1 * U^T, row by row
        for i in range(k):
            inv = one / s[b, i] if s[b, i] > cutoff else 0 * one
            for j in range(m):
                scaled[i, j] = inv * u[b, j, i]
        out[b] = np.dot(np.ascontiguousarray(vt[b].T), scaled)
    return out, False


@_cached
def lapack_cofactor(a):
    """The cofactor matrix of each a[i] (n x n, n > 0) as primitives/linalg.py's _cofactor
    computes it (det's gradient): from the full svd A = U S V^H, det(U) det(V^H) conj(U)
    adj(S) conj(V^H), adj(S)_jj the product of the other singular values; (cofactors, svd
    not converged)."""
    batch, n, _ = a.shape
    s, u, vt, failed = lapack_svd(a, True, True)
    out = np.empty(a.shape, a.dtype)
    if failed:
        return out, True
    sign = lapack_det(u) * lapack_det(vt)
    one = np.ones(1, s.dtype)[0]
    before, after = np.empty(n, s.dtype), np.empty(n, s.dtype)
    for b in range(batch):
        before[0], after[n - 1] = one, one
        for j in range(1, n):
            before[j] = before[j - 1] * s[b, j - 1]
            after[n - 1 - j] = after[n - j] * s[b, n - j]
        scaled = np.empty((n, n), a.dtype)
        for i in range(n):
            for j in range(n):
                scaled[i, j] = np.conj(u[b, i, j]) * (before[j] * after[j])
        out[b] = sign[b] * np.dot(scaled, np.conj(vt[b]))
    return out, False


@_cached
def lapack_eig(a):
    """np.linalg.eig of each a[i] (n x n, n > 0; float64 or complex128, as kernels call it)
    as NumPy computes it: geev, a real matrix's conjugate pairs unpacked as NumPy unpacks
    them; (eigenvalues, unit eigenvectors as columns, both complex128, and 0, 1 (an infinity
    or NaN in a, which NumPy refuses) or 2 (no convergence))."""
    batch, n, _ = a.shape
    w = np.empty((batch, n), np.complex128)
    v = np.empty(a.shape, np.complex128)
    for b in range(batch):
        for i in range(n):
            for j in range(n):
                if not np.isfinite(a[b, i, j]):
                    return w, v, 1
    vf = np.empty((n, n), a.dtype)
    re = np.empty(n, a.dtype)
    im = np.empty(n, a.dtype)
    for b in range(batch):
        at = _transposed(a[b])
        if _geev_into(at, w[b], re, im, vf) != 0:
            return w, v, 2
        _unpack(v[b], vf, im)
    return w, v, 0


def _geev_into(at, w, re, im, vf):
    """geev of at into w (complex eigenvalues) and vf: info."""


@overload(_geev_into)
def _geev_into_typed(at, w, re, im, vf):
    if isinstance(at.dtype, types.Complex):
        return lambda at, w, re, im, vf: _cgeev(at, w, vf)

    def real(at, w, re, im, vf):
        info = _rgeev(at, re, im, vf)
        for k in range(w.shape[0]):
            w[k] = complex(re[k], im[k])
        return info
    return real


def _unpack(v, vf, im):
    """v = the eigenvectors geev left in vf (transposed), as complex columns: a real matrix's
    conjugate pair (eigenvalue imaginary part im[j] != 0) is vf[j] +- i vf[j + 1]."""


@overload(_unpack)
def _unpack_typed(v, vf, im):
    if isinstance(vf.dtype, types.Complex):
        def copy(v, vf, im):
            for j in range(v.shape[1]):
                for i in range(v.shape[0]):
                    v[i, j] = vf[j, i]
        return copy

    def unpack(v, vf, im):
        n, j = v.shape[0], 0
        while j < n:
            if im[j] == 0:
                for i in range(n):
                    v[i, j] = vf[j, i]
                j += 1
            else:
                for i in range(n):
                    v[i, j] = complex(vf[j, i], vf[j + 1, i])
                    v[i, j + 1] = complex(vf[j, i], -vf[j + 1, i])
                j += 2
    return unpack
