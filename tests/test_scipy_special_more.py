"""fg.scipy.special's gamma family, betainc, zeta, Bessel functions, erfcx, exponential
integrals and elementary functions (funcgrad/scipy/_special_more.py, _special_elementary.py):
each against SciPy at interior points (values) and on grids of edge cases (0, negatives,
poles, +-inf, NaN: the same NaN and inf), its derivatives against finite differences at orders
1 and 2 in both modes, the scipy.special ufunc itself on traced values (dispatched here), and
all of them in one compiled kernel (fg.jit, also of the gradient) and one batched call
(fg.vmap)."""
import itertools
import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from test_scipy_special import assert_values_derivatives_dispatch

sp = pytest.importorskip("scipy.special")
S = fg.scipy.special

X = np.array([0.3, 1.7, 4.2])
P = np.array([0.1, 0.5, 0.8])
NEG = np.array([0.3, 1.7, -1.5, 6.2])                 # (Gamma < 0 on (-2, -1))
BESSEL = np.array([-2.5, 0.3, 1.7, 40.0])
LAM = np.array([0.5, 0.0, -1.2])                      # (lmbda = 0: log's branch)
M = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, 30.0]])
# name: (funcgrad function, SciPy function, arguments); the callable refs are not ufuncs
CASES = {
    "gamma": (S.gamma, sp.gamma, (NEG,)),
    "gammasgn": (S.gammasgn, sp.gammasgn, (NEG,)),
    "rgamma": (S.rgamma, sp.rgamma, (NEG,)),
    "rgamma_poles": (S.rgamma, sp.rgamma, (np.array([-2.0, -1.0, 0.0, -0.7, -30.5]),)),
    "factorial": (S.factorial, sp.factorial, (X,)),
    "multigammaln": (lambda a: S.multigammaln(a, 3), lambda a: sp.multigammaln(a, 3), (X + 1,)),
    "beta": (S.beta, sp.beta, (X, X[::-1])),
    "poch": (S.poch, sp.poch, (X, P - 0.3)),
    "betainc": (lambda x: S.betainc(X, 1.5, x), lambda x: sp.betainc(X, 1.5, x), (P,)),
    "zeta": (lambda q: S.zeta(X + 1.5, q), lambda q: sp.zeta(X + 1.5, q), (X,)),
    "i0": (S.i0, sp.i0, (BESSEL,)),
    "i1": (S.i1, sp.i1, (BESSEL,)),
    "i0e": (S.i0e, sp.i0e, (BESSEL,)),
    "i1e": (S.i1e, sp.i1e, (BESSEL,)),
    "erfcx": (S.erfcx, sp.erfcx, (np.array([-1.5, 0.3, 4.0, 30.0]),)),
    "exp1": (S.exp1, sp.exp1, (X,)),
    "expi": (S.expi, sp.expi, (X - 2.0,)),
    "entr": (S.entr, sp.entr, (P,)),
    "rel_entr": (S.rel_entr, sp.rel_entr, (X, P)),
    "kl_div": (S.kl_div, sp.kl_div, (X, P)),
    "huber": (S.huber, sp.huber, (np.array([1.0, 0.5, 2.0]), X * [1, -1, 1])),
    "pseudo_huber": (S.pseudo_huber, sp.pseudo_huber, (X, X - 2.0)),
    "log_expit": (S.log_expit, sp.log_expit, (np.array([-40.0, -1.0, 0.0, 30.0]),)),
    "softmax": (S.softmax, sp.softmax, (M,)),
    "log_softmax": (lambda x: S.log_softmax(x, axis=1), lambda x: sp.log_softmax(x, axis=1),
                    (M,)),
    "boxcox": (S.boxcox, sp.boxcox, (X, LAM)),
    "boxcox1p": (S.boxcox1p, sp.boxcox1p, (P - 0.3, LAM)),
    "inv_boxcox": (S.inv_boxcox, sp.inv_boxcox, (P, LAM)),
    "inv_boxcox1p": (S.inv_boxcox1p, sp.inv_boxcox1p, (P, LAM)),
    "exp10": (S.exp10, sp.exp10, (X - 2.0,)),
    "exp2": (S.exp2, sp.exp2, (X - 2.0,)),
    "cbrt": (S.cbrt, sp.cbrt, (X - 2.0,)),
    "expm1": (S.expm1, sp.expm1, (P - 0.3,)),
    "log1p": (S.log1p, sp.log1p, (P - 0.3,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_derivatives_dispatch(name):
    assert_values_derivatives_dispatch(*CASES[name])


def _all(*arg_lists):
    """Every case's function on its arguments: one program for fg.jit and fg.vmap."""
    return [CASES[name][0](*args) for name, args in zip(sorted(CASES), arg_lists)]


def test_all_in_one_compiled_kernel_its_gradient_and_one_batched_call():
    names = sorted(CASES)
    args = [CASES[n][2] for n in names]
    refs = [CASES[n][1](*a) for n, a in zip(names, args)]
    for name, got, want in zip(names, fg.jit(_all)(*args), refs):
        np.testing.assert_allclose(got, want, rtol=1e-13, err_msg=name)

    def total(*arg_lists):
        return sum(fnp.sum(v) for v in _all(*arg_lists))
    for got, want in zip(fg.tree_util.tree_leaves(fg.jit(fg.grad(total))(*args)),
                         fg.tree_util.tree_leaves(fg.grad(total)(*args))):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    flipped = [tuple(a[::-1] for a in case) for case in args]
    stacked = [tuple(np.stack([a, b]) for a, b in zip(case, back))
               for case, back in zip(args, flipped)]
    for name, got, back in zip(names, fg.vmap(_all)(*stacked), flipped):
        np.testing.assert_allclose(got[1], CASES[name][1](*back), rtol=1e-13, err_msg=name)


EDGE = np.array([-np.inf, -2.0, -1.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.5, 100.3, 171.0,
                 172.0, np.inf, np.nan])
UNARY = ["gamma", "gammasgn", "rgamma", "factorial", "i0", "i0e", "i1", "i1e", "erfcx", "exp1",
         "expi", "entr", "log_expit", "exp10", "exp2", "cbrt", "expm1", "log1p"]
GRID = np.array([-np.inf, -1.5, -1.0, -0.0, 0.0, 0.5, 2.0, np.inf, np.nan])
A, B = (np.array(v) for v in zip(*itertools.product(GRID, GRID)))
BINARY = ["beta", "poch", "rel_entr", "kl_div", "huber", "pseudo_huber", "boxcox", "boxcox1p",
          "inv_boxcox", "inv_boxcox1p"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_edge_cases_as_scipy():
    """Gamma's exp(gammaln) has relative error ~1e-16 |gammaln|: 1e-13 near 171."""
    for name in UNARY:
        np.testing.assert_allclose(getattr(S, name)(EDGE), getattr(sp, name)(EDGE),
                                   rtol=2e-13, atol=1e-300, err_msg=name)
    for name in BINARY:
        want = getattr(sp, name)(A, B)
        if name == "pseudo_huber":                     # SciPy: NaN; here the limit r^2 / 2
            want = np.where(A == np.inf, 0.5 * B * B, want)
        np.testing.assert_allclose(getattr(S, name)(A, B), want, rtol=1e-13, err_msg=name)
    a, x = np.array([0.0, 1.0, 2.0, -1.0, 2.0, 2.0, np.nan]), np.array([0.5, 0, 1.5, .5, 1, 0, .5])
    np.testing.assert_allclose(S.betainc(a, 2.0, x), sp.betainc(a, 2.0, x), rtol=1e-14)
    s = np.array([-1.0, 0.5, 1.0, 2.0, 5.0, np.inf, np.nan])
    for q in (None, 2.0, -1.5, 0.0, np.inf):
        args = (s,) if q is None else (s, q)
        np.testing.assert_allclose(S.zeta(*args), sp.zeta(*args), rtol=1e-14, err_msg=str(q))
    for d in (1, 2, 5):
        a = np.array([2.5, 3.0, 40.0, np.inf])
        np.testing.assert_allclose(S.multigammaln(a, d), sp.multigammaln(a, d), rtol=1e-14)
    for x in (np.array([-np.inf, -np.inf]), np.array([np.inf, 1.0]), np.array([[1.0, np.nan]])):
        np.testing.assert_allclose(S.softmax(x), sp.softmax(x))
        np.testing.assert_allclose(S.log_softmax(x), sp.log_softmax(x))
    np.testing.assert_allclose(S.softmax(M, axis=0), sp.softmax(M, axis=0), rtol=1e-14)


def test_derivatives_at_the_edges():
    assert fg.grad(S.i1)(0.0) == 0.5 and fg.grad(S.i1e)(0.0) == 0.5       # the limits
    assert fg.grad(S.i0)(0.0) == 0.0 and fg.grad(fg.grad(S.i0))(0.0) == 0.5
    assert fg.grad(fg.grad(S.i1))(0.0) == 0.0
    assert fg.grad(S.entr)(0.0) == 0.0 == fg.grad(lambda x: S.kl_div(x, 2.0))(0.0)
    assert fg.grad(lambda y: S.kl_div(0.0, y))(2.0) == 1.0
    assert fg.grad(S.gammasgn)(-0.5) == 0.0
    for n in range(4):                                  # 1/Gamma near -n: (-1)^n n! (x + n)
        assert fg.grad(S.rgamma)(-n * 1.0) == pytest.approx((-1) ** n * np.prod(range(1, n + 1)),
                                                            rel=1e-14)
    for f in (S.huber, S.pseudo_huber):                 # curvature 1 at r = 0
        assert fg.grad(fg.grad(lambda r: f(2.0, r)))(0.0) == 1.0
    log4 = np.log(4.0)                                  # boxcox's series in lmbda at 0
    assert fg.grad(lambda lm: S.boxcox(4.0, lm))(0.0) == pytest.approx(log4 ** 2 / 2, rel=1e-15)
    assert fg.grad(fg.grad(lambda lm: S.boxcox(4.0, lm)))(0.0) == pytest.approx(
        log4 ** 3 / 3, rel=1e-15)
    assert fg.grad(lambda q: S.zeta(2.0, q))(1.0) == pytest.approx(-2 * sp.zeta(3.0), rel=1e-15)
    assert fg.grad(S.erfcx)(0.0) == pytest.approx(-2 / np.sqrt(np.pi), rel=1e-15)
    x = 0.7                                            # betainc's x-derivative: the beta pdf
    assert fg.grad(lambda x: S.betainc(2.0, 3.0, x))(x) == pytest.approx(12 * x * (1 - x) ** 2,
                                                                         rel=1e-14)
    assert fg.grad(S.gamma)(3.0) == pytest.approx(2 * (1.5 - np.euler_gamma), rel=1e-14)


def test_refusals():
    for f, what in [(lambda a: S.betainc(a, 2.0, 0.5), "to a"),
                    (lambda b: S.betainc(2.0, b, 0.5), "to b"),
                    (lambda x: S.zeta(x, 2.0), "to x"), (lambda x: S.zeta(x), "to x")]:
        with pytest.raises(fg.UnsupportedFunctionError, match=f"with respect {what}"):
            fg.grad(f)(3.0)
    assert fg.grad(lambda a: S.betainc(fg.stop_gradient(a), 2.0, 0.5) * a)(2.0) == \
        pytest.approx(sp.betainc(2.0, 2.0, 0.5), rel=1e-14)
    with pytest.raises(ValueError, match="exact=True"):
        S.factorial(3, exact=True)
    with pytest.raises(ValueError, match="not met"):
        S.multigammaln(0.2, 2)                         # as SciPy
    with pytest.raises(ValueError, match="positive integer"):
        S.multigammaln(3.0, 1.5)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_dtypes_as_scipy():
    f32, ints = np.array([0.5, 2.0], np.float32), np.array([1, 2])
    for name in UNARY + BINARY + ["zeta", "softmax", "log_softmax", "betainc", "multigammaln"]:
        f, ref = getattr(S, name), getattr(sp, name)
        n = {"betainc": 3, "multigammaln": 1}.get(name, 1 if name in UNARY + ["softmax",
                                                                             "log_softmax"] else 2)
        for x in (f32, ints):
            args = (x + 3,) * n + ((2,) if name == "multigammaln" else ())
            assert f(*args).dtype == ref(*args).dtype, (name, x.dtype)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")     # (NumPy's overflow in the reflection)
def test_rgamma_is_zero_at_poles_where_gamma_of_the_reflection_overflows():
    """From -171 down Gamma(1 - x) overflows in the reflection: 0 * inf; SciPy gives 0 (and
    -inf between the poles), and warns of nothing: neither does rgamma on plain arrays."""
    x = np.array([-3.0, -171.0, -172.0, -200.0, -1e20, -200.5, 200.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(S.rgamma(x), sp.rgamma(x))


def test_pseudo_huber_does_not_overflow_where_its_value_is_finite():
    """delta (|r| - delta) for |r| >> delta: finite where delta |r| is (SciPy's form overflows
    to inf from |r| / delta ~ 1e154 on); the curvature 1 at r = 0 kept."""
    r = np.array([1e154, 1e155, 1e200])
    np.testing.assert_allclose(S.pseudo_huber(1.0, r), r - 1.0, rtol=1e-15)
    np.testing.assert_allclose(S.pseudo_huber(np.array([1e-150, 1e-160]), 1.0),
                               [1e-150, 1e-160], rtol=1e-15)
    assert fg.grad(lambda r: S.pseudo_huber(1.0, r))(1e200) == 1.0
    assert fg.grad(fg.grad(lambda r: S.pseudo_huber(2.0, r)))(0.0) == 1.0
