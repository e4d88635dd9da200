"""fg.scipy.linalg's special matrices, matrix functions, Sylvester equations, eig and schur
(funcgrad/scipy/_linalg_more.py, _logm.py): each against SciPy on fixed random matrices,
derivatives against finite differences at orders 1 and 2 in both modes, all of them compiled
in one fg.jit and batched by fg.vmap; sqrtm and logm across conditioning, branches and
stacks, both Sylvester solvers, expm_frechet against fg's own derivative of expm, and schur's
refused derivative."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads
from funcgrad.scipy import _foreign, _linalg_more
from funcgrad.tree_util import tree_leaves

sl = pytest.importorskip("scipy.linalg")
L = fg.scipy.linalg

_rng = np.random.default_rng(7)
A = _rng.standard_normal((3, 3)) + 3.0 * np.eye(3)     # eigenvalues in the right half plane
B = _rng.standard_normal((2, 2)) + 3.0 * np.eye(2)
Q = _rng.standard_normal((3, 2))
E = _rng.standard_normal((3, 3))
C = _rng.standard_normal(3)
R = _rng.standard_normal(4)
WIDE = _rng.standard_normal((2, 3))


def _phase_free(w, *vs):
    """eig's results in the order of the eigenvalues' real parts (eig's own order is LAPACK's),
    as real numbers that do not depend on the eigenvectors' phases (a conjugate pair, tied,
    has equal ones)."""
    order = fnp.argsort(fnp.real(w))
    return (fnp.real(w)[order], fnp.imag(w)[order] ** 2) + tuple(
        fnp.abs(v[:, order]) ** 2 for v in vs)


# name: (funcgrad function, SciPy function, arguments); values compared, derivatives checked
CASES = {
    "block_diag": (lambda a, q, c: L.block_diag(a, q, c, 2.0),
                   lambda a, q, c: sl.block_diag(a, q, c, 2.0), (A, Q, C)),
    "toeplitz": (L.toeplitz, sl.toeplitz, (C, R)),
    "toeplitz_hermitian": (L.toeplitz, sl.toeplitz, (C,)),
    "circulant": (L.circulant, sl.circulant, (C,)),
    "hankel": (L.hankel, sl.hankel, (C, R)),
    "hankel_zeros": (L.hankel, sl.hankel, (C,)),
    "companion": (L.companion, sl.companion, (R,)),
    "expm_frechet": (L.expm_frechet, sl.expm_frechet, (0.5 * A, E)),
    "expm_frechet_only": (lambda a, e: L.expm_frechet(a, e, compute_expm=False),
                          lambda a, e: sl.expm_frechet(a, e, compute_expm=False), (0.5 * A, E)),
    "coshm": (L.coshm, sl.coshm, (0.3 * A,)),
    "sinhm": (L.sinhm, sl.sinhm, (0.3 * A,)),
    "tanhm": (L.tanhm, sl.tanhm, (0.3 * A,)),
    "cosm": (L.cosm, sl.cosm, (0.3 * A,)),
    "sinm": (L.sinm, sl.sinm, (0.3 * A,)),
    "tanm": (L.tanm, sl.tanm, (0.1 * A,)),
    "sqrtm": (L.sqrtm, sl.sqrtm, (A,)),
    "logm": (L.logm, sl.logm, (A,)),
    "polar": (L.polar, sl.polar, (A,)),
    "polar_left_wide": (lambda a: L.polar(a, "left"), lambda a: sl.polar(a, "left"), (WIDE,)),
    "polar_tall": (L.polar, sl.polar, (Q,)),
    "orthogonal_procrustes": (L.orthogonal_procrustes, sl.orthogonal_procrustes,
                              (Q, Q + 0.3 * _rng.standard_normal((3, 2)))),
    "solve_sylvester": (L.solve_sylvester, sl.solve_sylvester, (A, B, Q)),
    "solve_continuous_lyapunov": (L.solve_continuous_lyapunov, sl.solve_continuous_lyapunov,
                                  (A, E)),
    "eig": (lambda a: _phase_free(*L.eig(a, left=True)),
            lambda a: _phase_free(*sl.eig(a, left=True)), (A,)),
    "eigvals_generalized": (lambda a, b: _phase_free(L.eigvals(a, b)),
                            lambda a, b: _phase_free(sl.eigvals(a, b)), (A, A @ A.T + E)),
    "eigh_tridiagonal": (lambda d, e: (lambda w, v: (w, v * v))(*L.eigh_tridiagonal(d, e)),
                         lambda d, e: (lambda w, v: (w, v * v))(*sl.eigh_tridiagonal(d, e)),
                         (R, C)),
    "eigh_tridiagonal_index": (
        lambda d, e: L.eigh_tridiagonal(d, e, True, select="i", select_range=(1, 2)),
        lambda d, e: sl.eigh_tridiagonal(d, e, True, select="i", select_range=(1, 2)), (R, C)),
    "eigvalsh": (L.eigvalsh, sl.eigvalsh, (A @ A.T,)),
}


def _sum_of_squares(f):
    def scalar(*args):
        return sum(fnp.sum(out * out) for out in tree_leaves(f(*args)))
    scalar.__name__ = getattr(f, "__name__", "f")
    return scalar


def _assert_close(got, want, rtol=1e-11, atol=1e-13):
    got, want = tree_leaves(got), tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_derivatives(name):
    f, ref, args = CASES[name]
    _assert_close(f(*args), ref(*args))
    check_grads(_sum_of_squares(f), args, order=2, rtol=1e-5, atol=1e-8)


def _many(a, b, q, e, c, r):
    """Most of the new functions at once (one compiled kernel for all of them), and the
    gradients of the two with hand-written rules."""
    return (L.block_diag(a, q), L.toeplitz(c, r), L.circulant(c), L.hankel(c, r),
            L.companion(r), L.expm_frechet(0.5 * a, e)[1], L.cosm(0.3 * a), L.sqrtm(a), L.logm(a),
            L.polar(a)[1], L.solve_sylvester(a, b, q), fnp.sort(fnp.real(L.eigvals(a))),
            L.eigh_tridiagonal(r, c, eigvals_only=True), L.schur(a + a.T)[0],
            fg.grad(lambda a: fnp.sum(fnp.sin(L.sqrtm(a))))(a),
            fg.grad(lambda b: fnp.sum(L.solve_sylvester(a, b, q) ** 2))(b))


def _many_reference(a, b, q, e, c, r):
    def grad(f, x, h=1e-6):                        # central differences
        return np.array([(f(x + h * d) - f(x - h * d)) / (2 * h)
                         for d in np.eye(x.size).reshape((x.size,) + x.shape)]).reshape(x.shape)
    return (sl.block_diag(a, q), sl.toeplitz(c, r), sl.circulant(c), sl.hankel(c, r),
            sl.companion(r), sl.expm_frechet(0.5 * a, e)[1], sl.cosm(0.3 * a), sl.sqrtm(a),
            sl.logm(a),
            sl.polar(a)[1], sl.solve_sylvester(a, b, q), np.sort(np.linalg.eigvals(a).real),
            sl.eigh_tridiagonal(r, c, eigvals_only=True), sl.schur(a + a.T)[0],
            grad(lambda a: np.sin(sl.sqrtm(a)).sum(), a),
            grad(lambda b: (sl.solve_sylvester(a, b, q) ** 2).sum(), b))


def test_compiled_and_batched_equal_scipy():
    args = (A, B, Q, E, C, R)
    want = _many_reference(*args)
    _assert_close(_many(*args)[:-2], want[:-2])
    _assert_close(fg.jit(_many)(*args), want, rtol=1e-7, atol=1e-9)     # (finite differences)
    scales = np.array([1.0, 1.3])
    batched = fg.vmap(_many)(*[np.multiply.outer(scales, x) for x in args])
    _assert_close([out[1] for out in batched], _many_reference(*[1.3 * x for x in args]),
                  rtol=1e-7, atol=1e-9)


def test_sqrtm_across_conditioning_branches_and_batches():
    rng = np.random.default_rng(3)
    for n in (2, 6, 30):
        q, _ = np.linalg.qr(rng.standard_normal((n, n)))
        wide = q @ np.diag(np.logspace(-6, 6, n)) @ q.T           # condition 1e12
        shifted = rng.standard_normal((n, n)) + 2.0 * np.sqrt(n) * np.eye(n)
        jordan = np.triu(3.0 * rng.standard_normal((n, n)), 1) + np.diag(np.linspace(1, 4, n))
        for a in (wide, shifted, jordan):
            x, err = L.sqrtm(a, disp=False)        # (jordan's eigenvectors, for n = 30: cond
            bound = 1e-11 if a is jordan else 1e-14     # 1e18, too much for the Newton step)
            assert err < bound and np.linalg.norm(x @ x - a) <= bound * np.linalg.norm(a)
            np.testing.assert_allclose(x, sl.sqrtm(a), rtol=1e-9, atol=1e-9 * np.abs(x).max())
    # negative eigenvalues: no real root (NaN); the complex one as SciPy's, i sqrt(-w)
    negative = A - 5.0 * np.eye(3)
    assert np.isnan(L.sqrtm(negative)).all()
    np.testing.assert_allclose(L.sqrtm(negative + 0j), sl.sqrtm(negative), rtol=1e-12)
    np.testing.assert_allclose(L.sqrtm(np.diag([-4.0, 9.0]) + 0j), np.diag([2j, 3.0]),
                               atol=1e-14)
    z = A + 1j * E
    np.testing.assert_allclose(L.sqrtm(z), sl.sqrtm(z), rtol=1e-12)
    stack = L.sqrtm(np.stack([A, negative, 2.0 * A]))          # members apart
    assert np.isnan(stack[1]).all()
    np.testing.assert_allclose(stack[2], sl.sqrtm(2.0 * A), rtol=1e-12)
    # the derivative solves X dX + dX X = dA, whatever the iteration did
    dx = fg.jvp(L.sqrtm, (A,), (E,))[1]
    x = sl.sqrtm(A)
    np.testing.assert_allclose(x @ dx + dx @ x, E, atol=1e-12)


@pytest.mark.filterwarnings("ignore:logm result may be inaccurate")   # (SciPy's, on 1e3 A)
def test_logm_across_scales_branches_and_batches():
    jordan = np.array([[2.0, 1.0, 0.0], [0.0, 2.0, 1.0], [0.0, 0.0, 2.0]])   # not diagonalizable
    for a in (A, 1e-3 * A, 1e3 * A, jordan, A @ A.T):
        x, err = L.logm(a, disp=False)
        assert err < 1e-14
        np.testing.assert_allclose(x, sl.logm(a), rtol=1e-12, atol=1e-13 * np.abs(x).max())
    negative = A - 5.0 * np.eye(3)
    assert np.isnan(L.logm(negative)).all()                       # no real logarithm
    np.testing.assert_allclose(L.logm(negative + 0j), sl.logm(negative), rtol=1e-12)
    np.testing.assert_allclose(L.logm(np.diag([-1.0, np.e]) + 0j), np.diag([1j * np.pi, 1.0]),
                               atol=1e-14)
    z = A + 1j * E
    np.testing.assert_allclose(L.logm(z), sl.logm(z), rtol=1e-12)
    stack = L.logm(np.stack([A, negative, 1e3 * A]))           # each takes its own roots
    assert np.isnan(stack[1]).all()
    np.testing.assert_allclose(stack[2], sl.logm(1e3 * A), rtol=1e-12)
    # the derivative solves L(X, dX) = dA (L: expm's Frechet derivative), and inverts expm's
    dx = fg.jvp(L.logm, (A,), (E,))[1]
    np.testing.assert_allclose(sl.expm_frechet(sl.logm(A), dx)[1], E, atol=1e-12)
    g = fg.grad(lambda a: fnp.sum(fnp.sin(L.logm(L.expm(a)))))(0.3 * A)
    np.testing.assert_allclose(g, np.cos(0.3 * A), rtol=1e-11)


def test_solve_sylvester_both_solvers_and_broadcasting():
    rng = np.random.default_rng(4)
    assert _linalg_more._KRONECKER_MAX < 9 * 8                   # (this one is solved by eig)
    a = rng.standard_normal((9, 9)) + 5.0 * np.eye(9)
    b = rng.standard_normal((8, 8)) + 5.0 * np.eye(8)
    q = rng.standard_normal((9, 8))
    x = L.solve_sylvester(a, b, q)
    np.testing.assert_allclose(x, sl.solve_sylvester(a, b, q), rtol=1e-12, atol=1e-14)
    check_grads(lambda a, b, q: fnp.sum(fnp.sin(L.solve_sylvester(a, b, q))), (a, b, q),
                order=1, rtol=1e-6, atol=1e-9)
    # strongly non-normal but small: the Kronecker solve, backward stable
    a = np.triu(3.0 * rng.standard_normal((4, 4)), 1) + np.diag(np.linspace(1, 1.3, 4))
    b = np.triu(3.0 * rng.standard_normal((4, 4)), 1) + np.diag(np.linspace(2, 2.3, 4))
    q = rng.standard_normal((4, 4))
    x = L.solve_sylvester(a, b, q)
    assert np.linalg.norm(a @ x + x @ b - q) <= 1e-13 * np.linalg.norm(x)
    np.testing.assert_allclose(x, sl.solve_sylvester(a, b, q), rtol=1e-9)
    # a stack of a against one b and q; a complex system
    stack = L.solve_sylvester(np.stack([A, 2.0 * A]), B, Q)
    np.testing.assert_allclose(stack[1], sl.solve_sylvester(2.0 * A, B, Q), rtol=1e-12)
    za, zq = A + 1j * E, Q - 2j * Q[::-1]
    np.testing.assert_allclose(L.solve_sylvester(za, B, zq), sl.solve_sylvester(za, B, zq),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="does not match"):
        L.solve_sylvester(A, B, Q.T)


def test_expm_frechet_is_the_derivative_of_expm():
    """The block-matrix value equals fg's derivative of expm (its Pade steps differentiated)
    and SciPy's, for small and large A and E, and for stacks."""
    for sa, se in ((1e-3, 1.0), (0.5, 1e-4), (0.5, 1e4), (6.0, 1.0)):
        a, e = sa * A, se * E
        expa, frechet = L.expm_frechet(a, e)
        want_expa, want = sl.expm_frechet(a, e)
        np.testing.assert_allclose(frechet, want, rtol=1e-11, atol=1e-13 * np.abs(want).max())
        np.testing.assert_allclose(expa, want_expa, rtol=1e-11)
        derivative = fg.jvp(L.expm, (a,), (e,))[1]
        np.testing.assert_allclose(frechet, derivative, rtol=1e-11,
                                   atol=1e-13 * np.abs(want).max())
    np.testing.assert_array_equal(L.expm_frechet(A, np.zeros((3, 3)), compute_expm=False), 0.0)
    stack = L.expm_frechet(np.stack([0.1 * A, A]), E, compute_expm=False)
    np.testing.assert_allclose(stack[1], sl.expm_frechet(A, E)[1], rtol=1e-11)
    with pytest.raises(ValueError, match="same shape"):
        L.expm_frechet(A, B)


def test_schur_values_batches_and_refused_derivative():
    z = A + 1j * E
    for a, output in ((A, "real"), (A, "complex"), (z, "complex"), (A, "r")):
        t, u = L.schur(a, output)
        want_t, want_u = sl.schur(a, output)
        np.testing.assert_allclose(t, want_t, rtol=1e-13, atol=1e-14)
        assert t.dtype == want_t.dtype
        np.testing.assert_allclose(u @ t @ u.conj().T, a, atol=1e-13)
    stack = fg.jit(L.schur)(np.stack([A, A.T]))[0]                  # compiled and stacked
    np.testing.assert_allclose(stack[1], sl.schur(A.T)[0], rtol=1e-13, atol=1e-14)
    for transform in (lambda f: fg.grad(f)(A), lambda f: fg.jvp(f, (A,), (E,))):
        with pytest.raises(fg.UnsupportedFunctionError, match="schur has no derivative.*eig"):
            transform(lambda a: fnp.sum(L.schur(a)[0]))
    with pytest.raises(NotImplementedError, match="sort"):
        L.schur(A, sort="lhp")
    with pytest.raises(ValueError, match="output"):
        L.schur(A, "upper")


@pytest.mark.filterwarnings("ignore:Beginning in SciPy 1.19")       # (hankel's, on 2-D input)
def test_special_matrices_stacks_dtypes_and_edges():
    cs, rs = np.stack([C, -2.0 * C]), np.stack([R, R[::-1]])
    for f in ("toeplitz", "circulant"):                 # SciPy 1.17 stacks these two
        args = (cs,) if f == "circulant" else (cs, rs)
        np.testing.assert_array_equal(getattr(L, f)(*args), getattr(sl, f)(*args))
    np.testing.assert_array_equal(L.hankel(cs, rs)[1], sl.hankel(cs[1], rs[1]))
    np.testing.assert_array_equal(L.toeplitz(cs, R)[1], sl.toeplitz(cs[1], R))  # broadcast
    np.testing.assert_array_equal(L.companion(np.stack([R, 2.0 * R]))[1], sl.companion(2 * R))
    z = C + 1j * C[::-1]
    np.testing.assert_array_equal(L.toeplitz(z), sl.toeplitz(z))    # r: conj(c)
    np.testing.assert_array_equal(L.hankel(z, R), sl.hankel(z, R))
    ints = L.toeplitz(np.array([1, 2, 3]))
    assert ints.dtype == sl.toeplitz(np.array([1, 2, 3])).dtype
    np.testing.assert_array_equal(L.block_diag(), sl.block_diag())
    blocks = (np.array([[1, 2]]), np.zeros((2, 0)), 3, [4.0, 5.0])
    np.testing.assert_array_equal(L.block_diag(*blocks), sl.block_diag(*blocks))
    assert L.block_diag(np.eye(2, dtype=int)).dtype == np.eye(2, dtype=int).dtype
    np.testing.assert_array_equal(L.hilbert(5), sl.hilbert(5))
    with pytest.raises(ValueError, match="2 dimensions"):
        L.block_diag(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="at least 2"):
        L.companion(np.array([1.0]))
    # traced entries: derivatives land where the entries were taken from
    g = fg.grad(lambda c, r: L.toeplitz(c, r)[2, 0] + 10.0 * L.toeplitz(c, r)[0, 3],
                argnums=(0, 1))(C, R)
    np.testing.assert_array_equal(g[0], [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(g[1], [0.0, 0.0, 0.0, 10.0])


def test_eig_options_and_matrix_trigonometry():
    w, vl, vr = L.eig(A, left=True)
    np.testing.assert_allclose(A @ vr, vr * w, atol=1e-13)
    np.testing.assert_allclose(vl.conj().T @ A, w[:, None] * vl.conj().T, atol=1e-13)
    np.testing.assert_allclose(np.linalg.norm(vl, axis=0), 1.0, rtol=1e-14)
    assert L.eig(A, left=True, right=False)[1].shape == (3, 3)
    only = L.eigvals(A, homogeneous_eigvals=True)
    assert only.shape == (2, 3) and np.iscomplexobj(only)
    np.testing.assert_allclose(np.sort_complex(only[0] / only[1]),
                               np.sort_complex(sl.eigvals(A)), rtol=1e-13)
    spd = A @ A.T + np.eye(3)
    w, v = L.eig(A, spd)                                  # generalized: a v = w b v
    np.testing.assert_allclose(A @ v, spd @ v * w, atol=1e-12)
    with pytest.raises(NotImplementedError, match="select='v'"):
        L.eigh_tridiagonal(R, C, select="v", select_range=(0.0, 1.0))
    w, v = L.eigh_tridiagonal(np.stack([R, 2.0 * R]), C)   # stacked d, one e
    np.testing.assert_allclose(w[1], sl.eigh_tridiagonal(2.0 * R, C)[0], rtol=1e-13)
    for f in ("cosm", "sinm", "tanm", "coshm", "sinhm", "tanhm"):
        z = 0.2 * (A + 1j * E)
        np.testing.assert_allclose(getattr(L, f)(z), getattr(sl, f)(z), rtol=1e-12, err_msg=f)
    np.testing.assert_allclose(L.cosm(A) @ L.cosm(A) + L.sinm(A) @ L.sinm(A), np.eye(3),
                               atol=1e-12)
    # polar: u has orthonormal columns (rows, wide), p is symmetric semidefinite
    u, p = L.polar(Q)
    np.testing.assert_allclose(u.T @ u, np.eye(2), atol=1e-14)
    np.testing.assert_allclose(u @ p, Q, atol=1e-14)
    u, p = L.polar(WIDE, "left")
    np.testing.assert_allclose(u @ u.T, np.eye(2), atol=1e-14)
    np.testing.assert_allclose(p @ u, WIDE, atol=1e-14)
    with pytest.raises(ValueError, match="side"):
        L.polar(A, "up")


def test_new_names_are_named_as_scipys_equivalents():
    """A SciPy call on a traced value names these as its fg.scipy.linalg equivalents."""
    assert len(_linalg_more.__all__) >= 10
    for name in _linalg_more.__all__ + ["eigvalsh", "logm"]:
        assert getattr(L, name) is not None and name in L.__all__
        assert _foreign.equivalent(f"scipy.linalg.{name}") == f"fg.scipy.linalg.{name}", name
