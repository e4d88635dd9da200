"""Classic functions against closed forms, and plain numpy vs funcgrad.numpy."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from conftest import check_grads, rand


def test_issue_example_chain_rule():
    # y = x**2, loss = (y - 4)**2  =>  dloss/dx = 4x(x**2 - 4)
    loss = lambda x: (x ** 2 - 4) ** 2
    for x in (-2.5, 0.0, 0.7, 3.0):
        assert np.isclose(fg.grad(loss)(x), 4 * x * (x ** 2 - 4))
        assert np.isclose(fg.grad(fg.grad(loss))(x), 12 * x ** 2 - 16)
    check_grads(loss, (1.3,), order=2)


@pytest.mark.parametrize("lib", [np, fnp], ids=["numpy", "funcgrad.numpy"])
def test_closed_forms(lib):
    x = rand((5,), seed=1)
    g = fg.grad(lambda x: lib.sum(lib.sin(x) * lib.exp(-x ** 2)))(x)
    np.testing.assert_allclose(g, np.cos(x) * np.exp(-x ** 2) - 2 * x * np.sin(x) * np.exp(-x ** 2))
    g = fg.grad(lambda x: lib.sum(lib.tanh(x)))(x)
    np.testing.assert_allclose(g, 1 - np.tanh(x) ** 2)
    A = rand((5, 5), seed=2)
    g = fg.grad(lambda x: x @ A @ x)(x)
    np.testing.assert_allclose(g, (A + A.T) @ x)


def rosenbrock(lib):
    return lambda x: lib.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosen_grad(x):
    g = np.zeros_like(x)
    g[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


def test_rosenbrock_closed_form_and_numpy_equivalence():
    x = rand((7,), seed=3)
    g_np = fg.grad(rosenbrock(np))(x)
    g_fnp = fg.grad(rosenbrock(fnp))(x)
    np.testing.assert_allclose(g_fnp, rosen_grad(x), rtol=1e-12)
    np.testing.assert_array_equal(g_np, g_fnp)
    check_grads(rosenbrock(fnp), (x,), order=2)


def test_softmax_cross_entropy_matches_closed_form():
    logits, labels = rand((4, 3), seed=4), np.array([0, 2, 1, 2])

    def loss(z):
        logp = z - fnp.logsumexp(z, axis=1, keepdims=True)
        return -fnp.mean(logp[np.arange(4), labels])
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    expected = (p - np.eye(3)[labels]) / 4
    np.testing.assert_allclose(fg.grad(loss)(logits), expected, rtol=1e-12)
    check_grads(loss, (logits,), order=2)
