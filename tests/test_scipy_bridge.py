"""fg.scipy: SciPy's optimizers with compiled derivatives give SciPy's own results (given the
exact derivatives, SciPy takes the same steps); fg.flatten_util.ravel_pytree round trips."""
import numpy as np
import pytest
import scipy.optimize as so

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.flatten_util import ravel_pytree


def rosen(x):
    return fnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


@pytest.mark.parametrize("method", ["L-BFGS-B", "BFGS", "CG", "Newton-CG", "trust-ncg",
                                    "trust-krylov", "Nelder-Mead"])
def test_minimize_takes_scipys_steps_with_exact_derivatives(method):
    """The same iterations as SciPy given the analytic derivatives, except for CG, whose
    trajectory is sensitive to last-bit differences in the gradient: it must reach the same
    minimum."""
    x0 = np.linspace(-1.2, 1.1, 6)
    ours = fg.scipy.minimize(rosen, x0, method=method)
    uses_jac = method != "Nelder-Mead"
    hessp = so.rosen_hess_prod if method in ("Newton-CG", "trust-ncg", "trust-krylov") else None
    ref = so.minimize(so.rosen, x0, method=method, jac=so.rosen_der if uses_jac else None,
                      hessp=hessp)
    assert ours.success and ref.success
    if method == "CG":
        np.testing.assert_allclose(ours.x, np.ones(6), atol=1e-5)
        return
    assert ours.nit == ref.nit, (ours.nit, ref.nit)
    np.testing.assert_allclose(ours.x, ref.x, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ours.fun, ref.fun, atol=1e-10)


def test_minimize_pytree_args_and_bounds():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = (X @ np.array([1.0, -2.0, 0.5]) > 0).astype(float)

    def loss(p, X, y, lam):
        z = X @ p["w"] + p["b"]
        return fnp.mean(fnp.logaddexp(0.0, z) - y * z) + lam * fnp.sum(p["w"] ** 2)

    res = fg.scipy.minimize(loss, {"w": np.zeros(3), "b": 0.0}, args=(X, y, 0.01))
    assert res.success and set(res.x) == {"w", "b"} and res.x["w"].shape == (3,)
    grad = fg.grad(loss)(res.x, X, y, 0.01)
    assert np.max(np.abs(grad["w"])) < 1e-4 and abs(grad["b"]) < 1e-4
    assert np.allclose(res.jac["w"], grad["w"], atol=1e-6)
    bounded = fg.scipy.minimize(loss, {"w": np.zeros(3), "b": 0.0}, args=(X, y, 0.01),
                                bounds=[(-0.5, 0.5)] * 3 + [(None, None)])
    assert np.all(np.abs(bounded.x["w"]) <= 0.5 + 1e-12) and np.any(np.abs(bounded.x["w"]) > 0.49)
    with pytest.raises(TypeError, match="computes jac itself"):
        fg.scipy.minimize(rosen, np.zeros(3), jac=so.rosen_der)


def test_least_squares_curve_fit_matches_scipy():
    t = np.linspace(0, 3, 30)
    y = 2.0 * np.exp(-1.3 * t) + 0.01 * np.sin(7 * t)

    def resid(p, t, y):
        return p["a"] * fnp.exp(-p["k"] * t) - y
    ours = fg.scipy.least_squares(resid, {"a": 1.0, "k": 0.5}, args=(t, y))
    ref = so.least_squares(lambda q: q[0] * np.exp(-q[1] * t) - y, [1.0, 0.5],
                           jac=lambda q: np.stack([np.exp(-q[1] * t),
                                                   -q[0] * t * np.exp(-q[1] * t)], axis=1))
    np.testing.assert_allclose([ours.x["a"], ours.x["k"]], ref.x, rtol=1e-10)
    assert ours.nfev == ref.nfev


def test_ravel_pytree_round_trips_eagerly_and_traced():
    tree = {"w": np.arange(6.0).reshape(2, 3), "b": np.float32(0.5), "n": (np.ones(2), 3.0)}
    flat, unravel = ravel_pytree(tree)
    assert flat.shape == (10,) and flat.dtype == np.float64
    back = unravel(flat)
    assert back["w"].shape == (2, 3) and back["b"].dtype == np.float32
    np.testing.assert_array_equal(back["w"], tree["w"])
    g = fg.grad(lambda v: fnp.sum(unravel(v)["w"] ** 2) + unravel(v)["n"][1])(flat)
    np.testing.assert_array_equal(g, np.concatenate([[0.0], [0, 0], [1.0], 2 * np.arange(6.0)]))
    with pytest.raises(ValueError, match="length 10"):
        unravel(np.zeros(3))
