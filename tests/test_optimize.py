"""fg.optimize.minimize: compiled L-BFGS / BFGS / gradient descent against SciPy's iteration
counts and solutions (Rosenbrock, logistic regression, a bounded problem), the per-iteration
history, and implicit differentiation of the minimiser with respect to args."""
import numpy as np
import pytest
import scipy.optimize as so

import funcgrad as fg
import funcgrad.numpy as fnp


def rosen(x):
    return fnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosen_start(n):
    x0 = np.empty(n)
    x0[::2], x0[1::2] = -1.2, 1.0
    return x0


@pytest.mark.parametrize("n", [2, 100])
def test_lbfgs_matches_scipy_on_rosenbrock(n):
    x0 = rosen_start(n)
    ours = fg.optimize.minimize(rosen, x0, method="lbfgs", history=True)
    ref = so.minimize(so.rosen, x0, jac=so.rosen_der, method="L-BFGS-B")
    assert ours.success and ref.success, ours.message
    assert abs(ours.nit - ref.nit) <= 0.1 * ref.nit, (ours.nit, ref.nit)
    np.testing.assert_allclose(ours.x, np.ones(n), atol=1e-4)
    assert ours.fun < 1e-8
    h = ours.history
    assert h["fun"].shape == (ours.nit + 1,) and h["fun"][0] == so.rosen(x0)
    assert np.all(np.diff(h["fun"]) <= 0)                 # every accepted step lowers f
    np.testing.assert_allclose(h["fun"][-1], ours.fun)


@pytest.mark.parametrize("n", [2, 100])
def test_newton_cg_matches_scipy_on_rosenbrock(n):
    x0 = rosen_start(n)
    ours = fg.optimize.minimize(rosen, x0, method="newton-cg")
    ref = so.minimize(so.rosen, x0, jac=so.rosen_der, hessp=so.rosen_hess_prod,
                      method="Newton-CG")
    assert ours.success and ref.success, ours.message
    assert abs(ours.nit - ref.nit) <= 0.15 * ref.nit, (ours.nit, ref.nit)
    assert abs(ours.nhev - ref.nhev) <= 0.15 * ref.nhev, (ours.nhev, ref.nhev)
    # SciPy's stopping test (the step's 1-norm) is loose: both stop near, not at, x = 1
    assert ours.fun <= max(1e-8, 10 * ref.fun) and np.max(np.abs(ours.x - 1)) < 0.05


def test_newton_cg_on_a_quadratic_takes_scipys_inexact_newton_steps():
    A = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 2.0]])
    b = np.array([1.0, -2.0, 0.5])
    res = fg.optimize.minimize(lambda x: 0.5 * x @ A @ x - b @ x, np.zeros(3),
                               method="newton-cg", options={"gtol": 1e-10})
    ref = so.minimize(lambda x: 0.5 * x @ A @ x - b @ x, np.zeros(3), jac=lambda x: A @ x - b,
                      hessp=lambda x, p: A @ p, method="Newton-CG", options={"xtol": 1e-12})
    # CG stops at a residual of min(0.5, sqrt|g|) |g|: several inexact steps, as in SciPy
    assert res.success and abs(res.nit - ref.nit) <= 1 and abs(res.nhev - ref.nhev) <= 1, res
    np.testing.assert_allclose(res.x, np.linalg.solve(A, b), rtol=1e-8)
    with pytest.raises(ValueError, match="takes no bounds"):
        fg.optimize.minimize(rosen, np.zeros(2), method="newton-cg", bounds=[(0, 1)] * 2)


def test_bfgs_and_gd():
    x0 = rosen_start(2)
    ours = fg.optimize.minimize(rosen, x0, method="bfgs")
    ref = so.minimize(so.rosen, x0, jac=so.rosen_der, method="BFGS")
    assert ours.success and abs(ours.nit - ref.nit) <= 0.15 * ref.nit, (ours.nit, ref.nit)
    np.testing.assert_allclose(ours.x, np.ones(2), atol=1e-4)
    A = np.array([[3.0, 0.5], [0.5, 1.0]])
    gd = fg.optimize.minimize(lambda x: 0.5 * x @ A @ x - x[0], np.zeros(2), method="gd",
                              tol=1e-7)
    np.testing.assert_allclose(gd.x, np.linalg.solve(A, [1.0, 0.0]), atol=1e-6)
    assert gd.status == 1 and gd.nfev >= gd.nit


def logistic(w, X, y, lam):
    z = X @ w
    return fnp.mean(fnp.logaddexp(0.0, z) - y * z) + lam * fnp.sum(w * w)


def test_logistic_regression_pytree_args_agree_with_scipy():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 5))
    y = (X @ np.arange(1.0, 6.0) + rng.normal(size=200) > 0).astype(float)
    ours = fg.optimize.minimize(logistic, np.zeros(5), args=(X, y, 1e-3))
    ref = so.minimize(lambda w: float(logistic(w, X, y, 1e-3)), np.zeros(5),
                      jac=lambda w: fg.grad(logistic)(w, X, y, 1e-3), method="L-BFGS-B")
    assert abs(ours.nit - ref.nit) <= max(2, 0.1 * ref.nit), (ours.nit, ref.nit)
    assert ours.fun <= ref.fun + 1e-9 and np.max(np.abs(ours.jac)) <= 1e-5
    tight = fg.optimize.minimize(logistic, np.zeros(5), args=(X, y, 1e-3), tol=1e-10,
                                 options={"ftol": 0.0})
    ref = so.minimize(lambda w: float(logistic(w, X, y, 1e-3)), np.zeros(5),
                      jac=lambda w: fg.grad(logistic)(w, X, y, 1e-3), method="L-BFGS-B",
                      options={"gtol": 1e-10, "ftol": 0.0})
    np.testing.assert_allclose(tight.x, ref.x, rtol=1e-7)


def test_bounds_by_projection_reach_l_bfgs_b_solution():
    c = np.array([2.0, -3.0, 0.5, 0.2])
    f = lambda x: fnp.sum((x - c) ** 2) + 0.5 * fnp.sum(x[1:] * x[:-1])
    bounds = [(-1.0, 1.0), (-1.0, 1.0), (0.0, None), (None, 0.1)]
    ours = fg.optimize.minimize(f, np.zeros(4), bounds=bounds, tol=1e-8, options={"ftol": 0.0})
    ref = so.minimize(lambda x: float(f(x)), np.zeros(4), jac=lambda x: fg.grad(f)(x),
                      bounds=bounds, method="L-BFGS-B", options={"gtol": 1e-10, "ftol": 0.0})
    assert ours.success, ours.message
    np.testing.assert_allclose(ours.x, ref.x, atol=1e-7)
    assert ours.x[0] == 1.0 and ours.x[1] == -1.0          # held at the bounds exactly


def test_minimizer_is_differentiated_implicitly_with_respect_to_args():
    A = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 2.0]])

    def quad(x, b):
        return 0.5 * x @ A @ x - b @ x
    xstar = lambda b: fg.optimize.minimize(quad, np.zeros(3), args=(b,), tol=1e-12).x
    b = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(fg.jacrev(xstar)(b), np.linalg.inv(A), rtol=1e-9, atol=1e-12)

    def f(x, a):        # separable: 2 (x - a) + 0.4 x^3 = 0, so dx/da = 2 / (2 + 1.2 x^2)
        return fnp.sum((x - a) ** 2) + 0.1 * fnp.sum(x ** 4)
    solve = lambda a: fg.optimize.minimize(f, np.zeros(3), args=(a,), tol=1e-12,
                                           options={"ftol": 0.0}).x
    a = np.array([0.5, -1.0, 2.0])
    x = solve(a)
    np.testing.assert_allclose(2 * (x - a) + 0.4 * x ** 3, 0, atol=1e-8)
    loss = lambda a: fnp.sum(solve(a) ** 2)
    np.testing.assert_allclose(fg.grad(loss)(a), 2 * x * 2 / (2 + 1.2 * x ** 2), rtol=1e-8)


def test_bad_arguments():
    with pytest.raises(ValueError, match="method must be one of"):
        fg.optimize.minimize(rosen, np.zeros(2), method="simplex")
    with pytest.raises(ValueError, match="bounds has 1 pairs for 2"):
        fg.optimize.minimize(rosen, np.zeros(2), bounds=[(0, 1)])
    with pytest.raises(TypeError, match="unknown options"):
        fg.optimize.minimize(rosen, np.zeros(2), options={"gtoll": 1})


@pytest.mark.parametrize("method", ["newton", "broyden"])
def test_root_finds_cube_roots_and_differentiates_them_implicitly(method):
    a = np.array([2.0, 3.0, 5.0])
    F = lambda x, a: x ** 3 - a + 0.1 * fnp.roll(x, 1)       # coupled, so J is not diagonal
    sol = fg.optimize.root(F, np.ones(3), args=(a,), method=method, history=True)
    ref = so.root(lambda x: x ** 3 - a + 0.1 * np.roll(x, 1), np.ones(3), tol=1e-12)
    assert sol.success and sol.nit < 30, sol.message
    np.testing.assert_allclose(sol.x, ref.x, rtol=1e-10)
    fnorm = sol.history["fnorm"]
    assert fnorm.shape == (sol.nit + 1,) and fnorm[-1] <= 1e-10 < fnorm[-2]
    np.testing.assert_allclose(fnorm[0], np.max(np.abs(F(np.ones(3), a))))
    J = fg.jacfwd(lambda x: F(x, a))(sol.x)
    dx_da = fg.jacrev(lambda a: fg.optimize.root(F, np.ones(3), args=(a,), method=method,
                                                 history=True).x)(a)
    np.testing.assert_allclose(dx_da, np.linalg.inv(J), rtol=1e-8, atol=1e-12)   # -J^-1 dF/da


@pytest.mark.parametrize("method", ["lm", "gauss-newton"])
def test_least_squares_curve_fit_agrees_with_scipy_and_is_differentiable(method):
    t = np.linspace(0, 3, 30)
    y = 2.0 * np.exp(-1.3 * t) + 0.01 * np.sin(7 * t)
    res = lambda p, t, y: p[0] * fnp.exp(-p[1] * t) - y
    ours = fg.optimize.least_squares(res, np.array([1.0, 0.5]), args=(t, y), method=method,
                                     history=True)
    ref = so.least_squares(lambda p: p[0] * np.exp(-p[1] * t) - y, [1.0, 0.5], method="lm",
                           xtol=1e-12, ftol=1e-12, gtol=1e-12)
    assert ours.success, ours.message
    np.testing.assert_allclose(ours.x, ref.x, rtol=1e-7)
    np.testing.assert_allclose(ours.cost, ref.cost, rtol=1e-10)
    cost = ours.history["cost"]
    assert cost.shape == (ours.nfev,) and np.all(np.diff(cost) <= 0)   # only accepted steps
    np.testing.assert_allclose([cost[0], cost[-1]],
                               [0.5 * np.sum((1.0 * np.exp(-0.5 * t) - y) ** 2), ours.cost])
    fit = lambda y: fg.optimize.least_squares(res, np.array([1.0, 0.5]), args=(t, y),
                                              method=method, ftol=1e-14, xtol=1e-14,
                                              gtol=1e-14).x
    dx_dy = fg.jacrev(fit)(y)
    k, eps = 4, 1e-4
    e = np.zeros_like(y)
    e[k] = eps
    fd = (fit(y + e) - fit(y - e)) / (2 * eps)
    np.testing.assert_allclose(dx_dy[:, k], fd, rtol=1e-5, atol=1e-9)


def test_root_and_least_squares_refuse_unknown_methods():
    with pytest.raises(ValueError, match="'newton' or 'broyden'"):
        fg.optimize.root(lambda x: x, np.ones(2), method="hybr")
    with pytest.raises(ValueError, match="'lm' or 'gauss-newton'"):
        fg.optimize.least_squares(lambda x: x, np.ones(2), method="trf")


def test_repeated_calls_reuse_the_compiled_loop_but_see_changed_state():
    """The runner is reused across calls (no retrace), also by a fresh but equal lambda, yet
    a captured array mutated in place gives the new answer, as the guards of tiering see it."""
    from funcgrad.optimize import runners
    runners.clear()
    c = np.array([1.0, 2.0])

    def f(x):
        return fnp.sum((x - c) ** 2) + 0.01 * fnp.sum(x ** 4)
    first = fg.optimize.minimize(f, np.zeros(2)).x
    ((_, run),) = runners.runners("minimize")
    again = fg.optimize.minimize(f, np.zeros(2)).x
    np.testing.assert_array_equal(first, again)
    assert [r for _, r in runners.runners("minimize")] == [run]          # reused
    fresh = [fg.optimize.minimize(lambda x: f(x) + 0.0, np.zeros(2)).x for _ in range(3)]
    assert len(runners.runners("minimize")) == 2                          # one for the lambdas
    np.testing.assert_array_equal(fresh[0], fresh[2])
    c[:] = [-1.0, 3.0]                                   # in place
    moved = fg.optimize.minimize(f, np.zeros(2)).x
    assert moved[0] < 0 < first[0] and moved[1] > first[1]
    assert runners.runners("minimize")[-1][1] is not run                  # rebuilt
    roots = [fg.optimize.root(lambda x: x ** 3 - c, np.ones(2)).x for _ in range(2)]
    np.testing.assert_allclose(roots[0] ** 3, c, rtol=1e-10)
