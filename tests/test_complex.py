"""Complex numbers end to end: the derivative conventions of docs/conventions.md checked
against closed forms (grad of a real loss is df/dx + i df/dy, holomorphic=True gives f'(z),
vjp is the unconjugated transpose, jvp the real-linear map), the Jacobians' holomorphic flag,
NumPy's semantics for complex reductions and linear algebra, eig/eigvals, compiled and
batched equal to interpreted. Every complex ufunc's derivatives against finite differences:
tests/test_elementwise.py; compiled against the interpreter: tests/test_backend_matrix.py."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.api import evaluate
from conftest import check_grads

R = np.random.default_rng(3)
Z = R.standard_normal(4) + 1j * R.standard_normal(4)
A = R.standard_normal((3, 3)) + 1j * R.standard_normal((3, 3))


def test_grad_of_a_real_loss_is_the_steepest_ascent_direction():
    # |z|^2 = x^2 + y^2: df/dx + i df/dy = 2x + 2iy = 2z
    np.testing.assert_allclose(fg.grad(lambda z: fnp.sum(fnp.abs(z) ** 2))(Z), 2 * Z, rtol=1e-14)
    # Re(z^2) = x^2 - y^2: 2x - 2iy = 2 conj(z)
    np.testing.assert_allclose(fg.grad(lambda z: fnp.sum(fnp.real(z * z)))(Z), 2 * np.conj(Z),
                               rtol=1e-14)
    # a step against the gradient descends (the optimizers rely on it)
    loss = lambda z: fnp.sum(fnp.abs(z - (1 + 1j)) ** 2)
    z = Z.copy()
    for _ in range(50):
        z = z - 0.1 * fg.grad(loss)(z)
    np.testing.assert_allclose(z, np.full(4, 1 + 1j), atol=1e-4)
    # value_and_grad and compiled grad agree
    v, g = fg.value_and_grad(loss)(Z)
    np.testing.assert_allclose(fg.jit(fg.grad(loss))(Z), g, rtol=1e-14)


def test_holomorphic_grad_and_jacobians_are_the_complex_derivative():
    z = 0.3 - 0.8j
    assert fg.grad(fnp.sin, holomorphic=True)(z) == pytest.approx(np.cos(z), rel=1e-14)
    assert fg.grad(lambda z: z ** 3 / (1 + z), holomorphic=True)(z) == pytest.approx(
        (3 * z ** 2 * (1 + z) - z ** 3) / (1 + z) ** 2, rel=1e-13)
    f = lambda z: fnp.exp(z) * z[::-1]
    J = np.diag(np.exp(Z) * Z[::-1]) + np.diag(np.exp(Z)) @ np.eye(4)[::-1]
    for jac in (fg.jacfwd, fg.jacrev):
        np.testing.assert_allclose(jac(f, holomorphic=True)(Z), J, rtol=1e-13)
    H = fg.hessian(lambda z: fnp.sum(fnp.sin(z)), holomorphic=True)(Z)
    np.testing.assert_allclose(H, np.diag(-np.sin(Z)), rtol=1e-13)
    # a real input with complex outputs: forward mode's columns are complex
    x = np.array([0.2, 1.1])
    np.testing.assert_allclose(fg.jacfwd(lambda x: fnp.exp(1j * x))(x), np.diag(1j * np.exp(1j * x)))


def test_vjp_is_the_unconjugated_transpose_and_jvp_the_real_linear_map():
    ct = R.standard_normal(4) + 1j * R.standard_normal(4)
    dz = R.standard_normal(4) + 1j * R.standard_normal(4)
    # holomorphic: vjp(ct) = ct f'(z), jvp(dz) = f'(z) dz
    np.testing.assert_allclose(fg.vjp(fnp.exp, Z)[1](ct)[0], ct * np.exp(Z), rtol=1e-14)
    np.testing.assert_allclose(fg.jvp(fnp.exp, (Z,), (dz,))[1], np.exp(Z) * dz, rtol=1e-14)
    # conj: d conj(z) = conj(dz), transpose conj(ct); real: a real cotangent comes back complex
    np.testing.assert_allclose(fg.jvp(fnp.conj, (Z,), (dz,))[1], np.conj(dz))
    np.testing.assert_allclose(fg.vjp(fnp.conj, Z)[1](ct)[0], np.conj(ct))
    np.testing.assert_allclose(fg.vjp(fnp.imag, Z)[1](np.ones(4))[0], -1j * np.ones(4))
    # the pairing: Re(sum(vjp(ct) * dz)) == Re(sum(ct * jvp(dz))) for a non-holomorphic map
    f = lambda z: fnp.abs(z) * z + fnp.conj(z) ** 2
    lhs = np.real(np.sum(fg.vjp(f, Z)[1](ct)[0] * dz))
    rhs = np.real(np.sum(ct * fg.jvp(f, (Z,), (dz,))[1]))
    assert lhs == pytest.approx(rhs, rel=1e-13)
    # a real input reached by a complex cotangent gets the real part
    g = fg.vjp(lambda x: x * (1 + 2j), np.ones(2))[1](np.array([1j, 1.0]))[0]
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, [-2.0, 1.0])


@pytest.mark.parametrize("name", ["var", "std", "norm", "cov", "corrcoef", "vdot", "correlate",
                                  "interp", "eigvals", "det", "slogdet", "solve"])
def test_numpy_semantics_and_derivatives(name):
    x = R.standard_normal(4)
    cases = {
        "var": (lambda z: fnp.var(z), lambda z: np.var(z), (Z,)),
        "std": (lambda z: fnp.std(z, ddof=1), lambda z: np.std(z, ddof=1), (Z,)),
        "norm": (fnp.linalg.norm, np.linalg.norm, (A,)),
        "cov": (fnp.cov, np.cov, (A,)),
        "corrcoef": (fnp.corrcoef, np.corrcoef, (A,)),
        "vdot": (lambda a, b: fnp.vdot(a, b), np.vdot, (Z, Z[::-1])),
        "correlate": (lambda a, b: fnp.correlate(a, b, "full"), lambda a, b: np.correlate(a, b, "full"), (Z, Z[:2])),
        "interp": (lambda fp: fnp.interp(x, np.arange(4.0), fp), lambda fp: np.interp(x, np.arange(4.0), fp), (Z,)),
        "eigvals": (fnp.linalg.eigvals, lambda a: np.sort_complex(np.linalg.eigvals(a)), (A,)),
        "det": (fnp.linalg.det, np.linalg.det, (A,)),
        "slogdet": (lambda a: fnp.linalg.slogdet(a)[0] * fnp.linalg.slogdet(a)[1],
                    lambda a: np.linalg.slogdet(a)[0] * np.linalg.slogdet(a)[1], (A,)),
        "solve": (lambda a: fnp.linalg.solve(a, Z[:3]), lambda a: np.linalg.solve(a, Z[:3]), (A,)),
    }
    f, ref, args = cases[name]
    got, want = evaluate(f, *args), ref(*args)
    if name == "eigvals":
        got = np.sort_complex(got)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    check_grads(f, args, order=1 if name == "corrcoef" else 2)


def test_eig():
    w, v = fnp.linalg.eig(A)                  # concrete: NumPy's
    f = lambda a: fnp.linalg.eig(a)
    tw, tv = fg.jit(f)(A)
    np.testing.assert_allclose(tw, w, rtol=1e-12)
    np.testing.assert_allclose(np.abs(tv), np.abs(v), rtol=1e-12)
    real = R.standard_normal((3, 3)) + np.diag([0.0, 3.0, 6.0])     # real eigenvalues
    assert fg.jit(fnp.linalg.eigvals)(real).dtype == np.complex128 != np.linalg.eigvals(real).dtype
    # eigenvalues: d w = diag(V^-1 dA V); both real and complex matrices, to second order
    check_grads(fnp.linalg.eigvals, (real,), order=2)
    check_grads(lambda a: fnp.sum(fnp.linalg.eigvals(a) ** 2), (A,), order=2)
    # eigenvectors, through a phase-invariant function
    check_grads(lambda a: fnp.abs(fnp.linalg.eig(a)[1]) ** 2, (A,), order=2)
    check_grads(lambda a: fnp.abs(fnp.linalg.eig(a)[1]) ** 2, (real,), order=1)
    # trace = sum of eigenvalues: its gradient is the identity
    np.testing.assert_allclose(fg.grad(lambda a: fnp.real(fnp.sum(fnp.linalg.eigvals(a))))(real),
                               np.eye(3), atol=1e-12)
    batched = fg.vmap(fnp.linalg.eigvals)(np.stack([A, A.T]))
    np.testing.assert_allclose(np.sort_complex(batched[1]), np.sort_complex(np.linalg.eigvals(A.T)),
                               rtol=1e-12)


@pytest.mark.parametrize("name", ["eigvalsh", "eigvalsh(U)", "eigh", "cholesky",
                                  "cholesky(upper)", "svdvals", "svd(tall)", "svd(wide, full)",
                                  "pinv", "lstsq"])
def test_hermitian_and_singular_value_derivatives(name):
    """Hermitian matrices: NumPy reads one triangle (and the real part of the diagonal), so
    the gradient lives there; the directions of check_grads perturb every entry."""
    H = A @ A.conj().T + 3 * np.eye(3)
    L = fnp.linalg
    f = {"eigvalsh": L.eigvalsh, "eigvalsh(U)": lambda h: L.eigvalsh(h, UPLO="U"),
         "eigh": lambda h: L.eigh(h)[0] + fnp.sum(fnp.abs(L.eigh(h)[1]) ** 2 * h.real, axis=0),
         "cholesky": L.cholesky, "cholesky(upper)": lambda h: L.cholesky(h, upper=True),
         "svdvals": L.svdvals,
         # functions invariant to the phase of each singular pair (u_i, v_i)
         "svd(tall)": lambda a: fnp.abs(L.svd(a, full_matrices=False)[0]) ** 2
         + L.svd(a, full_matrices=False)[1],
         "svd(wide, full)": lambda a: fnp.abs(L.svd(a.T)[2]) ** 2,
         "pinv": L.pinv, "lstsq": lambda a: L.lstsq(a, Z)[0] + L.lstsq(a, Z)[1]}[name]
    tall = R.standard_normal((4, 3)) + 1j * R.standard_normal((4, 3))
    arg = {"svdvals": A, "svd(tall)": tall, "svd(wide, full)": tall, "pinv": tall,
           "lstsq": tall}.get(name, H)
    check_grads(f, (arg,), order=2)
    if name == "eigvalsh":     # the trace: gradient I on the diagonal, 0 elsewhere
        np.testing.assert_allclose(fg.grad(lambda h: fnp.sum(L.eigvalsh(h)))(H), np.eye(3),
                                   atol=1e-12)


def test_complex_values_are_numpys_and_qr_differentiates():
    H = A @ A.conj().T + 3 * np.eye(3)
    w = fg.jit(fnp.linalg.eigvalsh)(H)        # values (real eigenvalues) as NumPy's
    assert w.dtype == np.float64
    np.testing.assert_allclose(w, np.linalg.eigvalsh(H), rtol=1e-12)
    tall = R.standard_normal((4, 3)) + 1j * R.standard_normal((4, 3))
    x, res, rank, s = fg.jit(lambda a: fnp.linalg.lstsq(a, Z))(tall)
    want = np.linalg.lstsq(tall, Z)
    assert res.dtype == want[1].dtype == np.float64
    np.testing.assert_allclose(x, want[0], rtol=1e-12)
    np.testing.assert_allclose(res, want[1], rtol=1e-12)
    for shape in ((3, 3), (4, 3), (3, 4)):       # LAPACK's complex reflectors: NumPy's Q and R
        a = R.standard_normal(shape) + 1j * R.standard_normal(shape)
        q, r = fg.jit(fnp.linalg.qr)(a)
        wq, wr = np.linalg.qr(a)
        np.testing.assert_allclose(q, wq, atol=1e-12)
        np.testing.assert_allclose(r, wr, atol=1e-12)
        check_grads(lambda a: fnp.linalg.qr(a)[0] + fnp.sum(fnp.linalg.qr(a)[1]), (a,), order=2)


def test_jacobians_need_holomorphic_for_complex():
    with pytest.raises(TypeError, match=r"jacfwd of sin: an input is complex.*holomorphic=True"):
        fg.jacfwd(fnp.sin)(Z)
    with pytest.raises(TypeError, match="an output is complex"):
        fg.jacrev(lambda x: fnp.exp(1j * x))(np.ones(2))
    with pytest.raises(TypeError, match="input must be complex"):
        fg.jacrev(fnp.sin, holomorphic=True)(np.ones(2))


def test_loops_vmap_and_dtypes():
    # complex carries through compiled loops and their reverse mode
    f = lambda z: fnp.sum(fnp.abs(fg.fori_loop(0, 5, lambda i, c: c * z + 1.0, z)) ** 2)
    check_grads(f, (Z,), order=2)
    np.testing.assert_allclose(fg.jit(fg.grad(f))(Z), fg.grad(f)(Z), rtol=1e-12)
    g = fg.vmap(lambda z: fnp.abs(z) ** 2 + fnp.angle(z))(np.stack([Z, Z * 1j]))
    np.testing.assert_allclose(g, np.abs(np.stack([Z, Z * 1j])) ** 2 + np.angle(np.stack([Z, Z * 1j])))
    z64 = Z.astype(np.complex64)
    out = fg.jit(lambda z: fnp.exp(z) * 2 + 1j)(z64)
    assert out.dtype == np.complex64
    assert fg.grad(lambda z: fnp.sum(fnp.abs(z)))(z64).dtype == np.complex64
    assert fg.jit(lambda z: z.real + z.imag)(z64).dtype == np.float32


# ---- compiled complex code against the interpreter, on drawn values -----------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

# Normal numbers, subnormal ones, signed zeros and NaN (subnormal parts found Numba's complex
# log losing accuracy, log(5e-324+5e-324j) was -743.44 for NumPy's -743.09, and a complex
# division raising ZeroDivisionError: the backend now has NumPy's algorithms, complexfuncs.py)
_PARTS = st.one_of(st.floats(-1e3, 1e3, allow_nan=False, width=64),
                   st.floats(-2.3e-308, 2.3e-308, width=64),
                   st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e-300, 5e-324, -1e-320, np.nan]))
_COMPLEX = st.builds(complex, _PARTS, _PARTS)


def _mixed(z, w):
    """Every complex code path of the backend in one kernel: division, reciprocal, power
    (integer and general), ordering and max/min, conversions, abs/angle, exp/log/sqrt."""
    return {"div": z / w, "recip": 1.0 / z, "ipow": z ** 3 + z ** -2, "pow": z ** w,
            "order": fnp.where(z < w, z, w) + fnp.maximum(z, w) + fnp.fmin(z, w),
            "parts": fnp.real(z) * fnp.imag(w) + fnp.abs(z) + fnp.angle(w),
            "elem": fnp.exp(z * 0.01) + fnp.log(w) + fnp.sqrt(z), "sum": fnp.sum(z * w)}


_COMPILED = fg.jit(_mixed, background=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_COMPLEX, _COMPLEX), min_size=1, max_size=6))
def test_compiled_complex_code_equals_the_interpreter(pairs):
    z = np.array([p[0] for p in pairs])
    w = np.array([p[1] for p in pairs])
    with np.errstate(all="ignore"):
        want = evaluate(_mixed, z, w)
        got = _COMPILED(z, w)
    for k in want:                   # part by part: inf and NaN positions must match too
        for part in (np.real, np.imag):
            np.testing.assert_allclose(part(got[k]), part(want[k]), rtol=1e-12, atol=1e-300,
                                       err_msg=k)


# ---- every complex elementwise function, compiled against the interpreter, over the whole range --

import cmath  # noqa: E402

from funcgrad.backend import lowerings, vecmath  # noqa: E402

_UNARY = ("sqrt", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
          "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh",
          "square", "reciprocal", "sign", "absolute")
_UNARY_JIT = {}                 # one compiled function per ufunc, for both dtypes


def _wide_complexes(width):
    """Finite parts over the whole range (hypothesis's floats favour 0, -0, subnormals and the
    largest values), parts near 1, exp's and tanh's overflow thresholds and NaN; and values near
    the unit circle (log's x^2 + y^2 - 1)."""
    tiny = float(np.finfo(f"float{width}").smallest_subnormal)
    parts = st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=width),
                      st.floats(1 - 2.0 ** -10, 1 + 2.0 ** -10, width=width),
                      st.floats(-20.0, 20.0, width=width),
                      st.sampled_from([0.0, -0.0, tiny, -tiny, 88.8, 355.0, 709.8, np.nan]))
    circle = st.builds(cmath.rect, st.floats(1 - 1e-6, 1 + 1e-6), st.floats(-4.0, 4.0))
    return st.one_of(st.builds(complex, parts, parts), circle)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_compiled_complex_functions_equal_the_interpreter(dtype, data):
    """Compiled complex functions are NumPy's (glibc's algorithms, backend/complexfuncs.py), to
    the bit where NumPy calls glibc; the test allows one ulp of |NumPy's value| in each part, and
    needs NaN and infinities in the same places. Infinite inputs are not drawn."""
    width = 64 if dtype == np.complex128 else 32
    z = np.array(data.draw(st.lists(_wide_complexes(width), min_size=8, max_size=8)), dtype)
    tol = np.finfo(dtype).eps
    for name in _UNARY:
        f = getattr(fnp, name)
        jf = _UNARY_JIT.setdefault(name, fg.jit(f, background=False))
        with np.errstate(all="ignore"):
            want, got = evaluate(f, z), jf(z)
            assert got.dtype == want.dtype, name
            mag = np.abs(want.astype(np.complex128))
            for part in (np.real, np.imag):
                g, w = part(got).astype(np.float64), part(want).astype(np.float64)
                assert np.array_equal(np.isnan(g), np.isnan(w)), (name, z, got, want)
                inf = np.isinf(g) | np.isinf(w)
                assert np.array_equal(g[inf], w[inf]), (name, z, got, want)
                ok = (g == w) | (np.abs(g - w) <= tol * mag)     # (|want| is NaN beside NaN)
                assert np.all(ok | inf | np.isnan(w)), (name, z[~ok], got[~ok], want[~ok])


def test_complex_functions_have_numpys_algorithms():
    # each ufunc the code generator sends to complexfuncs.py has versions for both dtypes
    for name in [n for n, low in lowerings.LOWERINGS.items() if low.complex_func]:
        assert hasattr(vecmath, f"c_{name}_complex128") and hasattr(vecmath, f"c_{name}_complex64")
    # values where Numba's versions were wrong: -inf+infj for nan+infj, 5e-21 for 0 (log's real
    # part), 1+0j for NaN (tanh), inf+0j for inf+nanj (cos), a ZeroDivisionError (sqrt), ...
    z = np.array([1e308 + 1e308j, 1e-320 + 1e-320j, 1 + 1e-10j, 571.5 + 862j, -881j, 5e-324j])
    with np.errstate(all="ignore"):
        for f in (fnp.square, fnp.sqrt, fnp.log, fnp.tanh, fnp.cos, fnp.sign, fnp.arccosh,
                  fnp.abs):
            want = getattr(np, f.__name__)(z)
            np.testing.assert_allclose(fg.jit(f, background=False)(z), want, rtol=3e-16, atol=0)
        # NumPy's multiply and square loops fuse the products where the CPU has FMA: z * z has
        # the rounding error of x * x as its real part; so does compiled code
        x = np.array([1.899756499835462 * (1 + 1j)])
        np.testing.assert_array_equal(fg.jit(lambda a, b: a * b, background=False)(x, x), x * x)
