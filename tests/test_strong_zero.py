"""NaN-safe `where` by default: a cotangent that is exactly zero contributes zero even where
the local derivative is inf or NaN (the "strong zero" rule), in reverse mode, interpreted and
compiled, to second order; FUNCGRAD_STRONG_ZERO=0 restores IEEE 0 * inf = nan."""
import os
import subprocess
import sys

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

X = np.array([0.0, -1.0, 2.0, 0.25])

CASES = {   # f, its gradient at X where the discarded branch is not finite
    "sqrt": (lambda x: fnp.sum(fnp.where(x > 0, fnp.sqrt(x), 0.0)),
             np.where(X > 0, 0.5 / np.sqrt(np.maximum(X, 1e-300)), 0.0)),
    "log": (lambda x: fnp.sum(fnp.where(x > 0, fnp.log(x), x)),
            np.where(X > 0, 1 / np.where(X > 0, X, 1.0), 1.0)),
    "reciprocal": (lambda x: fnp.sum(fnp.where(x != 0, 1.0 / x, 0.0)),
                   np.where(X != 0, -1 / np.where(X != 0, X, 1.0) ** 2, 0.0)),
    "power": (lambda x: fnp.sum(fnp.where(x > 0, x ** 1.5, 0.0)),
              np.where(X > 0, 1.5 * np.sqrt(np.maximum(X, 0.0)), 0.0)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_zero_cotangents_stay_zero(name):
    f, want = CASES[name]
    with np.errstate(all="ignore"):
        for g in (fg.grad(f), fg.jit(fg.grad(f))):
            np.testing.assert_allclose(g(X), want, rtol=1e-14)
        # second order: reverse over reverse applies the rule again; forward over reverse
        # (fg.hessian) too, except where the discarded branch's *second* derivative is
        # infinite at that exact point (x ** 1.5 at 0: documented)
        hh = fg.jacrev(fg.grad(f))(X)
        assert np.all(np.isfinite(hh))
        h = fg.hessian(f)(X)
        if name != "power":
            assert np.all(np.isfinite(h))
        np.testing.assert_allclose(h[1:, 1:], hh[1:, 1:], rtol=1e-13)
        np.testing.assert_allclose(fg.jit(fg.hessian(f))(X), h, rtol=1e-14)


def test_scalar_where_sqrt_at_zero_is_zero():
    f = lambda x: fnp.where(x > 0, fnp.sqrt(x), 0.0)
    with np.errstate(all="ignore"):
        assert fg.grad(f)(0.0) == 0.0
        assert fg.jit(fg.grad(f))(0.0) == 0.0
        assert fg.grad(fg.grad(f))(4.0) == pytest.approx(-0.25 * 4.0 ** -1.5)
        assert fg.jvp(f, (0.0,), (1.0,))[1] == 0.0


def test_nonzero_cotangents_keep_ieee_results():
    """Only exact zeros are masked: a real inf derivative still shows."""
    with np.errstate(all="ignore"):
        assert np.isposinf(fg.grad(fnp.sqrt)(0.0))
        assert np.isnan(fg.grad(lambda x: fnp.sqrt(x) * 0.0 + fnp.log(x) * np.nan)(1.0))


def test_opt_out_restores_nan():
    code = ("import numpy as np, funcgrad as fg, funcgrad.numpy as fnp\n"
            "np.seterr(all='ignore')\n"
            "print(fg.grad(lambda x: fnp.where(x > 0, fnp.sqrt(x), 0.0))(0.0))\n")
    env = dict(os.environ, FUNCGRAD_STRONG_ZERO="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "nan"


def test_second_derivatives_through_cotangents_that_cross_zero_stay_exact():
    """A cotangent that is 0 at a point but not around it (y**2 at y = 0) is a removable zero:
    the rule only replaces non-finite values, so d2/dx2 of 1 - x**2/6 + x**4/120 at 0 is -1/3."""
    f = lambda x: 1.0 - x * x / 6.0 + (x * x) * (x * x) / 120.0
    for d2 in (fg.grad(fg.grad(f)), fg.hessian(f), fg.jit(fg.grad(fg.grad(f)))):
        assert d2(0.0) == pytest.approx(-1.0 / 3.0, rel=1e-14)
    assert fg.grad(fg.grad(fnp.sinc))(0.0) == pytest.approx(-np.pi ** 2 / 3, rel=1e-12)
