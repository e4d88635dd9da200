"""Regressions of issue 28 in the libraries on top of the engine (fg.optim, fg.optimize,
fg.scipy, fg.odeint, fg.dask): dtypes of gradients and optimizer states, implicit derivatives
that do not hold (no convergence, active bounds), integer starting points, ODE tolerances and
step limits, empty Dask chunks, trust-constr, lu_solve's pivots, Student's t at large df; and
the class test of every entry point against SciPy on integer, float32, 0-d and pytree inputs."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

OPTIMIZERS = ["sgd", "adam", "adamw", "rmsprop", "adagrad", "lion"]


# ---- 1. gradients keep their primal's dtype; optimizer states keep theirs -------------------

def test_gradients_have_the_dtype_of_their_primal():
    d = np.arange(3.0)                                    # float64 data
    f = lambda x: fnp.sum((x * d) ** 2)
    x = np.ones(3, np.float32)
    assert fg.grad(f)(x).dtype == np.float32
    assert fg.value_and_grad(f)(x)[1].dtype == np.float32
    assert fg.jit(fg.grad(f))(x).dtype == np.float32
    assert fg.vjp(lambda x: x * d, x)[1](np.ones(3))[0].dtype == np.float32
    assert fg.grad(lambda z: fnp.sum(fnp.abs(z * d) ** 2))(np.ones(3, np.complex64)).dtype \
        == np.complex64


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_updates_and_states_keep_float32(name):
    opt = getattr(fg.optim, name)(0.01)
    params = {"b": np.zeros(2, np.float32)}
    updates, state = opt.update({"b": np.ones(2, np.float32)}, opt.init(params), params)
    assert updates["b"].dtype == np.float32
    before = fg.tree_util.tree_leaves(opt.init(params))
    after = fg.tree_util.tree_leaves(state)
    assert [np.asarray(a).dtype for a in after] == [np.asarray(b).dtype for b in before]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_fit_with_float32_params_and_float64_data(name):
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = X @ np.array([2.0, -1.0])
    params = {"w": np.zeros(2, np.float32), "b": np.zeros(2, np.float32)}
    loss = lambda p, X, y: fnp.mean((X @ p["w"] + p["b"].sum() - y) ** 2)
    res = fg.optim.fit(loss, params, getattr(fg.optim, name)(0.01), steps=3, data=(X, y))
    assert {k: v.dtype for k, v in res.params.items()} == {"w": np.float32, "b": np.float32}
    # the same steps by hand, in NumPy
    opt, p = getattr(fg.optim, name)(0.01), params
    s = opt.init(p)
    for _ in range(3):
        u, s = opt.update(fg.grad(loss)(p, X, y), s, p)
        p = fg.optim.apply_updates(p, u)
    for k in p:
        np.testing.assert_allclose(res.params[k], p[k], rtol=1e-5, atol=1e-6)
