"""funcgrad.numpy.linalg: forward values against NumPy (traced and interpreted), first and
second derivatives against central differences, closed forms, batching and conventions."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads, rand
from funcgrad.tree_util import tree_leaves


# ---- inputs -----------------------------------------------------------------------------------

def mT(x):
    return np.swapaxes(x, -1, -2)          # dispatches to funcgrad on traced values


def nonsingular(shape, seed=0):
    return rand(shape, seed=seed) + shape[-1] * np.eye(shape[-1])


def spd(shape, seed=0):
    a = rand(shape, seed=seed)
    return a @ mT(a) + shape[-1] * np.eye(shape[-1])


def proj(v, i, rows=False):
    """Outer product of column i of v (row i if rows) with itself: sign-invariant."""
    c = v[..., i:i + 1, :] if rows else v[..., :, i:i + 1]
    return mT(c) @ c if rows else c @ mT(c)


def eigh_invariants(L, a, UPLO="L"):
    w, v = L.eigh(a, UPLO)
    return w, (v * w[..., None, :] ** 2) @ mT(v), proj(v, 0)


def svd_invariants(L, a, full_matrices=False, hermitian=False):
    u, s, vh = L.svd(a, full_matrices=full_matrices, hermitian=hermitian)
    k = s.shape[-1]
    us = u[..., :, :k] * s[..., None, :] ** 2
    out = (s, us @ vh[..., :k, :], proj(u, 0), proj(vh, 0, rows=True))
    if full_matrices and u.shape[-1] > k:        # the complement of the column space
        out += (u[..., :, k:] @ mT(u[..., :, k:]),)
    if full_matrices and vh.shape[-2] > k:
        out += (mT(vh[..., k:, :]) @ vh[..., k:, :],)
    return out


A33, A233 = nonsingular((3, 3), 1), nonsingular((2, 3, 3), 2)
S33, S233 = spd((3, 3), 3), spd((2, 3, 3), 4)
R43, R34, R243 = rand((4, 3), seed=5), rand((3, 4), seed=6), rand((2, 4, 3), seed=7)
v3, v4 = rand((3,), seed=8), rand((4,), seed=9)
SYM = rand((3, 3), seed=20) + rand((3, 3), seed=20).T      # indefinite, distinct |eigenvalues|
NEGDET = A233 * np.array([1.0, -1.0])[:, None, None] * np.array([[1.0], [1.0], [-1.0]])

# name -> (f(L, *args) with L = np.linalg or fnp.linalg, args)
CASES = {
    "solve_vec": (lambda L, a, b: L.solve(a, b), (A33, v3)),
    "solve_vec_batched_a": (lambda L, a, b: L.solve(a, b), (A233, v3)),
    "solve_mat_batched": (lambda L, a, b: L.solve(a, b), (A233, rand((2, 3, 2), seed=10))),
    "solve_broadcast_b": (lambda L, a, b: L.solve(a, b), (A233, rand((3, 2), seed=11))),
    "solve_broadcast_a": (lambda L, a, b: L.solve(a, b), (A33, rand((2, 3, 2), seed=12))),
    "inv": (lambda L, a: L.inv(a), (A233,)),
    "det": (lambda L, a: L.det(a), (A33,)),
    "det_batched": (lambda L, a: L.det(a), (NEGDET,)),
    "slogdet": (lambda L, a: L.slogdet(a)[1] * L.slogdet(a)[0], (NEGDET,)),
    "cholesky": (lambda L, a: L.cholesky(a), (S233,)),
    "cholesky_upper": (lambda L, a: L.cholesky(a, upper=True), (S33,)),
    "eigh": (eigh_invariants, (S233,)),
    "eigh_U": (lambda L, a: eigh_invariants(L, a, "U"), (S33,)),
    "eigh_nonsym_input": (eigh_invariants, (A33,)),
    "eigvalsh": (lambda L, a: L.eigvalsh(a), (S233,)),
    "eigvalsh_U": (lambda L, a: L.eigvalsh(a, UPLO="U"), (S33,)),
    "svd_values_tall": (lambda L, a: L.svd(a, compute_uv=False), (R243,)),
    "svd_values_wide": (lambda L, a: L.svd(a, compute_uv=False), (R34,)),
    "svdvals": (lambda L, a: L.svdvals(a), (R43,)),
    "svd_reduced_tall": (svd_invariants, (R243,)),
    "svd_reduced_wide": (svd_invariants, (R34,)),
    "svd_square": (svd_invariants, (A233,)),
    "svd_full_tall": (lambda L, a: svd_invariants(L, a, True), (R43,)),
    "svd_full_wide": (lambda L, a: svd_invariants(L, a, True), (R34,)),
    "svd_hermitian": (lambda L, a: svd_invariants(L, a, hermitian=True), (SYM,)),
    "svd_values_hermitian": (lambda L, a: L.svd(a, compute_uv=False, hermitian=True), (SYM,)),
    "pinv_tall": (lambda L, a: L.pinv(a), (R243,)),
    "pinv_wide": (lambda L, a: L.pinv(a), (R34,)),
    "pinv_hermitian": (lambda L, a: L.pinv(a, hermitian=True), (SYM,)),
    "pinv_rtol": (lambda L, a: L.pinv(a, rtol=1e-3), (R34,)),
    "qr_tall": (lambda L, a: L.qr(a), (R43,)),
    "qr_wide": (lambda L, a: L.qr(a), (R34,)),
    "qr_complete": (lambda L, a: L.qr(a, "complete"), (R43,)),
    "qr_r": (lambda L, a: L.qr(a, "r"), (A33,)),
    "lstsq_tall": (lambda L, a, b: L.lstsq(a, b), (R43, v4)),
    "lstsq_matrix_b": (lambda L, a, b: L.lstsq(a, b, rcond=1e-10), (R43, rand((4, 2), seed=14))),
    "lstsq_wide": (lambda L, a, b: L.lstsq(a, b), (R34, v3)),
    "cond": (lambda L, a: L.cond(a), (A233,)),
    "cond_neg2": (lambda L, a: L.cond(a, -2), (A33,)),
    "cond_fro": (lambda L, a: L.cond(a, "fro"), (A33,)),
    "cond_inf": (lambda L, a: L.cond(a, np.inf), (A233,)),
    "matrix_power_0": (lambda L, a: L.matrix_power(a, 0), (A33,)),
    "matrix_power_1": (lambda L, a: L.matrix_power(a, 1), (A33,)),
    "matrix_power_5": (lambda L, a: L.matrix_power(a, 5) / 1e3, (A233,)),
    "matrix_power_neg": (lambda L, a: L.matrix_power(a, -2), (A233,)),
    "multi_dot": (lambda L, a, b, c: L.multi_dot([a, b, c]), (R43, R34, R43)),
    "multi_dot_vectors": (lambda L, x, a, b, y: L.multi_dot([x, a, b, y]), (v4, R43, R34, v4)),
    "multi_dot_two": (lambda L, a, y: L.multi_dot([a, y]), (R43, v3)),
    "trace": (lambda L, a: L.trace(a), (A233,)),
    "trace_offset": (lambda L, a: L.trace(a, offset=1), (R243,)),
    "diagonal": (lambda L, a: L.diagonal(a, offset=-1), (R243,)),
    "outer": (lambda L, x, y: L.outer(x, y), (v3, v4)),
    "cross": (lambda L, x, y: L.cross(x, y), (rand((2, 3), seed=13), v3)),
    "matmul": (lambda L, a, b: L.matmul(a, b), (R243, R34)),
    "tensordot": (lambda L, a, b: L.tensordot(a, b, axes=1), (R43, R34)),
    "vecdot": (lambda L, a, x: L.vecdot(a, x), (R43, v3)),
    "vecdot_axis": (lambda L, a, x: L.vecdot(a, x, axis=0), (R43, v4[:, None])),
    "matrix_transpose": (lambda L, a: L.matrix_transpose(a), (R243,)),
    "vector_norm": (lambda L, a: L.vector_norm(a, axis=(0, 2), ord=3), (R243,)),
    "vector_norm_all": (lambda L, a: L.vector_norm(a, keepdims=True), (R243,)),
    "matrix_norm": (lambda L, a: L.matrix_norm(a, ord="nuc", keepdims=True), (R243,)),
}


def _fnp(f):
    return lambda *args: f(fnp.linalg, *args)


@pytest.mark.parametrize("name", list(CASES))
def test_values_match_numpy(name):
    f, args = CASES[name]
    want, got = f(np.linalg, *args), fg.api.evaluate(_fnp(f), *args)
    for w, g in zip(tree_leaves(want), tree_leaves(got), strict=True):
        assert np.shape(g) == np.shape(w) and np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_grads(name):
    f, args = CASES[name]
    check_grads(_fnp(f), args, order=2)


def test_concrete_inputs_call_numpy():
    assert fnp.linalg.norm(R43, "nuc") == np.linalg.norm(R43, "nuc")
    np.testing.assert_array_equal(fnp.linalg.inv(A33), np.linalg.inv(A33))
    w, v = fnp.linalg.eigh(S33)
    np.testing.assert_array_equal(v, np.linalg.eigh(S33).eigenvectors)


@pytest.mark.parametrize("name", ["slogdet", "eigh", "svd", "qr"])
def test_result_namedtuples(name):
    fn = lambda a: getattr(fnp.linalg, name)(a)
    got, want = fg.api.evaluate(fn, S33), getattr(np.linalg, name)(S33)
    assert got._fields == want._fields
    for field in want._fields:
        np.testing.assert_allclose(getattr(got, field), getattr(want, field), rtol=1e-12)


def test_dtypes():
    got = fg.api.evaluate(lambda a: (fnp.linalg.inv(a), fnp.linalg.det(a)), A33.astype(np.float32))
    assert got[0].dtype == np.float32 and got[1].dtype == np.float32
    ints = np.array([[2, 1], [1, 3]])
    assert fg.api.evaluate(lambda a: fnp.linalg.det(a), ints) == pytest.approx(5.0)
    assert fg.api.evaluate(lambda a: fnp.linalg.norm(a), ints).dtype == np.float64


# ---- norm ---------------------------------------------------------------------------------------

X = rand((2, 3, 4), seed=14)
NORMS = [(None, None), (None, 1), (2, -1), (1, 0), (np.inf, 2), (-np.inf, 1), (0, 1), (3, 1),
         (0.5, -1), (-1, 1), (-2, 2), (None, (0, 1)), ("fro", (1, 2)), ("nuc", (1, 2)),
         ("nuc", (2, 0)), (1, (1, 2)), (-1, (2, 1)), (2, (1, 2)), (-2, (1, 2)),
         (np.inf, (1, 2)), (-np.inf, (2, 0))]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("ord,axis", NORMS)
def test_norm(ord, axis, keepdims):
    f = lambda x: fnp.linalg.norm(x, ord, axis, keepdims)
    want = np.linalg.norm(X, ord, axis, keepdims)
    got = fg.api.evaluate(f, X)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)
    check_grads(f, (X,), order=2)


@pytest.mark.parametrize("ord,ndim", [(None, 1), (None, 2), (2, 1), (1, 1), (np.inf, 1),
                                      (-np.inf, 1), (4, 1), ("fro", 2), ("nuc", 2), (1, 2),
                                      (2, 2), (-2, 2), (-np.inf, 2)])
def test_norm_without_axis(ord, ndim):
    x = X[0] if ndim == 2 else X[0, 0]
    f = lambda x: fnp.linalg.norm(x, ord)
    np.testing.assert_allclose(fg.api.evaluate(f, x), np.linalg.norm(x, ord), rtol=1e-12)
    check_grads(f, (x,), order=2)


@pytest.mark.parametrize("ord,axis,shape", [(None, None, (3,)), (None, None, (2, 3)),
                                            ("fro", None, (2, 3)), (2, -1, (2, 3)),
                                            (None, (0, 1), (2, 3)), (3, None, (3,))])
def test_norm_gradient_at_zero_is_zero(ord, axis, shape):
    f = lambda x: fnp.sum(fnp.linalg.norm(x, ord, axis))
    np.testing.assert_array_equal(fg.grad(f)(np.zeros(shape)), np.zeros(shape))
    # the second derivative stays finite at 0 (test_norm checks it away from 0)
    w = rand(shape, seed=21)
    g2 = fg.grad(lambda x: fnp.sum(fg.grad(f)(x) * w))
    assert np.all(np.isfinite(g2(np.zeros(shape))))
    x = rand(shape, seed=15)
    np.testing.assert_allclose(fg.grad(f)(x), x / np.linalg.norm(x, axis=axis, keepdims=True)
                               if ord != 3 else np.sign(x) * x ** 2 / np.linalg.norm(x, 3) ** 2)


@pytest.mark.parametrize("ord,axis", [(None, None), (2, 0), (1, 1), ("fro", None),
                                      ("nuc", None), (np.inf, (0, 1))])
def test_plain_numpy_norm_dispatches(ord, axis):
    x = rand((3, 4), seed=16)
    g_np = fg.grad(lambda x: fnp.sum(np.linalg.norm(x, ord=ord, axis=axis)))(x)
    g_fnp = fg.grad(lambda x: fnp.sum(fnp.linalg.norm(x, ord=ord, axis=axis)))(x)
    np.testing.assert_array_equal(g_np, g_fnp)


def test_plain_numpy_linalg_dispatches():
    f = lambda a, b: np.linalg.slogdet(a)[1] + np.sum(np.linalg.solve(a, b)) + np.linalg.det(a)
    g = lambda a, b: fnp.linalg.slogdet(a)[1] + fnp.sum(fnp.linalg.solve(a, b)) + fnp.linalg.det(a)
    for a, b in zip(fg.grad(f, argnums=(0, 1))(A33, v3), fg.grad(g, argnums=(0, 1))(A33, v3)):
        np.testing.assert_array_equal(a, b)


# ---- closed forms -------------------------------------------------------------------------------

@pytest.mark.parametrize("a", [A33, NEGDET[1]], ids=["posdet", "negdet"])
def test_closed_forms(a):
    ia = np.linalg.inv(a)
    np.testing.assert_allclose(fg.grad(fnp.linalg.det)(a), np.linalg.det(a) * ia.T, rtol=1e-10)
    np.testing.assert_allclose(fg.grad(lambda a: fnp.linalg.slogdet(a)[1])(a), ia.T, rtol=1e-10)
    np.testing.assert_allclose(fg.grad(lambda a: fnp.trace(fnp.linalg.inv(a)))(a),
                               -ia.T @ ia.T, rtol=1e-10)
    b = rand((3,), seed=17)        # d/db sum(solve(A, b)) = inv(A).T @ 1
    np.testing.assert_allclose(fg.grad(lambda b: fnp.sum(fnp.linalg.solve(a, b)))(b),
                               ia.T @ np.ones(3), rtol=1e-10)


def test_closed_forms_batched():
    g = fg.grad(lambda a: fnp.sum(fnp.linalg.slogdet(a)[1]))(NEGDET)
    np.testing.assert_allclose(g, mT(np.linalg.inv(NEGDET)), rtol=1e-10)


def _fold_lower(s):
    """The gradient w.r.t. the lower triangle of a function of the symmetric matrix."""
    return np.tril(s + s.T) - np.diag(np.diag(s))


def test_symmetric_input_convention():
    a = S33
    # sum of eigenvalues = trace: only the diagonal counts
    np.testing.assert_allclose(fg.grad(lambda a: fnp.sum(fnp.linalg.eigvalsh(a)))(a), np.eye(3),
                               atol=1e-12)
    # sum of squared eigenvalues = ||A||_F^2 of the symmetric matrix built from the lower triangle
    g = fg.grad(lambda a: fnp.sum(fnp.linalg.eigh(a)[0] ** 2))(a)
    np.testing.assert_allclose(g, _fold_lower(2 * a), rtol=1e-10)
    g_upper = fg.grad(lambda a: fnp.sum(fnp.linalg.eigvalsh(a, "U") ** 2))(a)
    np.testing.assert_allclose(g_upper, _fold_lower(2 * a).T, rtol=1e-10)
    # logdet via cholesky: 2 sum(log diag L) = log det A
    g = fg.grad(lambda a: 2 * fnp.sum(fnp.log(fnp.diagonal(fnp.linalg.cholesky(a)))))(a)
    np.testing.assert_allclose(g, _fold_lower(np.linalg.inv(a)), rtol=1e-10)
    # symmetrizing the input gives the symmetric gradient
    g = fg.grad(lambda a: fnp.sum(fnp.linalg.eigvalsh((a + a.T) / 2) ** 2))(a)
    np.testing.assert_allclose(g, 2 * a, rtol=1e-10)


def test_svd_values_gradient():
    u, s, vh = np.linalg.svd(R43, full_matrices=False)
    g = fg.grad(lambda a: fnp.sum(fnp.linalg.svd(a, compute_uv=False) * np.arange(1.0, 4.0)))(R43)
    np.testing.assert_allclose(g, (u * np.arange(1.0, 4.0)) @ vh, rtol=1e-10)


def test_pinv_is_least_squares():
    g = fg.grad(lambda a: fnp.sum(fnp.linalg.pinv(a)))(R43)
    h = fg.grad(lambda a: fnp.sum(fnp.linalg.solve(a.T @ a, a.T)))(R43)
    np.testing.assert_allclose(g, h, rtol=1e-8)


# ---- errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("f,x,err", [
    (fnp.linalg.inv, R43, np.linalg.LinAlgError),
    (fnp.linalg.det, v3, np.linalg.LinAlgError),
    (lambda x: fnp.linalg.eigh(x, UPLO="X"), S33, ValueError),
    (lambda x: fnp.linalg.norm(x, "fro", axis=0), R43, ValueError),
    (lambda x: fnp.linalg.norm(x, 3, axis=(0, 1)), R43, ValueError),
    (lambda x: fnp.linalg.norm(x, 2), X, ValueError),
    (lambda x: fnp.linalg.norm(x, axis=(0, 0)), R43, ValueError),
    (lambda x: fnp.linalg.matrix_power(x, 1.5), A33, TypeError),
    (lambda x: fnp.linalg.pinv(x, rcond=np.array([1e-3, 1e-3])), R243, NotImplementedError),
    (lambda x: fnp.linalg.multi_dot([x]), R43, ValueError),
    (lambda x: fnp.linalg.outer(x, x), R43, ValueError),
    (lambda x: fnp.linalg.solve(x, v4), A33, ValueError),
])
def test_errors(f, x, err):
    with pytest.raises(err):
        fg.api.evaluate(f, x)


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=5, deadline=None)
@given(batch=st.lists(st.integers(1, 3), min_size=1, max_size=2), n=st.integers(1, 4),
       k=st.integers(1, 3), complex_=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_compiled_solve_of_a_stack_equals_the_interpreter(batch, n, k, complex_, seed):
    """A stack of systems with matrix right-hand sides (a Hessian's batched program) compiles
    to one LAPACK solve per system (lapack.lapack_solve), no objmode: value and gradient
    equal the reference interpreter's, in float64 and complex128."""
    r = np.random.default_rng(seed)
    shape = (*batch, n, n)
    a = r.standard_normal(shape) + 3 * n * np.eye(n)
    b = r.standard_normal((*batch, n, k))
    w = r.standard_normal((*batch, n, k))
    if complex_:
        a, b = a + 1j * r.standard_normal(shape), b + 1j * r.standard_normal(b.shape)

    def loss(a, b):
        return fnp.sum(fnp.real(fnp.linalg.solve(a, b) * w))

    vg = fg.value_and_grad(loss, argnums=(0, 1))
    src = fg.jit(vg).lower(a, b).source
    assert "_vm.lapack_solve(" in src and "objmode" not in src
    (v, g), (v_ref, g_ref) = fg.jit(vg)(a, b), vg(a, b)
    np.testing.assert_allclose(v, v_ref, rtol=1e-11)
    for x, y in zip(g, g_ref):
        assert x.dtype == y.dtype
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


_LAPACK_PRIMS = ("solve", "inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh", "svd",
                 "svdvals")


def _lapack_program(upper, uplo, svd=True):
    def values(a, h, b):
        w, v = fnp.linalg.eigh(h, UPLO=uplo)
        return (fnp.linalg.solve(a, b), fnp.linalg.inv(a), fnp.linalg.det(a),
                *fnp.linalg.slogdet(a), fnp.linalg.cholesky(h, upper=upper), w, v,
                fnp.linalg.eigvalsh(h, UPLO="U" if uplo == "L" else "L"),
                *((fnp.linalg.svd(a, compute_uv=False), *fnp.linalg.svd(b, full_matrices=upper))
                  if svd else ()))

    def loss(a, h, b):          # real, and invariant under the eigenvectors' phases
        x, ai, d, sign, logdet, c, w, v, wu, s, _, sb, _ = values(a, h, b)
        vv = fnp.abs(v) ** 2
        return fnp.real(fnp.sum(x * b) + fnp.sum(ai * a) + fnp.sum(d) + fnp.sum(logdet)
                        + fnp.sum(c * fnp.conj(c)) + fnp.sum(w * vv[..., 0, :]) + fnp.sum(wu)
                        + fnp.sum(s) + fnp.sum(sb ** 2))
    return values, loss


def _assert_lapack_native(src):
    objmode = [p for p in _LAPACK_PRIMS if f"_{p}(" in src.replace("_vm.lapack_", "_vm.")]
    assert not objmode, f"{objmode} in objmode"
    assert "_vm.lapack_cholesky(" in src and "_vm.lapack_eigh(" in src and "_vm.lapack_svd(" in src


@settings(max_examples=4, deadline=None)
@given(batch=st.lists(st.integers(1, 3), max_size=2), n=st.integers(1, 4),
       complex_=st.booleans(), upper=st.booleans(), uplo=st.sampled_from("LU"),
       seed=st.integers(0, 2 ** 16))
def test_compiled_linear_algebra_equals_the_interpreter(batch, n, complex_, upper, uplo, seed):
    """solve, inv, det, slogdet, cholesky (lower and upper), eigh and eigvalsh (either
    triangle) and svd (full, reduced, values only; square and not) compile to the LAPACK
    routines NumPy calls (backend/lapack.py), not objmode, for single matrices and stacks,
    float64 and complex128: values equal the interpreter's (the same routines: eigen- and
    singular vectors with the same signs), gradients to rounding."""
    r = np.random.default_rng(seed)
    shape = (*batch, n, n)
    a, h = r.standard_normal(shape) + 2 * n * np.eye(n), r.standard_normal(shape)
    b = r.standard_normal((*batch, n, 2))
    if complex_:
        a, h, b = (x + 1j * r.standard_normal(x.shape) for x in (a, h, b))
    h = h @ np.conj(np.swapaxes(h, -1, -2)) + n * np.eye(n)
    h = h + 0.1 * np.tril(r.standard_normal(shape), -1)     # each triangle its own matrix
    values, loss = _lapack_program(upper, uplo)
    jv, jg = fg.jit(values), fg.jit(fg.grad(loss, argnums=(0, 1)))
    _assert_lapack_native(jv.lower(a, h, b).source)
    for got, want in zip(jv(a, h, b), fg.api.evaluate(values, a, h, b)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    for got, want in zip(jg(a, h, b), fg.grad(loss, argnums=(0, 1))(a, h, b)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_compiled_linear_algebra_fails_as_numpy_does():
    """What NumPy does with NaN, singular and indefinite matrices, compiled: NaN entries (no
    "must not contain NaN" error, as Numba's own np.linalg raises), det 0 and slogdet
    (0, -inf) at a singular matrix, LinAlgError from solve/inv of a singular matrix and
    cholesky of an indefinite one, svd of a matrix with NaN."""
    values, _ = _lapack_program(False, "L", svd=False)
    jv = fg.jit(values)
    nan = np.array([[2.0, 1.0], [1.0, np.nan]])
    spd_, b = np.array([[2.0, 1.0], [1.0, 3.0]]), np.ones((2, 2))
    for x, y in [(nan, spd_), (spd_, nan)]:
        for got, want in zip(jv(x, y, b), fg.api.evaluate(values, x, y, b)):
            np.testing.assert_array_equal(got, want)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    det = fg.jit(lambda a: (fnp.linalg.det(a), *fnp.linalg.slogdet(a)))
    assert [float(v) for v in det(singular)] == [0.0, 0.0, -np.inf]
    for f, x in [(lambda a: fnp.linalg.inv(a), singular),
                 (lambda a: fnp.linalg.solve(a, np.ones(2)), singular),
                 (lambda a: fnp.linalg.cholesky(a), -spd_),
                 (lambda a: fnp.linalg.svd(a)[1], nan)]:
        for run in (fg.jit(f), lambda x: fg.api.evaluate(f, x)):
            with pytest.raises(np.linalg.LinAlgError):
                run(x)


@pytest.mark.filterwarnings("ignore:Diagonal number")         # (SciPy's, at the zero pivot)
@settings(max_examples=6, deadline=None)
@given(batch=st.integers(0, 3), n=st.integers(1, 5), complex_=st.booleans(),
       zeros=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_compiled_lu_factor_equals_scipy_and_the_interpreter(batch, n, complex_, zeros, seed):
    """fg.scipy.linalg.lu_factor of a square matrix (and, under vmap, of a stack) compiles to
    LAPACK's getrf as SciPy calls it (lapack.lapack_lu): lu and piv bit for bit SciPy's (an
    exact zero pivot included), the gradient that of the interpreter to rounding."""
    sl = pytest.importorskip("scipy.linalg")
    r = np.random.default_rng(seed)
    shape = (batch, n, n) if batch else (n, n)
    a = r.standard_normal(shape)
    if complex_:
        a = a + 1j * r.standard_normal(shape)
    if zeros:
        a[..., :, 0] = 0.0                                   # the first pivot is an exact zero
    w = r.standard_normal(shape)
    lu_factor = fg.scipy.linalg.lu_factor
    f = fg.vmap(lu_factor) if batch else lu_factor
    loss = lambda a: fnp.sum(fnp.real(f(a)[0] * w))
    src = fg.jit(f).lower(a).source
    assert "_vm.lapack_lu(" in src and "objmode" not in src
    lu, piv = fg.jit(f)(a)
    for idx in np.ndindex(shape[:-2]):
        want_lu, want_piv = sl.lu_factor(a[idx], check_finite=False)
        np.testing.assert_array_equal(lu[idx], want_lu)
        np.testing.assert_array_equal(piv[idx], want_piv)
        assert piv.dtype == want_piv.dtype
    if not zeros:                                          # (a singular U has no gradient)
        np.testing.assert_allclose(fg.jit(fg.grad(loss))(a), fg.grad(loss)(a), rtol=1e-9,
                                   atol=1e-11)


def test_lu_factor_gradients_are_exact_at_second_order():
    """The lu primitive's derivative rule against central differences, first and second
    order, forward and reverse mode, real and complex (check_grads), and the derivative of
    P A = L U itself: d(L U) = P dA for the pivots chosen."""
    lu_factor = fg.scipy.linalg.lu_factor
    a = np.array([[0.1, 1.0, 0.2], [0.5, 0.3, 2.0], [3.0, 0.4, 1.0]])    # rows: a 3-cycle
    w = rand((3, 3), seed=4)
    for x in (a, a + 0.5j * rand((3, 3), seed=5)):
        check_grads(lambda m: fnp.sum(fnp.real(lu_factor(m)[0] * w)), (x,), order=2)
    lu, piv = lu_factor(a)
    assert list(piv) == [2, 2, 2]                        # (P is not its own transpose)
    perm = np.arange(3)
    for i, p in enumerate(piv):
        perm[[i, p]] = perm[[p, i]]
    da = rand((3, 3), seed=6)
    _, dlu = fg.jvp(lambda m: lu_factor(m)[0], (a,), (da,))
    low, up = np.tril(lu, -1) + np.eye(3), np.triu(lu)
    dlow, dup = np.tril(dlu, -1), np.triu(dlu)
    np.testing.assert_allclose(dlow @ up + low @ dup, da[perm], rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("shape, dtype, kw", [
    ((4, 3), np.float64, {}), ((3, 5), np.complex128, {"rcond": 0.3}),
    ((2, 3, 3), np.float32, {"rtol": None}), ((2, 2), np.float64, {}),
], ids=["tall", "wide-complex-rcond", "stack-float32-rtol", "rank-1"])
def test_compiled_pinv_is_numpys(shape, dtype, kw):
    """pinv compiles to lapack_pinv (gesdd and NumPy's cutoff rcond/rtol/1e-15, not
    objmode): NumPy's bits in float64 and complex128 (float32: within its rounding, as the
    svd's), a rank-deficient matrix's small singular values cut as NumPy cuts them; the
    gradient equals the interpreter's."""
    r = np.random.default_rng(sum(shape))
    a = r.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * r.standard_normal(shape)
    if shape == (2, 2):
        a = np.array([[1.0, 2.0], [2.0, 4.0]])
    a = a.astype(dtype)
    f = lambda a: fnp.linalg.pinv(a, **kw)
    src = fg.jit(f).lower(a).source
    assert "_vm.lapack_pinv(" in src and "objmode" not in src
    got, want = fg.jit(f)(a), np.linalg.pinv(a, **kw)
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype == np.float32:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)
    if shape == (4, 3):
        w = r.standard_normal(want.shape)
        loss = lambda a: fnp.sum(fnp.linalg.pinv(a) * w)
        np.testing.assert_allclose(fg.jit(fg.grad(loss))(a), fg.grad(loss)(a), rtol=1e-10,
                                   atol=1e-12)


@pytest.mark.parametrize("shape, dtype", [((3, 3), np.float64), ((2, 4, 4), np.complex128),
                                          ((3, 3), np.float32), ((3, 3), "singular")],
                         ids=["float64", "stack-complex128", "float32", "rank-2-of-3"])
def test_compiled_det_gradient_is_the_interpreters(shape, dtype):
    """det's gradient (the cofactor matrix, from the svd) compiles to lapack_cofactor, not
    objmode: the interpreter's bits in float64 (a singular matrix's rank-1 cofactor matrix
    included), within rounding for complex128 and float32."""
    r = np.random.default_rng(7)
    a = r.standard_normal(shape)
    if dtype == "singular":
        a[2] = a[0] + a[1]
        dtype = np.float64
    if np.dtype(dtype).kind == "c":
        a = a + 1j * r.standard_normal(shape)
    a = a.astype(dtype)
    g = lambda a: fg.grad(lambda x: fnp.sum(fnp.real(fnp.linalg.det(x))))(a)
    src = fg.jit(g).lower(a).source
    assert "_vm.lapack_cofactor(" in src and "objmode" not in src
    got, want = fg.jit(g)(a), g(a)
    assert got.dtype == want.dtype
    if dtype == np.float64:
        np.testing.assert_array_equal(got, want)
    else:
        tol = 1e-5 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


_ROT = np.array([[0.0, -1.0], [1.0, 0.0]])


@pytest.mark.parametrize("a", [
    rand((4, 4), seed=11), rand((2, 3, 3), seed=12, dtype=complex), _ROT, np.diag([1.0, 2.0, 3.0]),
    rand((3, 3), seed=13).astype(np.float32)],
    ids=["real-with-pairs", "stack-complex", "rotation", "diagonal", "float32"])
def test_compiled_eig_is_numpys(a):
    """eig and eigvals compile to lapack_eig (geev as NumPy calls it, a real matrix's
    conjugate pairs unpacked as NumPy unpacks them), not objmode, in float64 and complex128:
    NumPy's bits. float32 stays in objmode (NumPy's single-precision LAPACK and SciPy's choose
    an eigenvector's sign differently: found on this matrix). The gradient of a function of
    the eigenvalues equals the interpreter's."""
    f = lambda a: fnp.linalg.eig(a)
    src = fg.jit(f).lower(a).source
    native = a.dtype != np.float32
    assert ("_vm.lapack_eig(" in src) == native and ("objmode" not in src) == native
    (w, v), (want_w, want_v) = fg.jit(f)(a), np.linalg.eig(a)
    assert w.dtype == np.result_type(a.dtype, np.complex64) and v.shape == want_v.shape
    np.testing.assert_array_equal(w, want_w.astype(w.dtype))
    np.testing.assert_array_equal(v, want_v.astype(v.dtype))
    if a.shape == (4, 4):
        loss = lambda a: fnp.sum(fnp.real(fnp.linalg.eigvals(a)) ** 2
                                 + fnp.imag(fnp.linalg.eigvals(a)))
        np.testing.assert_allclose(fg.jit(fg.grad(loss))(a), fg.grad(loss)(a), rtol=1e-10,
                                   atol=1e-12)


def test_compiled_eig_refuses_nan_as_numpy_does():
    nan = np.array([[np.nan, 1.0], [0.0, 1.0]])
    for run in (fg.jit(fnp.linalg.eigvals), np.linalg.eigvals):
        with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
            run(nan)
