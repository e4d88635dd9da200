"""fg.scipy.special's native functions (primitives/special_functions.py, compiled through
backend/specialmath.py): erf, erfc, gammaln, digamma, polygamma, ndtri, erfinv.

Compiled kernels against SciPy over wide grids (the tails, the poles, the roots, huge and
subnormal arguments) within a tolerance scaled by each point's condition number (SciPy itself
loses digits near the roots of gammaln and the poles of digamma), NaN and the infinities at
the same points; compiled equal to batched; no SciPy called back from a kernel; derivatives
to order 2 in both modes, interpreted and compiled; a property test of compiled against
interpreted on any float. One kernel serves many cases.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads
from funcgrad.primitives.special_functions import SPECIAL

sp = pytest.importorskip("scipy.special")
S = fg.scipy.special
RTOL = 4e-15



def trigamma(x):
    """SciPy's polygamma(1, x), reflected below 0 (SciPy's zeta sums a term per unit there)."""
    x, out = np.asarray(x, np.float64), np.empty(np.shape(x))
    neg = x < 0
    out[~neg] = sp.polygamma(1, x[~neg])
    with np.errstate(all="ignore"):
        r = x[neg] - np.round(x[neg])
        out[neg] = (np.pi / np.sin(np.pi * r)) ** 2 - sp.polygamma(1, 1 - x[neg])
    return out


# name: (funcgrad function, SciPy function, its derivative (SciPy, for the tolerance))
FUNCTIONS = {
    "erf": (S.erf, sp.erf, lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x)),
    "erfc": (S.erfc, sp.erfc, lambda x: -2 / np.sqrt(np.pi) * np.exp(-x * x)),
    "gammaln": (S.gammaln, sp.gammaln, sp.digamma),
    "digamma": (S.digamma, sp.digamma, trigamma),
    "polygamma1": (lambda x: S.polygamma(1, x), lambda x: sp.polygamma(1, x),
                   lambda x: sp.polygamma(2, x)),
    "polygamma3": (lambda x: S.polygamma(3, x), lambda x: sp.polygamma(3, x),
                   lambda x: sp.polygamma(4, x)),
    "ndtri": (S.ndtri, sp.ndtri, lambda p: np.sqrt(2 * np.pi) * np.exp(sp.ndtri(p) ** 2 / 2)),
    "erfinv": (S.erfinv, sp.erfinv, lambda x: np.sqrt(np.pi) / 2 * np.exp(sp.erfinv(x) ** 2)),
}
_rng = np.random.default_rng(0)
_TINY = np.exp(_rng.uniform(-745, -1, 300))
# every function sees every point: the tails and special points of all of them
_ONE_MINUS = 1 - _TINY[_TINY > 1e-16]
GRID = np.concatenate([
    _rng.uniform(-40, 40, 400), _rng.uniform(-1, 1, 400), _TINY, -_TINY, _ONE_MINUS, -_ONE_MINUS,
    np.exp(_rng.uniform(-5, 709, 200)), -np.exp(_rng.uniform(-5, 700, 200)),
    1 + _rng.uniform(-1e-6, 1e-6, 40), 2 + _rng.uniform(-1e-6, 1e-6, 40),
    1.4616321449683622 + _rng.uniform(-0.3, 0.3, 40),
    -0.5040830082644554 + _rng.uniform(-0.1, 0.1, 40),
    -np.arange(1.0, 30.0) + 1e-9, -np.arange(1.0, 30.0) - 3e-7, -np.arange(0.0, 30.0),
    -_rng.uniform(0, 30, 200),
    [np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 1e-300, 1.0 - 1.1e-16, 0.5, 1.0, 2.0,
     1e308, -1e308, 1.5, -0.5, 0.85, -0.85, 0.925, 0.075, 1e-16, 1 - 2 ** -53, 26.5, 27.5,
     -26.5, -6.0, 171.5]])


def all_of(x):
    return {name: f(x) for name, (f, _, _) in FUNCTIONS.items()}


_kernel = fg.jit(all_of)


def assert_close_to(got, x, name, rtol=RTOL, tiny=1e-300):
    """got agrees with SciPy's value within rtol times the value's scale |f| + |x f'(x)| (the
    change from perturbing x by rtol relative), and is NaN or the same infinity where it is.
    (Not polygamma at non-integers below -100: SciPy's zeta sums a term per unit there.)"""
    if name.startswith("polygamma"):
        keep = ~(x < -100) | (x == np.floor(x))
        got, x = got[keep], x[keep]
    with np.errstate(all="ignore"):
        want = FUNCTIONS[name][1](x)
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite], err_msg=f"{name} at {x[~finite]}")
    with np.errstate(all="ignore"):
        change = np.abs(x * FUNCTIONS[name][2](x.astype(np.float64)))
        scale = np.abs(want) + np.where(np.isnan(change), 0.0, change)     # (inf * 0 at inf)
        bad = finite & ~(np.abs(got - want) <= rtol * scale + tiny)
    assert not bad.any(), f"{name} at {x[bad][:5]}: got {got[bad][:5]}, SciPy {want[bad][:5]}"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_values_against_scipy_everywhere(dtype):
    with np.errstate(all="ignore"):
        x = GRID.astype(dtype)
        got = _kernel(x)
    for name in FUNCTIONS:
        if dtype == np.float64:
            assert_close_to(got[name], x, name)
        else:               # SciPy's float32 loops compute in float64: one more rounding
            assert_close_to(got[name], x, name, rtol=2e-7, tiny=1e-37)


def test_special_values_as_scipy():
    """Signs of zero results and infinities, NaN at the poles and outside the domains."""
    x = np.array([0.0, -0.0, -1.0, -2.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5])
    got = _kernel(x)
    for name, (_, ref, _) in FUNCTIONS.items():
        signed = ~np.isnan(x)
        np.testing.assert_array_equal(np.signbit(got[name][signed]), np.signbit(ref(x[signed])),
                                      err_msg=name)
        assert_close_to(got[name], x, name)


def test_erfinv_of_tiny_and_subnormal_arguments():
    """erfinv(x) = sqrt(pi)/2 x near 0: subnormal arguments keep their value and sign (0.5 x
    underflowed to 0 before), -0.0 gives +0.0 as SciPy."""
    x = np.array([5e-324, -5e-324, 1e-310, -3e-308, 2.3e-301, 1e-299, -0.0])
    got, want = fg.jit(S.erfinv)(x), sp.erfinv(x)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=0)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_more_accurate_than_scipy_at_the_roots():
    """Near a root the value is tiny and SciPy's relative error large; the kernels follow the
    function's Taylor expansion there: digamma at its positive root r (a double-double
    constant), through 0 between r's neighbours in float64, and gammaln at 1 and 2."""
    r_hi, r_lo = 1.4616321449683622, 9.549995429965697e-17      # r = 1.46163214496836234126...
    near = np.array([np.nextafter(r_hi, 0), r_hi, np.nextafter(r_hi, 2), r_hi + 1e-13, r_hi - 1e-9])
    h = np.array([1e-9, -3e-10, 1e-13])
    got = _kernel(np.concatenate([near, 1 + h, 2 + h]))
    h1, h2 = (1 + h) - 1, (2 + h) - 2                             # (exact)
    np.testing.assert_allclose(got["digamma"][:5], sp.polygamma(1, r_hi) * ((near - r_hi) - r_lo),
                               rtol=1e-8)
    assert got["digamma"][1] < 0 < got["digamma"][2]
    def g1(h):                                                    # log Gamma(1 + h)
        return -np.euler_gamma * h + np.pi ** 2 / 12 * h * h
    np.testing.assert_allclose(got["gammaln"][5:8], g1(h1), rtol=1e-14)
    np.testing.assert_allclose(got["gammaln"][8:], g1(h2) + np.log1p(h2), rtol=1e-14)


def test_batched_and_interpreted_equal_compiled():
    X = np.stack([GRID[:500], GRID[500:1000][::-1]])
    with np.errstate(all="ignore"):
        batched = fg.jit(fg.vmap(all_of))(X)
        interpreted = fg.vmap(all_of)(X)                 # (runs SciPy's ufuncs)
        rows = [_kernel(np.ascontiguousarray(row)) for row in X]
        for name, (_, ref, _) in FUNCTIONS.items():
            np.testing.assert_array_equal(interpreted[name], ref(X), err_msg=name)
            for k in range(2):
                np.testing.assert_array_equal(batched[name][k], rows[k][name], err_msg=name)
                assert_close_to(batched[name][k], X[k], name)


def test_no_scipy_called_back_from_kernels():
    """The kernels (forward, gradients, the scipy.special ufuncs dispatched on traced values)
    are native code: no object-mode block, no pure_callback equation."""
    x = np.linspace(0.1, 0.9, 5)

    def loss(x):
        ufuncs = (sp.erf, sp.erfc, sp.gammaln, sp.psi, sp.ndtri, sp.erfinv)
        return fnp.sum(sum(f(x) for f in ufuncs))
    grad = fg.grad(loss)
    for fn, arg in ((all_of, x), (grad, x), (fg.grad(fg.grad(fg.nn.erf)), 0.5)):
        lowered = fg.jit(fn).lower(arg)
        assert "objmode" not in lowered.source and "pure_callback" not in lowered.source
        assert not any(e.prim.name == "pure_callback" for e in lowered.program.eqns)
    src = fg.jit(loss).lower(x).source + fg.jit(grad).lower(x).source
    for call in ("math.erf(", "math.erfc(", "_vm.digamma(", "_vm.polygamma(1, ", "_vm.ndtri(",
                 "_vm.erfinv("):
        assert call in src, call
    np.testing.assert_allclose(fg.jit(grad)(x), grad(x), rtol=1e-13)
    # kernels too large to inline vecmath call `_vm.outlined.<name>`: these are there as they are
    from funcgrad.backend import vecmath
    assert all(getattr(vecmath.outlined, n) is getattr(vecmath, n)
               for n in ("gammaln", "digamma", "polygamma", "ndtri", "erfinv"))


POINTS = {"real": np.array([-1.3, 0.2, 1.7]), "positive": np.array([0.3, 1.46, 4.2]),
          "unit": np.array([-0.95, 0.1, 0.7]), "probability": np.array([0.02, 0.3, 0.9])}


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_second_derivatives_interpreted(name):
    _, domain = SPECIAL[name]
    f = (lambda x: S.polygamma(2, x)) if name == "polygamma" else getattr(S, name)
    check_grads(lambda x: fnp.sum(f(x)), (POINTS[domain],), order=2, modes=("fwd", "rev"),
                rtol=1e-5, atol=1e-8)
    if domain == "positive":                    # and between the poles
        check_grads(lambda x: fnp.sum(f(x)), (np.array([-3.7, -0.4, -1.6]),), order=2,
                    modes=("fwd", "rev"), rtol=1e-5, atol=1e-8)


def test_second_derivatives_compiled():
    """All the functions in one program: its compiled derivatives to order 2 in both modes
    against finite differences, its compiled Hessian against the interpreted one."""
    def total(x):
        p = 0.5 + 0.45 * fnp.tanh(x)                          # in (0, 1)
        return (fnp.sum(S.erf(x) * S.erfc(0.5 * x)) + fnp.sum(S.gammaln(x * x + 0.3))
                + fnp.sum(S.digamma(x * x + 0.2)) + fnp.sum(S.ndtri(p) * S.erfinv(0.9 * p)))
    x = np.array([-1.1, 0.4, 2.3])
    check_grads(fg.jit(total), (x,), order=2, modes=("fwd", "rev"), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(fg.jit(fg.hessian(total))(x), fg.hessian(total)(x), rtol=1e-12,
                               atol=1e-14)


def test_dtypes_and_refusals():
    for dt, want in ((np.int64, np.float64), (np.float32, np.float32), (np.float16, np.float32)):
        assert fg.jit(S.ndtri)(np.array([0.25], dt)).dtype == want
    assert fg.jit(S.gammaln)(np.array([3], np.int32)).dtype == np.float64
    assert fg.jit(lambda x: S.polygamma(1, x))(np.float32(2.0)).dtype == np.float64
    for f in (S.gammaln, S.ndtri, S.erfinv, lambda z: S.polygamma(1, z)):
        with pytest.raises(fg.UnsupportedFunctionError, match="real arguments only"):
            fg.jit(f)(np.array([1j]))          # (as SciPy: no complex loop)
    with pytest.raises(ValueError, match="non-negative"):
        S.polygamma(-1, np.ones(2))


def test_complex_arguments_are_scipys_called_back():
    """erf, erfc and digamma of a traced complex argument: SciPy's, called back (no native
    code), with the complex derivative to second order where it exists."""
    z = np.array([0.5 + 0.3j, -1.2 + 2.0j, 2.0 - 0.5j])
    for f, ref in ((S.erf, sp.erf), (fg.nn.erf, sp.erf), (S.erfc, sp.erfc),
                   (S.digamma, sp.digamma)):
        np.testing.assert_array_equal(fg.jit(f)(z), ref(z))
        np.testing.assert_array_equal(fg.vmap(f)(z), ref(z))
    for f in (S.erf, S.erfc):
        check_grads(fg.jit(lambda z: fnp.sum(f(z) * z)), (z,), order=2, modes=("fwd", "rev"))
    sign = lambda f: -1.0 if f is S.erfc else 1.0
    for f in (S.erf, S.erfc):
        np.testing.assert_allclose(fg.vmap(fg.grad(f, holomorphic=True))(z),
                                   sign(f) * 2 / np.sqrt(np.pi) * np.exp(-z * z), rtol=1e-14)
    with pytest.raises(fg.UnsupportedFunctionError, match="polygamma.1, z.*stop_gradient"):
        fg.grad(lambda z: S.digamma(z), holomorphic=True)(1.0 + 1j)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, 32, elements=st.floats(allow_nan=True, allow_infinity=True)))
def test_compiled_equals_interpreted_on_any_float(x):
    with np.errstate(all="ignore"):
        got = _kernel(np.concatenate([x, GRID[32:]]))
    for name in FUNCTIONS:
        assert_close_to(got[name][:32], x, name)
